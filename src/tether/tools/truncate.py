"""Output budgets: what a tool shows the model when the real output is too big.

A model's context is the scarcest resource in a run, so every tool bounds what it returns by
lines *and* bytes, and says plainly what it left out and how to get the rest. File reads and
searches keep the beginning (and say which offset continues); command output goes through
``OutputBuffer``, which keeps the beginning *and* the end of a stream of unknown length (what
ran is at the top, the error that matters at the bottom) in bounded memory, however much the
command prints.
"""

from __future__ import annotations

import codecs
import re
from collections import deque

MAX_LINES = 2000
"""Default line budget of one tool result."""
MAX_BYTES = 50 * 1024
"""Default byte budget of one tool result (UTF-8)."""
MAX_LINE_CHARS = 2000
"""Longer lines are cut: one minified line must not eat the whole budget."""

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def strip_ansi(text: str) -> str:
    """Drop terminal escape sequences (colours, cursor moves): noise to a model."""
    return _ANSI.sub("", text)


def shorten_line(line: str, limit: int = MAX_LINE_CHARS, *, more: int = 0) -> str:
    """``line`` cut to ``limit`` characters with a note; ``more``: characters already left out."""
    if len(line) <= limit and not more:
        return line
    return f"{line[:limit]}… [{len(line) - limit + more} more characters]"


class OutputBuffer:
    """Collects a byte stream, keeping about its first and last ``max_bytes // 2`` characters.

    Decoding is incremental (a UTF-8 sequence split across reads is not garbled) and memory is
    bounded: the middle of a huge output is counted, not stored. Bytes that are not UTF-8 read
    as U+FFFD, as pi's ``TextDecoder`` reads them, not as the ``\\xff`` escapes of file names
    (``tether.wire.file_names``): an escape is there so the model can hand a name back, while
    output is arbitrary bytes (a binary, Latin-1 text) that four characters a byte would only
    lengthen, and that a command's own ``\\xff`` text would make ambiguous. The bytes themselves
    are what ``od -c`` shows, or the spool file of a long output (``fullOutputPath``); a name
    that is not UTF-8 is shown escaped, so it can be named again, by ``ls`` and ``find``.
    """

    def __init__(self, max_bytes: int = MAX_BYTES, max_lines: int = MAX_LINES) -> None:
        self._half_bytes = max_bytes // 2
        self._half_lines = max_lines // 2
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._head: list[str] = []
        self._head_size = 0
        self._head_full = False
        self._tail: deque[str] = deque()
        self._tail_size = 0
        self.total_bytes = 0
        self.dropped_chars = 0

    def feed(self, data: bytes) -> str:
        """Add raw output; returns the newly decoded text (for live progress)."""
        self.total_bytes += len(data)
        text = self._decoder.decode(data)
        self._add(text)
        return text

    def finish(self) -> str:
        text = self._decoder.decode(b"", final=True)
        self._add(text)
        return text

    @property
    def truncated(self) -> bool:
        return self.dropped_chars > 0 or self._line_count() > 2 * self._half_lines

    def text(self) -> str:
        """The output as the model should see it: head, an omission note, tail."""
        head = _clean("".join(self._head))
        tail = _clean("".join(self._tail))
        if self.dropped_chars == 0:
            whole = head + tail
            lines = whole.removesuffix("\n").split("\n")
            if len(lines) <= 2 * self._half_lines:
                return whole
            head_lines, tail_lines = lines[: self._half_lines], lines[len(lines) - self._half_lines :]
        else:
            head_lines = head.split("\n")[: self._half_lines]
            tail_lines = tail.removesuffix("\n").split("\n")[1:]  # the first tail line starts mid-line
            tail_lines = tail_lines[max(0, len(tail_lines) - self._half_lines) :]
        note = (
            f"[… output truncated: {self.total_bytes} bytes in total; "
            f"the first {len(head_lines)} and last {len(tail_lines)} lines are shown …]"
        )
        ending = "\n" if tail.endswith("\n") or (not tail and head.endswith("\n")) else ""
        return "\n".join([*head_lines, note, *tail_lines]) + ending

    def _line_count(self) -> int:
        return sum(part.count("\n") for part in self._head) + sum(part.count("\n") for part in self._tail)

    def _add(self, text: str) -> None:
        if not text:
            return
        if not self._head_full:
            room = self._half_bytes - self._head_size
            take = text[:room]
            self._head.append(take)
            self._head_size += len(take)
            text = text[room:]
            if self._head_size >= self._half_bytes:
                self._head_full = True
            if not text:
                return
        self._tail.append(text)
        self._tail_size += len(text)
        while self._tail and self._tail_size - len(self._tail[0]) >= self._half_bytes:
            dropped = self._tail.popleft()
            self._tail_size -= len(dropped)
            self.dropped_chars += len(dropped)
        if self._tail_size > 2 * self._half_bytes and self._tail:
            first = self._tail.popleft()
            cut = self._tail_size - self._half_bytes
            self.dropped_chars += cut
            self._tail.appendleft(first[cut:])
            self._tail_size -= cut


def _clean(text: str) -> str:
    return "\n".join(shorten_line(line) for line in strip_ansi(text).replace("\r\n", "\n").split("\n"))
