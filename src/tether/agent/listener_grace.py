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


class _Cut:
    """One await a grace may cut, in ``task``: the timer that cuts it and whether it did; the one
    primitive under both bounds (a listener's, ``ListenerGrace``; a hook's, ``hook_within_grace``).

    As the context of that await it takes back the cancellation it caused: the cut comes out of
    the ``with`` as ``hung()``'s error, not as the task's cancellation (which would end the run as
    a cancelled one), and a cancellation the awaited code swallowed (it returned, or raised
    something else) is taken back all the same. A cancellation it did not cause (the run itself
    was cancelled) passes through."""

    task: asyncio.Task[Any]
    """Set by each kind's ``__init__``; the two below are defaults of the class, not set per await."""
    timer: asyncio.TimerHandle | None = None
    cut = False

    def said(self, ending: str) -> str:
        """The line a log and the error give the cut: who did not return, then ``ending``."""
        raise NotImplementedError

    def hung(self) -> TetherError:
        raise NotImplementedError

    def arm(self) -> None:
        self.timer = asyncio.get_running_loop().call_later(_grace(), self.cut_off)

    def cut_off(self) -> None:
        if self.task.done():
            return
        self.cut = True
        logger.warning("%s", self.said("cancelling it"))
        self.task.cancel()

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: object) -> None:
        if self.timer is not None:
            self.timer.cancel()
        if self.cut:
            self.cut = False
            self.task.uncancel()
            if isinstance(error, asyncio.CancelledError):
                raise self.hung() from None


class _Waiting(_Cut):
    """One listener being awaited for an ``event_type`` event; ``hung_listeners`` is its run's set
    of the listeners cut, which it joins when cut."""

    def __init__(
        self,
        listener: Callable[..., Any],
        event_type: str,
        task: asyncio.Task[Any],
        hung_listeners: set[Callable[..., Any]],
    ) -> None:
        self.task = task
        self.listener = listener
        self.event_type = event_type
        self.hung_listeners = hung_listeners

    def said(self, ending: str) -> str:
        return (
            f"event listener {listener_name(self.listener)} did not return within {_grace():g} s of the abort "
            f"(on {self.event_type}); {ending}"
        )

    def hung(self) -> TetherError:
        return ListenerHungError(self.said("it was cancelled"))

    def cut_off(self) -> None:
        super().cut_off()
        if self.cut:
            self.hung_listeners.add(self.listener)


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
            waiting.arm()

    def skips(self, listener: Callable[..., Any]) -> bool:
        return listener in self.hung

    async def wait(self, listener: Callable[..., Any], outcome: Awaitable[Any], event_type: str) -> None:
        """``await outcome`` (what ``listener`` returned for an ``event_type`` event), cut
        ``ABORT_GRACE`` after the abort."""
        task = asyncio.current_task()
        assert task is not None
        waiting = _Waiting(listener, event_type, task, self.hung)
        outer = self._waiting.get(task)
        self._waiting[task] = waiting
        if self.aborted:
            waiting.arm()
        try:
            with waiting:
                await outcome
        finally:
            if outer is None:
                del self._waiting[task]
            else:
                self._waiting[task] = outer
                if self.aborted and outer.timer is None:  # aborted while this one was innermost
                    outer.arm()


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
    hook = _Hook(step, task)
    remove = signal.add_listener(lambda _: hook.arm())
    try:
        with hook:
            return await outcome
    finally:
        remove()


class _Hook(_Cut):
    """A loop hook being awaited (``hook_within_grace``)."""

    def __init__(self, step: str, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.step = step

    def said(self, ending: str) -> str:
        return f"{self.step} did not return within {_grace():g} s of the abort; {ending}"

    def hung(self) -> TetherError:
        # without the step's name: the run's error (``StepFailed``) names it
        return HookHungError(f"did not return within {_grace():g} s of the abort; it was cancelled")


def _grace() -> float:
    """``ABORT_GRACE``, from the module that loads with the first tool call (a run without tools
    and without an abort never loads it)."""
    from tether.agent.abort_grace import ABORT_GRACE

    return ABORT_GRACE
