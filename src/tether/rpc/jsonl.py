"""Strict JSON Lines framing: records end at LF and only at LF.

JSON strings may hold U+2028, U+2029, form feeds and other characters that generic line readers
(``str.splitlines``, Node's ``readline``) treat as line ends; splitting there would cut a record
in two. So both sides split the *bytes* on ``b"\\n"`` and drop one trailing ``\\r`` (a client on
CRLF). The client reads the server's lines without a limit (a ``get_messages`` answer can be
megabytes on one line); the server caps a command line (``tether.rpc.mode.MAX_LINE_BYTES``).
"""

from __future__ import annotations

from pydantic_core import PydanticSerializationError, to_json

from tether.wire import dumpb

OVERLONG = b"\n"
"""What ``LineSplitter`` gives in place of a line longer than its limit: no line holds an LF."""


class LineSplitter:
    """Feed byte chunks in any sizes; get back the complete lines (without the terminator).

    With a ``limit``, a line longer than that is given as ``OVERLONG``, once, as soon as it is
    too long, and its bytes are dropped as they come, to its end: memory stays at the limit."""

    __slots__ = ("_buffer", "_limit", "_skipping")

    def __init__(self, limit: int | None = None) -> None:
        self._buffer = bytearray()
        self._limit = limit
        self._skipping = False

    def feed(self, chunk: bytes) -> list[bytes]:
        if self._limit is not None and (self._skipping or len(self._buffer) + len(chunk) > self._limit):
            return self._feed_limited(chunk, self._limit)
        return self._feed(chunk)

    def _feed_limited(self, chunk: bytes, limit: int) -> list[bytes]:
        lines: list[bytes] = []
        if self._skipping:
            end = chunk.find(b"\n")
            if end < 0:
                return lines
            self._skipping = False
            chunk = chunk[end + 1 :]
        lines += (OVERLONG if len(line) > limit else line for line in self._feed(chunk))
        if len(self._buffer) > limit + 1:  # too long even without a CR at its end
            self._buffer.clear()
            self._skipping = True
            lines.append(OVERLONG)
        return lines

    def _feed(self, chunk: bytes) -> list[bytes]:
        if self._buffer:
            self._buffer += chunk
            if b"\n" not in chunk:
                return []
            chunk = bytes(self._buffer)
            self._buffer.clear()
        # With nothing buffered and the chunk ending at a line's end (one command per read, the
        # usual case), the lines are the chunk's own pieces: no copy through the buffer.
        if chunk.endswith(b"\n"):
            lines = chunk[:-1].split(b"\n")
        else:
            lines = chunk.split(b"\n")
            self._buffer += lines.pop()
        return lines if b"\r" not in chunk else [_strip_cr(line) for line in lines]

    def finish(self) -> bytes | None:
        """At end of input: the last line when it had no terminator, else ``None``."""
        if not self._buffer or self._skipping:
            return None
        line, self._buffer = _strip_cr(bytes(self._buffer)), bytearray()
        return OVERLONG if self._limit is not None and len(line) > self._limit else line


def _strip_cr(line: bytes) -> bytes:
    return line[:-1] if line.endswith(b"\r") else line


def encode_frame(frame: object) -> bytes:
    """One record: compact JSON (non-ASCII kept as UTF-8), then LF. ``tether.wire.dumpb``'s
    encoder called directly (its two calls are a tenth of a ``get_state``); a frame it cannot
    encode (a lone surrogate: no UTF-8 form) goes the way ``dumpb`` writes it (as U+FFFD)."""
    try:
        return to_json(frame, inf_nan_mode="null") + b"\n"
    except PydanticSerializationError:
        return dumpb(frame) + b"\n"
