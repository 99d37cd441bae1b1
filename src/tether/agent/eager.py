"""Starting a coroutine in the current task, as JavaScript starts an async function.

asyncio runs a coroutine only inside a task, and a new task takes its first step on a later pass
of the event loop. The reference starts each parallel tool call synchronously, and most calls of
an instant tool end right there; a task per call (and a pass of the loop to start them) was the
largest cost of the agent loop's parallel batches.

``start_eagerly`` steps a coroutine once, here, in a copy of the current context (as a task
would run it). Either it ended, or it is suspended and must be continued *by this same task*
(``Suspended.resume``): whatever its first step tied to the current task (``asyncio.timeout``,
an anyio cancel scope, ``asyncio.current_task()``) has to stay true, so it cannot move to a task
of its own. Python 3.12's eager tasks do the same with a new task object; 3.11 has none.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import types
from collections.abc import Coroutine, Generator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Suspended(Generic[T]):
    """A coroutine that suspended during its eager first step; only the task that started it may
    continue it (``resume``, or step by step from ``coro``, ``context`` and ``yielded``, as the
    abort grace does) or cancel it (``close``)."""

    __slots__ = ("context", "coro", "ended", "yielded")

    def __init__(self, coro: Coroutine[Any, Any, T], context: contextvars.Context, yielded: Any) -> None:
        self.coro = coro
        self.context = context
        self.yielded = yielded
        """What the coroutine handed its task when it suspended: a future to wait for, or ``None``."""
        self.ended = False

    @types.coroutine
    def resume(self) -> Generator[Any, Any, T]:
        """Run it to its end in the awaiting task, as if it had been awaited from the start: the
        task waits for what it yields, and what the task throws in (a cancellation) goes to it."""
        coro, run, yielded = self.coro, self.context.run, self.yielded
        try:
            while True:
                try:
                    sent = yield yielded
                except GeneratorExit:  # this awaitable is being closed: close the coroutine (as PEP 380)
                    run(coro.close)
                    raise
                except BaseException as exc:  # thrown into the task: the coroutine's to handle
                    yielded = run(coro.throw, exc)
                else:
                    yielded = run(coro.send, sent)
        except StopIteration as stop:
            self.ended = True
            return stop.value
        except BaseException:
            self.ended = True
            raise

    async def close(self) -> None:
        """Cancel it, if it has not ended, and let it unwind (its errors are of no interest)."""
        if self.ended:
            return
        self.ended = True
        try:
            self.yielded = self.context.run(self.coro.throw, asyncio.CancelledError())
        except (Exception, asyncio.CancelledError):  # it ended, by the cancellation or otherwise
            return
        self.ended = False
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await self.resume()


def start_eagerly(
    coro: Coroutine[Any, Any, None], context: contextvars.Context | None = None
) -> Suspended[None] | None:
    """Take ``coro``'s first step now: ``None`` if it ended, else the ``Suspended`` coroutine.
    What it raises propagates. It runs in ``context``, by default a copy of the current one.

    ``coro`` returns nothing (it puts its outcome where its caller looks): a coroutine that ends
    while stepped by ``send`` raises ``StopIteration``, whose traceback costs more than the whole
    step of an instant tool; ``next`` with a default ends it without an exception."""
    if context is None:
        context = contextvars.copy_context()
    yielded = context.run(next, coro.__await__(), _ENDED)
    if yielded is _ENDED:
        return None
    return Suspended(coro, context, yielded)


_ENDED: Any = object()
"""What ``next`` gives back for a coroutine that ended (it never yields this)."""
