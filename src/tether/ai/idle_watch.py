"""A request's idle timeout: one timer per request, moved lazily, for its headers and its body.

``asyncio.timeout_at`` around every network read cost ~4.4 µs a read (a ``Timeout``, a timer
handle scheduled, then cancelled and left in the event loop's heap), and one around the wait for
the response's headers cost another timer per request. Here the wait for the headers and every
read of the body only move ``deadline``; the one timer, when it fires before the deadline (data
came meanwhile), moves itself to it, and when the deadline has passed with a wait under way,
cancels the waiting task, which the waiter turns into its idle-timeout failure (``expired``). A
cancellation from elsewhere (an abort, the consumer's task cancelled) stays a cancellation, as it
does through ``asyncio.timeout``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")

TRICKLE_IDLES = 2
"""Idle timeouts a reply may go without giving the consumer an event while part of one keeps
arriving. Those bytes are progress (a large event, a final one repeating a generated image, comes
in many reads, each within the idle timeout of the last), but not without end: one event
trickling in a byte at a time, each just inside the idle timeout, held the run until the 64 MB
event cap (a byte every 299 s: centuries), as pings trickled in pieces did. Twice the idle
timeout is 10 minutes by default, far beyond any real event's arrival; a long answer is many
events, each of which moves the cap on."""


class IdleWatch:
    """The idle timeout of one request (``idle`` seconds), shared by the wait for its response's
    headers and the reads of its body; ``close`` once the request is over (or before a retry)."""

    __slots__ = ("_cancelling", "_fired", "_handle", "_loop", "cap", "deadline", "idle", "span", "task")

    def __init__(self, loop: asyncio.AbstractEventLoop, idle: float) -> None:
        self._loop = loop
        self.idle = idle
        self.span = idle * TRICKLE_IDLES
        now = loop.time()
        self.deadline = now + idle
        self.cap = now + self.span
        """The latest ``deadline`` bytes of an unfinished event may set: ``span`` after the last
        read that gave the consumer events (or the body's start)."""
        self.task: asyncio.Task[Any] | None = None
        """The task waiting, while one waits (``None`` between waits)."""
        self._cancelling = 0
        self._handle: asyncio.TimerHandle | None = None
        self._fired = False

    def restart(self) -> None:
        """Count ``idle`` seconds from now, and the trickle cap ``span`` (a wait for headers
        begins, the headers came, or a read gave the consumer events)."""
        now = self._loop.time()
        self.deadline = now + self.idle
        self.cap = now + self.span

    def trickled(self) -> None:
        """Bytes of an event still arriving: progress, up to the cap."""
        self.deadline = min(self._loop.time() + self.idle, self.cap)

    def trickled_out(self) -> bool:
        """Whether the deadline that passed was the cap (part of an event trickling in), not a
        silence."""
        return self.deadline >= self.cap

    def reading(self) -> None:
        """A wait is about to begin (in the current task)."""
        task = self.task = asyncio.current_task()
        assert task is not None
        self._cancelling = task.cancelling()
        if self._handle is None:
            self._handle = self._loop.call_at(self.deadline, self._check)

    async def wait(self, awaitable: Awaitable[T]) -> T:
        """``awaitable``'s result; ``TimeoutError`` when ``idle`` seconds pass first."""
        self.restart()
        self.reading()
        try:
            return await awaitable
        except asyncio.CancelledError:
            if self.expired():
                raise TimeoutError from None
            raise
        finally:
            self.task = None

    def _check(self) -> None:
        self._handle = None
        task = self.task
        if task is None:
            return  # between waits: the next wait sets the timer again
        if self._loop.time() < self.deadline:
            self._handle = self._loop.call_at(self.deadline, self._check)
            return
        self._fired = True
        task.cancel()

    def expired(self) -> bool:
        """In the waiting task, after its wait was cancelled: whether by this timer alone (the
        cancellation is then consumed, as ``asyncio.timeout`` consumes its own)."""
        if not self._fired:
            return False
        self._fired = False
        task = asyncio.current_task()
        assert task is not None
        return task.uncancel() <= self._cancelling

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
