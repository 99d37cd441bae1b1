"""``AgentEventStream``: the iterator form of a run, built on the callback form.

The run executes in its own task and pushes each event into a buffer the consumer drains, like
the reference's ``EventStream``: the run does not wait for the consumer (use the callback form,
``run_agent_loop``, for back-pressure). ``result()`` gives the messages the run added.
The task is held here, so it cannot be garbage-collected mid-run; ``aclose()`` cancels it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable

from tether.agent.types import AgentEvent, Emit
from tether.wire import AgentMessage

RunFn = Callable[[Emit], Awaitable[list[AgentMessage]]]


class AgentEventStream:
    """Async-iterable of ``AgentEvent``s (ending with ``agent_end``); ``await result()`` for the messages."""

    __slots__ = ("_events", "_task", "_waiter")

    def __init__(self, run: RunFn) -> None:
        self._events: deque[AgentEvent] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._task = asyncio.get_running_loop().create_task(self._drive(run))
        self._task.add_done_callback(lambda _task: self._wake())

    async def _drive(self, run: RunFn) -> list[AgentMessage]:
        return await run(self._push)

    async def _push(self, event: AgentEvent) -> None:
        self._events.append(event)
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def __aiter__(self) -> AgentEventStream:
        return self

    async def __anext__(self) -> AgentEvent:
        while not self._events:
            if self._task.done():
                if not self._task.cancelled():
                    self._task.result()  # surfaces a bug in the run, if it had one
                raise StopAsyncIteration
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._events.popleft()

    async def result(self) -> list[AgentMessage]:
        """The messages the run added (waits for the run to finish)."""
        if self._task.cancelled():
            raise RuntimeError("the run was closed (aclose) before it finished: it has no result")
        return await asyncio.shield(self._task)

    async def aclose(self) -> None:
        """Stop the run now (cancels its task and the tool calls it runs)."""
        if not self._task.done():
            self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
