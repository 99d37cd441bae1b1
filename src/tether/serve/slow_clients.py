"""uvicorn's HTTP protocol with deadlines on a request's headers and on its body.

uvicorn closes a connection idle between requests (its keep-alive timeout), but waits for ever
for the headers of a request that has begun, or for the first request of a connection that
sends nothing: a client that opens connections and sends a header line now and then holds
each one, and a few thousand of them leave no file descriptor for anyone else (slowloris).
Every connection here must complete a request's headers within ``HEADER_SECONDS`` of the
connection, or of the request's first bytes after a response, and its body (the API's bodies
are small JSON) within ``BODY_SECONDS`` of its headers — a total, not an idle time, so a body
trickled a byte at a time is cut off too; it is closed otherwise. A request whose headers and
body came is not limited: a follow stream lasts as long as it is read.

At shutdown a connection whose response is still going out (a follow stream: the only response
that does not end by itself) is closed at once. uvicorn only marks it to close once the response
ends, waits for it (``timeout_graceful_shutdown``) and then cancels the application with a
traceback on stderr for each follower; a follower resumes from its ``Last-Event-ID`` anyway.
"""

from __future__ import annotations

import asyncio
from typing import cast

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle

HEADER_SECONDS = 15.0
"""How long a connection may take to send a request's headers."""
BODY_SECONDS = 30.0
"""How long a request may take to send its body once its headers came."""


class HeaderDeadline(H11Protocol):
    _deadline: asyncio.TimerHandle | None = None
    _owed: type[h11.IDLE] | type[h11.SEND_BODY] | None = None
    """What the armed deadline waits for: headers (``IDLE``) or a body (``SEND_BODY``)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._watch()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        super().connection_lost(exc)

    def shutdown(self) -> None:
        """Close a connection whose response is still being sent: the application hears the
        client left and ends the stream. With output still buffered for a client that is not
        reading, close would wait for it to be sent: such a connection is cut (``abort``)."""
        cycle = cast(RequestResponseCycle | None, self.cycle)  # None before a first request
        if cycle is None or not cycle.response_started or cycle.response_complete:
            super().shutdown()
        elif self.transport.get_write_buffer_size():
            self.transport.abort()
        else:
            self.transport.close()

    def _watch(self) -> None:
        """Armed while the client owes a request's headers (h11's ``IDLE``: none has begun, or
        one has begun and its headers have not all come) or its body (``SEND_BODY``), once per
        thing owed, else not. Called on a connection and on data only: between a response and
        the next request uvicorn's keep-alive timeout rules."""
        state = self.conn.their_state
        owed = state if state is h11.IDLE or state is h11.SEND_BODY else None
        if owed is self._owed:
            return
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._owed = owed
        if owed is not None:
            seconds = HEADER_SECONDS if owed is h11.IDLE else BODY_SECONDS
            self._deadline = self.loop.call_later(seconds, self._too_slow)

    def _too_slow(self) -> None:
        self._deadline = None
        if self.conn.their_state is self._owed and not self.transport.is_closing():
            self.transport.close()
