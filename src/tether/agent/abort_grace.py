"""Continuing a tool call that suspended, but not for ever once the run is aborted
(``until_abort_grace``).

An aborted run must end in bounded time whatever its tools do with the signal: a tool still
running ``ABORT_GRACE`` after the abort is left behind and its call ends with an error result.
Leaving a coroutine behind is what a task per call gave for free, at the price of a task, two
passes of the event loop and a listener per call even for the instant tools most calls are
(P2 with a signal cost 1.8x the instructions of P2 without). Here a call runs in the batch's
task: it is started eagerly (``start_eagerly``), so an instant one ends in its first step and
never meets the grace; one that suspends is driven from there, step by step, and gets a task of
its own only if it goes on after being cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import types
from collections.abc import Coroutine, Generator
from typing import Any, Protocol, cast

from tether.agent.eager import Suspended
from tether.ai.abort import AbortSignal
from tether.errors import ToolError

ABORT_GRACE = 1.0
"""Seconds a tool may take to stop once the run is aborted. One that has not returned by then
is left behind: an async tool is cancelled, a plain function's thread finishes on its own, and
whatever it returns later is dropped. Its call ends at once with an error result saying so, so an
abort (and ``close``) returns within about this long whatever the tool does with its signal."""


class ToolAbandonedError(ToolError):
    """A tool kept running past ``ABORT_GRACE`` after the run was aborted."""


class Running(Protocol):
    """What the grace reads of the call it watches."""

    @property
    def ended(self) -> bool:
        """The tool returned: what is left of the call is its caller's own (its updates going
        out), which no grace cuts off."""
        ...

    abandoned: bool
    """Set by the grace as it gives the call up, before the tool gets its cancellation: whatever
    the call comes to from then on is dropped."""


@types.coroutine
def until_abort_grace(
    suspended: Suspended[None], signal: AbortSignal, call: Running
) -> Generator[Any, Any, None]:
    """Drive a call that suspended in its eager first step to its end, or leave it, while its
    tool runs (``call.ended`` says when it returned; the rest is driven as it is):

    - its abort starts the grace; at its end, the future the tool waits on is cancelled (what
      cancelling a task does), so the tool gets a ``CancelledError`` and this raises
      ``ToolAbandonedError``, whatever the call makes of it (a tool waiting on a task or a
      ``gather``, which a cancellation may never end, is waited on through a plain future
      that the grace cancels too: ``_Grace.relay``);
    - a ``CancelledError`` thrown in from outside (the run or the batch cancelled) goes to the
      call and then propagates;
    - a call that goes on after either (it ignores the cancellation, or awaits its cleanup)
      continues in a task of its own (``_carry_on``), left behind: we do not wait for it, and
      its caller drops whatever it comes to (``suspended.ended`` is set either way: it is no
      longer the caller's to close). Its own ``asyncio.timeout`` or cancel scope still works: a
      cancellation that the tool took back (``uncancel``) is its own business. A call whose
      tool has ended (``call.ended``) goes on only to send its updates out: that is no ignored
      cancellation, and it is driven to its end here, so the updates go out before the
      cancellation propagates (or the call is given up) and no task of it outlives the run.

    The call, not the tool alone: wrapping each tool in a coroutine of the grace's own, to watch
    it only if it suspended, cost every instant call of a run with a signal two coroutines, a
    copy of the context and a list (P2: 2.5 M of 97 M instructions per run); the batch starts
    its own coroutine per call eagerly anyway, and only one that suspends comes here.

    A task per call (the design before these) cost P2 with a signal 1.8x the instructions of
    P2 without one: a task, two passes of the event loop and a listener per instant tool call."""
    coro, context, yielded = suspended.coro, suspended.context, suspended.yielded
    run = context.run
    # Suspended: from here on the abort counts.
    task = asyncio.current_task()
    assert task is not None, "tools run in a task"
    cancelling = task.cancelling()
    """Cancellations asked of the task before the tool suspended: more are asked from outside."""
    grace = _Grace(asyncio.get_running_loop())
    remove = signal.add_listener(grace.on_abort)
    try:
        while not call.ended:
            grace.waiting = yielded
            if yielded is None or type(yielded) is asyncio.Future:
                grace.relayed = None
            else:  # a task (or a gathering): cancelling it may not end it, see ``_Grace.relay``
                yielded = grace.relay(yielded)
            try:
                sent = yield yielded
            except GeneratorExit:  # this awaitable is being closed: close the tool (as PEP 380)
                run(coro.close)
                raise
            except asyncio.CancelledError as exc:
                if grace.abandoned:  # the grace ended: the future it waited on was cancelled
                    break
                if grace.relayed is not None:  # what cancelling the task would have cancelled
                    grace.waiting.cancel()
                asked = task.cancelling()
                try:
                    yielded = run(coro.throw, exc)
                except StopIteration:
                    # Its own timeout, taken back, or not the task's cancellation at all (a
                    # future it waits on was cancelled by another): what it came to stands.
                    if task.cancelling() < asked or asked <= cancelling:
                        suspended.ended = True
                        return
                    raise exc from None  # it returned instead: the cancellation still stands
                if call.ended:  # the tool ended: its call's end (its updates) is not ignoring
                    continue  # the cancellation, which propagates from it, here, once that is out
                if cancelling < asked <= task.cancelling():  # it ignores the task's cancellation
                    _carry_on(coro, context, yielded)
                    raise
            except BaseException as exc:  # thrown into the task: the tool's to handle
                yielded = run(coro.throw, exc)
            else:
                if grace.abandoned:  # what it waited for came as the grace ended
                    break
                yielded = run(coro.send, sent)
    except StopIteration:
        suspended.ended = True
        return
    except BaseException:
        suspended.ended = True
        raise
    finally:
        remove()
        grace.close()
    if not grace.abandoned:  # the tool returned while its call went on: the rest as it is
        suspended.yielded = yielded
        yield from cast(Generator[Any, Any, None], suspended.resume())  # a generator-based coroutine
        return
    suspended.ended = True
    call.abandoned = True
    # The grace ended before the tool did: it is cancelled (as its task would have been), and
    # left behind if it goes on.
    try:
        yielded = run(coro.throw, asyncio.CancelledError())
    except BaseException:  # it ended: whatever it said is dropped
        pass
    else:
        if call.ended:  # the tool stopped: its call's end (its updates) is driven here, and dropped
            suspended.ended = False
            suspended.yielded = yielded
            with contextlib.suppress(Exception, asyncio.CancelledError):
                yield from cast(Generator[Any, Any, None], suspended.resume())
        else:
            _carry_on(coro, context, yielded)
    if task.cancelling() > cancelling:  # the task was cancelled meanwhile: that comes first
        raise asyncio.CancelledError
    raise ToolAbandonedError(ABANDONED)


ABANDONED = (
    f"Tool execution was aborted (the tool did not stop within {ABORT_GRACE:g} s; its late result is dropped)"
)


class _Grace:
    """The abort grace of one suspended tool call: started by the abort, it cancels the future
    the tool waits on when it ends (``abandoned``), which wakes the task driving the tool."""

    __slots__ = ("abandoned", "loop", "relayed", "timer", "waiting")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.waiting: Any = None
        """What the tool last handed the task: the future it waits on, or ``None`` (a bare
        yield: it is continued on the next pass, where ``abandoned`` is seen)."""
        self.relayed: asyncio.Future[None] | None = None
        """The future the task waits on instead of ``waiting``, when that is not a plain one."""
        self.abandoned = False
        self.timer: asyncio.TimerHandle | None = None

    def relay(self, waiting: Any) -> asyncio.Future[None]:
        """A plain future done when ``waiting`` is, for the task to wait on. A cancelled task
        (or ``gather``) ends only once what it runs has stopped, maybe never: the task driving
        the tool would never wake to leave it. A plain future (what ``sleep``, events, queues,
        streams and threads hand back) ends when cancelled, and is waited on as it is."""
        relayed = self.loop.create_future()
        relayed._asyncio_future_blocking = True  # pyright: ignore[reportPrivateUsage] (as ``await`` sets it)

        def done(_: object) -> None:
            if not relayed.done():
                relayed.set_result(None)

        waiting.add_done_callback(done)
        self.relayed = relayed
        return relayed

    def on_abort(self, _: object) -> None:
        self.timer = self.loop.call_later(ABORT_GRACE, self.give_up)

    def give_up(self) -> None:
        self.abandoned = True
        if self.waiting is not None:  # a future (anything a task accepts has ``cancel``)
            self.waiting.cancel()
        if self.relayed is not None:
            self.relayed.cancel()

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()


def _carry_on(coro: Coroutine[Any, Any, Any], context: contextvars.Context, yielded: Any) -> None:
    """Leave a tool that is still running to a task of its own, whose outcome nobody reads."""
    task = asyncio.get_running_loop().create_task(_continue(Suspended(coro, context, yielded)))
    task.add_done_callback(_forget)


async def _continue(suspended: Suspended[Any]) -> None:
    await suspended.resume()


def _forget(task: asyncio.Future[Any]) -> None:
    """Read an abandoned tool's outcome so asyncio does not log it as never retrieved."""
    if not task.cancelled():
        task.exception()
