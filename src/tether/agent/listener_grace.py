"""An event listener that never returns cannot hold an aborted run for ever (``ListenerGrace``).

An ``Agent`` and an ``AgentSession`` await what their listeners return, in the run's task: one stuck in an ``await`` that
never ends would keep the run from settling, and so ``abort()`` from ending it and ``close()``
from returning. Once the run is aborted, a listener gets ``ABORT_GRACE`` (the same bound a tool
gets) from the abort, or from the moment it was called if that is later; one still running then
is cancelled (it gets ``CancelledError`` where it waits), a warning names it, and the event's
delivery fails with ``ListenerHungError``: the loop ends the run as it does for any listener
that raised (an error reply, ``turn_end``, ``agent_end``). The cut listener hears nothing more
from that run, so the ending cannot hang on it again.

Only the listener's own awaitable is bounded. What the session records is written before the
listeners hear the event, and the writes the run queued are settled outside any listener
(``_end_pass``, ``_settled``), so a store riding out an outage keeps its own patience: the
cancellation is only ever thrown into a listener's await, never into a write. (The session's own
subscription to its agent is not bounded by the agent for that reason: ``bounded=False``.)

``ABORT_GRACE`` is imported where it is needed: ``abort_grace`` loads with the first tool call,
and a run without tools does not load it (``tests/coldstart``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from tether.ai.abort import AbortSignal
from tether.errors import TetherError

T = TypeVar("T")

logger = logging.getLogger(__name__)


class ListenerHungError(TetherError):
    """An event listener was still running ``ABORT_GRACE`` after the run was aborted."""


def listener_name(listener: Callable[..., Any]) -> str:
    """The name a log line gives a listener: its module and qualified name (a callable object's
    class's), as a reader finds it in the code."""
    named: Any = listener if hasattr(listener, "__qualname__") else type(listener)
    module = getattr(named, "__module__", None)
    return f"{module}.{named.__qualname__}" if module else str(named.__qualname__)


class _Waiting:
    """One listener being awaited: the task awaiting it, and the timer that cuts it."""

    __slots__ = ("cut", "event_type", "listener", "task", "timer")

    def __init__(self, listener: Callable[..., Any], event_type: str, task: asyncio.Task[Any]) -> None:
        self.listener = listener
        self.event_type = event_type
        self.task = task
        self.timer: asyncio.TimerHandle | None = None
        self.cut = False


class ListenerGrace:
    """One run's bound on its listeners: none until ``abort()``, then ``ABORT_GRACE`` each."""

    def __init__(self) -> None:
        self.aborted = False
        self.hung: set[Callable[..., Any]] = set()
        """Listeners cut in this run: skipped for the rest of it."""
        self._waiting: dict[asyncio.Task[Any], _Waiting] = {}
        """The innermost listener each task is awaiting: the run's task, and the tasks of
        listeners a method that is not async started (``steer()``'s ``queue_update``)."""

    def abort(self) -> None:
        if self.aborted:
            return
        self.aborted = True
        for waiting in self._waiting.values():
            self._arm(waiting)

    def skips(self, listener: Callable[..., Any]) -> bool:
        return listener in self.hung

    async def wait(self, listener: Callable[..., Any], outcome: Awaitable[Any], event_type: str) -> None:
        """``await outcome`` (what ``listener`` returned for an ``event_type`` event), cut
        ``ABORT_GRACE`` after the abort."""
        task = asyncio.current_task()
        assert task is not None
        waiting = _Waiting(listener, event_type, task)
        outer = self._waiting.get(task)
        self._waiting[task] = waiting
        if self.aborted:
            self._arm(waiting)
        try:
            await outcome
        except asyncio.CancelledError:
            from tether.agent.abort_grace import ABORT_GRACE

            if not waiting.cut:
                raise  # the run itself was cancelled: not ours to take back
            waiting.cut = False
            task.uncancel()
            raise ListenerHungError(
                f"event listener {listener_name(listener)} did not return within {ABORT_GRACE:g} s "
                f"of the abort (on {event_type}); it was cancelled"
            ) from None
        finally:
            if waiting.timer is not None:
                waiting.timer.cancel()
            if waiting.cut:  # the listener swallowed its cancellation and returned: taken back
                task.uncancel()
            if outer is None:
                del self._waiting[task]
            else:
                self._waiting[task] = outer
                if self.aborted and outer.timer is None:  # aborted while this one was innermost
                    self._arm(outer)

    def _arm(self, waiting: _Waiting) -> None:
        from tether.agent.abort_grace import ABORT_GRACE

        loop = asyncio.get_running_loop()
        waiting.timer = loop.call_later(ABORT_GRACE, self._cut, waiting)

    def _cut(self, waiting: _Waiting) -> None:
        from tether.agent.abort_grace import ABORT_GRACE

        if waiting.task.done():
            return
        waiting.cut = True
        self.hung.add(waiting.listener)
        logger.warning(
            "event listener %s did not return within %g s of the abort (on %s); cancelling it",
            listener_name(waiting.listener),
            ABORT_GRACE,
            waiting.event_type,
        )
        waiting.task.cancel()


def bounded(
    grace: ListenerGrace | None, listener: Callable[..., Any], outcome: Awaitable[Any], event_type: str
) -> Awaitable[Any]:
    """What to await for what ``listener`` returned: the outcome itself, or, in a run with a
    grace, the outcome bounded by it."""
    return outcome if grace is None else grace.wait(listener, outcome, event_type)


class HookHungError(TetherError):
    """A loop hook (``transform_context``, ``convert_to_llm``, ...) was still running
    ``ABORT_GRACE`` after the run was aborted."""


async def hook_within_grace(step: str, outcome: Awaitable[T], signal: AbortSignal) -> T:
    """``await outcome`` (what the loop's ``step`` hook returned), cut ``ABORT_GRACE`` after
    ``signal``'s abort, as a listener is: a hook that never returns (a session's prompt hook
    awaiting for ever, which gets no signal) would otherwise keep the aborted run, and so
    ``abort()`` and ``close()``, waiting for ever. Cut, the hook is cancelled where it waits and
    this raises ``HookHungError``, which ends the run as a hook that raised does."""
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    timers: list[asyncio.TimerHandle] = []
    cut = False

    def cut_off() -> None:
        nonlocal cut
        cut = True
        logger.warning("%s did not return within %g s of the abort; cancelling it", step, _grace())
        task.cancel()

    remove = signal.add_listener(lambda _: timers.append(loop.call_later(_grace(), cut_off)))
    try:
        return await outcome
    except asyncio.CancelledError:
        if not cut:
            raise  # the run itself was cancelled: not ours to take back
        cut = False
        task.uncancel()
        raise HookHungError(f"did not return within {_grace():g} s of the abort; it was cancelled") from None
    finally:
        remove()
        for timer in timers:
            timer.cancel()
        if cut:  # the hook swallowed its cancellation and returned: taken back
            task.uncancel()


def _grace() -> float:
    """``ABORT_GRACE``, from the module that loads with the first tool call (a run without tools
    and without an abort never loads it)."""
    from tether.agent.abort_grace import ABORT_GRACE

    return ABORT_GRACE
