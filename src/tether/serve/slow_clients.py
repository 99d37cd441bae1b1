"""uvicorn's HTTP protocol with a deadline on a request's headers.

uvicorn closes a connection idle between requests (its keep-alive timeout), but waits for ever
for the headers of a request that has begun, or for the first request of a connection that
sends nothing: a client that opens connections and sends a header line now and then holds
each one, and a few thousand of them leave no file descriptor for anyone else (slowloris).
Every connection here must complete a request's headers within ``HEADER_SECONDS`` of the
connection, or of the request's first bytes after a response; it is closed otherwise. A
request whose headers came is not limited: a follow stream lasts as long as it is read.
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_SECONDS = 15.0
"""How long a connection may take to send a request's headers."""


class HeaderDeadline(H11Protocol):
    _deadline: asyncio.TimerHandle | None = None

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

    def _watch(self) -> None:
        """Armed while the client owes a request's headers (h11's ``IDLE``: none has begun, or
        one has begun and its headers have not all come), else not. Called on a connection and
        on data only: between a response and the next request uvicorn's keep-alive timeout
        rules."""
        owing = self.conn.their_state is h11.IDLE
        if owing and self._deadline is None:
            self._deadline = self.loop.call_later(HEADER_SECONDS, self._too_slow)
        elif not owing and self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()
