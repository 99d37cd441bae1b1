"""The event bus between extensions (pi's ``pi.events``): one extension emits, others listen.

Extensions of a session share one bus; a channel is any name (pi's convention: ``myext:thing``).
``emit`` calls each listener in the order they subscribed, with the data as given (shared, not
copied: the bus is for extensions that agree on a shape). A listener that raises is reported
with its extension's name, like any failing hook, and the other listeners still run; an
``async`` listener runs as a task, so ``emit`` never waits for a listener and never raises.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

Listener = Callable[[Any], Awaitable[None] | None]


class EventBus:
    """The session's bus; ``report(extension, channel, error)`` hears of failing listeners."""

    def __init__(self) -> None:
        self._listeners: dict[str, list[tuple[str, Listener]]] = {}
        self._running: set[asyncio.Task[None]] = set()
        self.report: Callable[[str, str, BaseException], None] = lambda _name, _channel, _exc: None

    def on(self, extension: str, channel: str, listener: Listener) -> Callable[[], None]:
        entry = (extension, listener)
        self._listeners.setdefault(channel, []).append(entry)

        def unsubscribe() -> None:
            if entry in self._listeners.get(channel, []):
                self._listeners[channel].remove(entry)

        return unsubscribe

    def emit(self, channel: str, data: Any = None) -> None:
        for extension, listener in list(self._listeners.get(channel, [])):
            try:
                outcome = listener(data)
            except Exception as exc:
                self.report(extension, channel, exc)
                continue
            if inspect.isawaitable(outcome):
                try:
                    loop = asyncio.get_running_loop()
                except RuntimeError:  # emitted outside the event loop: only plain listeners run
                    getattr(outcome, "close", lambda: None)()
                    self.report(
                        extension, channel, RuntimeError("an async listener needs a running event loop")
                    )
                    continue
                task = loop.create_task(self._awaited(extension, channel, outcome))
                self._running.add(task)
                task.add_done_callback(self._running.discard)

    async def _awaited(self, extension: str, channel: str, outcome: Awaitable[None]) -> None:
        try:
            await outcome
        except Exception as exc:
            self.report(extension, channel, exc)


class ExtensionEvents:
    """``api.events``: the bus as one extension uses it (its listeners carry its name)."""

    def __init__(self, bus: EventBus, extension: str) -> None:
        self._bus = bus
        self._extension = extension

    def on(self, channel: str, listener: Listener) -> Callable[[], None]:
        """Call ``listener(data)`` for each ``emit`` on ``channel``; returns the unsubscribe."""
        if not channel or not callable(listener):
            raise ValueError(f"events.on needs a channel name and a function, got {channel!r}")
        return self._bus.on(self._extension, channel, listener)

    def emit(self, channel: str, data: Any = None) -> None:
        """Send ``data`` to every listener of ``channel`` (none: nothing happens)."""
        self._bus.emit(channel, data)
