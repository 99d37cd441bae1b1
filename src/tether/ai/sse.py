"""Incremental Server-Sent Events parser: bytes in, events out.

Providers stream their answers as SSE (https://html.spec.whatwg.org/multipage/server-sent-events.html).
``SSEDecoder.feed`` accepts the body in whatever pieces the socket delivers them, split anywhere,
also inside a UTF-8 sequence or between the ``\\r`` and ``\\n`` of a line break, and returns the
events completed by that piece. ``flush`` ends the body.

Why our own: it is the hot path of every model call. Working on whole chunks (one ``decode`` and one
``split`` per chunk, not per line or per byte) keeps it cheap; see ``bench/p1_sse_stream.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_EVENT_BYTES = 64 * 1024 * 1024
"""The longest event (or line) a body may send: far above any real one (a response's final event
repeating a generated image is a few MB), far below what would exhaust a machine's memory."""


_BOM = b"\xef\xbb\xbf"


class EventTooLarge(Exception):
    """A body's event (or line) grew past ``MAX_EVENT_BYTES`` without ending."""

    def __init__(self, size: int) -> None:
        super().__init__(f"one event grew past {MAX_EVENT_BYTES:,} bytes without ending ({size:,} so far)")


@dataclass(slots=True)
class SSEEvent:
    """One dispatched event: ``event`` is ``"message"`` unless an ``event:`` field named it.

    Not frozen: a frozen dataclass's ``__init__`` costs three times as much, once per event.
    """

    event: str
    data: str
    id: str | None = None


class SSEDecoder:
    """Stateful decoder of one SSE body.

    A body whose line or event grows past ``MAX_EVENT_BYTES`` without ending raises
    ``EventTooLarge``: a server sending one endless line (or endless ``data:`` lines without the
    blank line) would otherwise hold all of it in memory, however long it streams.
    """

    __slots__ = ("_data", "_event", "_held", "_held_size", "_id", "_open_size", "_skip")

    def __init__(self) -> None:
        self._held: list[bytes] = []
        """The pieces of the unfinished last line, kept apart: joining them on every read made a
        long line cost the square of its length (a 128 MB line: 107 s of CPU)."""
        self._held_size = 0
        self._open_size = 0
        """Bytes decoded since the event being built began (an estimate from above)."""
        self._skip: bytes | None = _BOM
        """What to drop if the next chunk starts with it: the byte order mark the standard strips
        at the body's start (kept, it hid the first line: "\ufeffdata:" is no field, and the
        first piece of an answer was lost without a word), or the "\n" of a "\r\n" cut in two."""
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Add body bytes; return the events whose terminating blank line arrived."""
        skip = self._skip
        if skip is not None and chunk:
            if len(chunk) < len(skip) and skip.startswith(chunk):  # the mark arriving in pieces
                self._skip = skip[len(chunk) :]
                return []
            self._skip = None
            if chunk.startswith(skip):
                chunk = chunk[len(skip) :]
        cut = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
        if cut < 0:
            if not chunk:
                return []
            self._held.append(chunk)
            self._held_size += len(chunk)
            if self._held_size + self._open_size > MAX_EVENT_BYTES:
                raise EventTooLarge(self._held_size + self._open_size)
            return []
        if chunk[cut] == 13 and cut == len(chunk) - 1:  # a "\n" starting the next chunk ends this "\r"
            self._skip = b"\n"
        held = self._held
        if held:
            if len(held) == 1:
                whole = held[0] + chunk[: cut + 1]
            else:
                held.append(chunk[: cut + 1])
                whole = b"".join(held)
        else:
            whole = chunk[: cut + 1]
        if cut + 1 < len(chunk):
            self._held = [chunk[cut + 1 :]]
            self._held_size = len(chunk) - cut - 1
        elif held:
            self._held = []
            self._held_size = 0
        # Line breaks are ASCII, so everything up to the last break is whole UTF-8 text. The break
        # is decoded with it: without it, the CR of a CRLF ending the piece would read as a break
        # of its own, and the empty "line" after it as the blank line that dispatches the event.
        text = whole.decode("utf-8", "replace")
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        events = self._text(text)
        if self._data:  # an event still open: it must not grow without end either
            # Its bytes are at most those since the last event dispatched.
            self._open_size = (0 if events else self._open_size) + len(whole)
            if self._open_size > MAX_EVENT_BYTES:
                raise EventTooLarge(self._open_size)
        else:
            self._open_size = 0
        return events

    def flush(self) -> list[SSEEvent]:
        """End of body: a last line without a break is processed, an unterminated event dispatched.

        The standard drops an event whose blank line never came; we hand it over so the caller can
        decide (a recorded stream may lack the final blank line, a cut stream has invalid data).
        """
        events: list[SSEEvent] = []
        if self._held:
            rest = b"".join(self._held)
            self._held = []
            self._held_size = 0
            events = self._lines([rest.decode("utf-8", "replace")])
        if self._data:
            events += self._lines([""])  # the blank line the body never sent
        return events

    def midway(self) -> bool:
        """Whether an event has begun and not ended (a comment line does not count)."""
        return bool(self._data) or (bool(self._held) and not self._held[0].startswith(b":"))

    def _text(self, text: str) -> list[SSEEvent]:
        """Whole lines (``text`` ends with a break) → the events they complete.

        Most bodies are nothing but events of one ``data: `` line each, so text that starts where
        an event starts is cut at its blank lines, and an event of one ``data: `` line is taken
        whole (a third of the line loop's cost); any other event (more lines, other fields,
        comments) and the lines after the last blank line go through the line loop.
        """
        events: list[SSEEvent] = []
        end = -1 if self._data or self._event else text.rfind("\n\n")
        if end >= 0:
            for block in text[:end].split("\n\n"):
                if block.startswith("data: ") and "\n" not in block:
                    events.append(SSEEvent("message", block[6:], self._id))
                else:
                    events += self._lines([*block.split("\n"), ""])
        rest = text[end + 2 :] if end >= 0 else text
        if rest:
            lines = rest.split("\n")
            lines.pop()  # what follows the last break: nothing
            events += self._lines(lines)
        return events

    def _lines(self, lines: list[str]) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        data = self._data
        for line in lines:
            if not line:  # the blank line that dispatches the event
                if data:
                    joined = data[0] if len(data) == 1 else "\n".join(data)
                    events.append(SSEEvent(self._event or "message", joined, self._id))
                    data = self._data = []
                self._event = ""
                continue
            if line.startswith("data:"):
                data.append(line[6:] if line.startswith(" ", 5) else line[5:])
                continue
            if line[0] == ":":
                continue  # comment, e.g. ": keep-alive" or ": OPENROUTER PROCESSING"
            field, colon, value = line.partition(":")
            if colon and value.startswith(" "):
                value = value[1:]
            if field == "event":
                self._event = value
            elif field == "data":
                data.append(value)
            elif field == "id" and "\0" not in value:
                self._id = value
            # "retry" and unknown fields are ignored: reconnection is the transport's business.
        return events
