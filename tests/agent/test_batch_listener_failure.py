"""A listener failing while a concurrent batch runs a call that sends updates and suspends: the
run ends with the listener's error, every call with one end and one result, and nothing is left
behind. The batch's cancellation of that call used to reach the caller's task *after* the run had
returned (a done callback removed too late still runs), and the failures of the batch's own tasks
were logged as "Task exception was never retrieved"."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest
from agent_support import Recorder, check_invariants

from tether.agent import AgentContext, AgentEvent, AgentLoopConfig, AgentTool, AgentToolResult, run_agent_loop
from tether.ai.abort import AbortController
from tether.testing.scripted import ScriptedModel, reply, tool_call
from tether.wire import AgentMessage


class Boom(Exception):
    pass


def _text(value: str) -> AgentToolResult[Any]:
    return AgentToolResult(content=[{"type": "text", "text": value}], details={})


async def _instant(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
    return _text("instant")


async def _updates(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
    on_update(_text("half"))
    return _text("updates")


async def _updates_and_suspends(
    call_id: str, params: Any, signal: Any, on_update: Any
) -> AgentToolResult[Any]:
    on_update(_text("first"))
    await asyncio.sleep(0)
    on_update(_text("second"))
    return _text("both")


TOOLS = [
    AgentTool(name=name, label=name, description=name, parameters={"type": "object"}, execute=execute)
    for name, execute in (("instant", _instant), ("updates", _updates), ("both", _updates_and_suspends))
]


class FailsAt(Recorder):
    """Raises on its ``nth`` event (and on every later one when ``keep_failing``)."""

    def __init__(self, nth: int, keep_failing: bool) -> None:
        super().__init__()
        self.nth, self.keep_failing = nth, keep_failing

    async def __call__(self, event: AgentEvent) -> None:
        await super().__call__(event)
        if len(self.events) == self.nth or (self.keep_failing and len(self.events) > self.nth):
            raise Boom("listener broke")


async def _run(kinds: tuple[str, ...], emit: Any, signal: bool) -> list[AgentMessage]:
    model = ScriptedModel([reply(*(tool_call(kind, {}) for kind in kinds)), reply("done")])
    config = AgentLoopConfig(model=model.model, tool_execution="parallel")
    prompt: AgentMessage = {"role": "user", "content": "go", "timestamp": 0}
    abort = AbortController().signal if signal else None
    async with asyncio.timeout(10):
        return await run_agent_loop([prompt], AgentContext(tools=TOOLS), config, emit, abort, model)


@pytest.mark.parametrize("kinds", [("instant", "both", "updates"), ("both", "instant", "updates")])
@pytest.mark.parametrize("signal", [False, True])
async def test_a_listener_failing_at_any_event_leaves_the_caller_and_the_log_alone(
    kinds: tuple[str, ...], signal: bool
) -> None:
    unretrieved: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _, context: unretrieved.append(context))
    clean = Recorder()
    await _run(kinds, clean, signal)
    first = clean.types.index("tool_execution_start")
    for nth in range(first + 1, clean.types.index("turn_end", first) + 2):  # the batch, its turn_end
        for keep_failing in (False, True):
            recorder = FailsAt(nth, keep_failing)
            tasks_before = asyncio.all_tasks()
            result = await _run(kinds, recorder, signal)
            await asyncio.sleep(0)  # a cancellation left armed on this task would land here
            assert asyncio.all_tasks() <= tasks_before, "a task outlived the run"
            ended = result[-1]
            assert ended["role"] == "assistant" and ended["stopReason"] == "error", nth
            check_invariants(recorder.trace(result))
            answered = sorted(m["toolCallId"] for m in result if m["role"] == "toolResult")
            assert len(answered) == len(kinds), (nth, answered)
            gc.collect()  # a task whose failure nobody read is reported as it goes
            assert not unretrieved, (nth, keep_failing, unretrieved[0].get("message"))
