"""An event loop on a virtual clock, so that a run's order does not depend on the machine's load.

Conformance scenarios race tools against each other by their delays (10, 70 and 100 ms). On a
real clock their order holds only while the process is never held up for longer than the gap
between two deadlines: under a loaded CI machine a 30 ms stall between starting two tools turned
their ends round, and a trace differed that matches on a quiet machine. On this loop's clock,
time passes only where the scenario says it does:

- each reading of the clock advances it by one nanosecond, so two timers set one after the other
  for the same delay still fire in the order they were set (as on a real clock, and as Node's
  timers do), and a timer never ties with one set before it;
- when nothing is ready to run and no I/O is ready, the clock jumps to the next timer's deadline
  instead of sleeping until it.

Real I/O and threads still work (the selector is polled first, and a loop with no timers waits on
it for real), but a timer racing a thread's work is decided by the virtual clock: this loop is for
runs whose only waits are timers, like the scripted conformance world.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_TICK = 1e-9
"""How far one reading of the clock moves it."""


class _Selector(selectors.DefaultSelector):
    """Polls the real selector; where the loop would wait for a timer, moves the clock instead."""

    def __init__(self) -> None:
        super().__init__()
        self.clock: VirtualClockLoop | None = None

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = super().select(0)
        if ready or timeout == 0 or self.clock is None:
            return ready
        if timeout is None:  # no timer at all: only I/O or another thread can wake the loop
            return super().select(None)
        self.clock.now += timeout
        return []


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """A selector event loop whose ``time()`` is virtual (see the module's docstring)."""

    def __init__(self) -> None:
        selector = _Selector()
        super().__init__(selector)
        selector.clock = self
        self.now = 0.0

    def time(self) -> float:
        self.now += _TICK
        return self.now


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on a ``VirtualClockLoop``."""
    with asyncio.Runner(loop_factory=VirtualClockLoop) as runner:
        return runner.run(main)
