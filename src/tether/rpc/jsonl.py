"""Strict JSON Lines framing: records end at LF and only at LF.

JSON strings may hold U+2028, U+2029, form feeds and other characters that generic line readers
(``str.splitlines``, Node's ``readline``) treat as line ends; splitting there would cut a record
in two. So both sides split the *bytes* on ``b"\\n"``, drop one trailing ``\\r`` (a client on
CRLF), and never buffer a limit: a ``get_messages`` answer can be megabytes on one line.
"""

from __future__ import annotations

import json

from pydantic_core import PydanticSerializationError

from tether.wire import dumpb


class LineSplitter:
    """Feed byte chunks in any sizes; get back the complete lines (without the terminator)."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> list[bytes]:
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
        if not self._buffer:
            return None
        line, self._buffer = bytes(self._buffer), bytearray()
        return _strip_cr(line)


def _strip_cr(line: bytes) -> bytes:
    return line[:-1] if line.endswith(b"\r") else line


def encode_frame(frame: object) -> bytes:
    """One record: compact JSON (non-ASCII kept as UTF-8), then LF. A lone surrogate (a file name
    that is not UTF-8, read by a tool) cannot be UTF-8: such a frame is sent ASCII-escaped, still
    JSON, rather than not at all."""
    try:
        return dumpb(frame) + b"\n"
    except PydanticSerializationError:
        from pydantic_core import to_jsonable_python

        return json.dumps(frame, separators=(",", ":"), default=to_jsonable_python).encode() + b"\n"
