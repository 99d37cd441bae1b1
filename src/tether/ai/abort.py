"""Abort signals: the Python form of the web's ``AbortController``/``AbortSignal``.

A run, a model request and a tool call all share one signal, so a single ``abort()`` stops the
whole tree of work. Listeners are plain callbacks run synchronously inside ``abort()``; that is
what lets a stream cancel the exact ``await`` it is blocked on (see ``event_stream``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

Listener = Callable[[object], None]


class AbortSignal:
    """Read side: ``aborted``, ``reason``, callbacks and an awaitable ``wait()``."""

    __slots__ = ("_listeners", "aborted", "reason")

    def __init__(self) -> None:
        self.aborted = False
        self.reason: object = None
        self._listeners: list[Listener] = []

    def add_listener(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(reason)`` on abort (at once if already aborted); returns a remover."""
        if self.aborted:
            listener(self.reason)
            return lambda: None
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    async def wait(self) -> object:
        """Return the reason once the signal is aborted."""
        if self.aborted:
            return self.reason
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()

        def done(reason: object) -> None:
            if not future.done():
                future.set_result(reason)

        remove = self.add_listener(done)
        try:
            return await future
        finally:
            remove()

    def _fire(self, reason: object) -> None:
        if self.aborted:
            return
        self.aborted = True
        self.reason = reason
        listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener(reason)


class AbortController:
    """Write side: owns one ``signal`` and aborts it at most once."""

    __slots__ = ("signal",)

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: object = None) -> None:
        self.signal._fire("aborted" if reason is None else reason)  # pyright: ignore[reportPrivateUsage]
