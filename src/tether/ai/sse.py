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


@dataclass(slots=True)
class SSEEvent:
    """One dispatched event: ``event`` is ``"message"`` unless an ``event:`` field named it.

    Not frozen: a frozen dataclass's ``__init__`` costs three times as much, once per event.
    """

    event: str
    data: str
    id: str | None = None


class SSEDecoder:
    """Stateful decoder of one SSE body."""

    __slots__ = ("_buffer", "_data", "_event", "_id", "_pending_cr")

    def __init__(self) -> None:
        self._buffer = b""
        self._pending_cr = False
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Add body bytes; return the events whose terminating blank line arrived."""
        if self._pending_cr:
            # The previous chunk ended with "\r": a "\n" starting this one belongs to that break.
            self._pending_cr = False
            if chunk.startswith(b"\n"):
                chunk = chunk[1:]
        buffer = self._buffer + chunk if self._buffer else chunk
        cut = max(buffer.rfind(b"\n"), buffer.rfind(b"\r"))
        if cut < 0:
            self._buffer = buffer
            return []
        self._buffer = buffer[cut + 1 :]
        if buffer[cut] == 13:  # b"\r"
            self._pending_cr = True
        # Line breaks are ASCII, so everything up to the last break is whole UTF-8 text. The break
        # is decoded with it: without it, the CR of a CRLF ending the piece would read as a break
        # of its own, and the empty "line" after it as the blank line that dispatches the event.
        text = buffer[: cut + 1].decode("utf-8", "replace")
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        lines.pop()  # what follows the last break: nothing
        return self._lines(lines)

    def flush(self) -> list[SSEEvent]:
        """End of body: a last line without a break is processed, an unterminated event dispatched.

        The standard drops an event whose blank line never came; we hand it over so the caller can
        decide (a recorded stream may lack the final blank line, a cut stream has invalid data).
        """
        events: list[SSEEvent] = []
        if self._buffer:
            rest, self._buffer = self._buffer, b""
            events = self._lines([rest.decode("utf-8", "replace")])
        if self._data:
            events.append(self._dispatch())
        return events

    def _lines(self, lines: list[str]) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        data = self._data
        for line in lines:
            if not line:
                if data:
                    events.append(self._dispatch())
                    data = self._data
                else:
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

    def _dispatch(self) -> SSEEvent:
        data = self._data
        event = SSEEvent(self._event or "message", data[0] if len(data) == 1 else "\n".join(data), self._id)
        self._data = []
        self._event = ""
        return event
