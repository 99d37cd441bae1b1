"""``IdleWatch``: a stream's idle timeout with one timer per stream, not one per network read.

``asyncio.timeout`` around every read of a streaming body schedules a timer, pushes it on the
event loop's heap and cancels it again, for every chunk; the cancelled timers stay on the heap
until the loop sweeps it. With a thousand replies streaming, that was a timer object per chunk
for the garbage collector to walk and the heap to carry. The watch instead notes when the
current read began (a clock read per chunk) and keeps one timer per stream, armed for the
earliest moment the read in progress could time out; when it fires early (reads came and
went meanwhile) it re-arms for the read now in progress, or not at all when none is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


class IdleWatch:
    """Raise ``TimeoutError`` from a read that waited ``idle`` seconds (see the module docstring).

    Args:
        idle: Seconds a single read may wait for data.

    Use ``read`` for every read of the stream, then ``close`` (which drops the timer).
    """

    __slots__ = ("_handle", "_idle", "_loop", "_reader", "_since", "_tripped")

    def __init__(self, idle: float) -> None:
        self._idle = idle
        self._loop = asyncio.get_running_loop()
        self._handle: asyncio.TimerHandle | None = None
        self._reader: asyncio.Task[object] | None = None
        """The task waiting in ``read`` now, else ``None``."""
        self._since = 0.0
        self._tripped = False

    async def read(self, pending: Awaitable[T]) -> T:
        """``await pending``, cancelled with ``TimeoutError`` once it has waited ``idle`` seconds.

        Another cancellation of the reading task (an abort) stays a ``CancelledError``.
        """
        task = asyncio.current_task()
        assert task is not None, "IdleWatch.read runs in a task"
        cancelling = task.cancelling()
        self._since = self._loop.time()
        self._reader = task
        if self._handle is None:
            self._handle = self._loop.call_at(self._since + self._idle, self._check)
        try:
            return await pending
        except asyncio.CancelledError:
            if self._tripped and task.uncancel() <= cancelling:
                raise TimeoutError from None
            raise
        finally:
            self._reader = None
            self._tripped = False

    @property
    def seconds(self) -> float:
        """How long a read may wait."""
        return self._idle

    def close(self) -> None:
        """Drop the timer: the stream is over."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _check(self) -> None:
        self._handle = None
        reader = self._reader
        if reader is None:
            return  # no read in progress: the next one arms the timer again
        due = self._since + self._idle
        if self._loop.time() < due:
            self._handle = self._loop.call_at(due, self._check)
            return
        self._tripped = True
        reader.cancel()
