"""Eager starts (``tether.agent.eager``) and the parallel batch's calls that start eagerly: a call
that ends at once needs no task; one that suspends stays in the batch's task, so whatever it tied
to its task (a timeout, ``current_task()``) holds, and a failing sibling still cancels it."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import pytest
from agent_support import Recorder, check_invariants
from test_loop_failures import FailingRecorder, quick, slow, user

from tether.agent import AgentContext, AgentLoopConfig, AgentTool, AgentToolResult, run_agent_loop, tool
from tether.agent.eager import Suspended, start_eagerly
from tether.ai.abort import AbortController, AbortSignal
from tether.testing.scripted import ScriptedModel, reply, text, tool_call

MARK: contextvars.ContextVar[str] = contextvars.ContextVar("MARK", default="unset")


@pytest.fixture(params=[False, True], ids=["no-signal", "signal"])
def signal(request: pytest.FixtureRequest) -> AbortSignal | None:
    """The batch's calls are run without and with an abort signal (every ``Agent`` run has one):
    with one, each call that suspends is driven through ``until_abort_grace``, which must keep all of
    this true."""
    return AbortController().signal if request.param else None


async def _mark_and_keep(value: str, kept: list[str]) -> None:
    MARK.set(value)
    kept.append(MARK.get())


async def _mark_and_wait(value: str, gate: asyncio.Event, kept: list[Any]) -> None:
    MARK.set(value)
    before = asyncio.current_task()
    await gate.wait()
    assert asyncio.current_task() is before, "the coroutine changed tasks across its suspension"
    kept.extend((value, before, MARK.get()))


async def test_a_coroutine_that_ends_at_once_ran_in_its_own_context() -> None:
    kept: list[str] = []
    assert start_eagerly(_mark_and_keep("now", kept)) is None
    assert kept == ["now"]
    assert MARK.get() == "unset", "the eager step ran in a copy of the context, as a task would"


async def test_what_the_first_step_raises_propagates() -> None:
    async def fails() -> None:
        raise ValueError("at once")

    with pytest.raises(ValueError, match="at once"):
        start_eagerly(fails())


async def test_a_suspended_coroutine_is_continued_by_the_task_that_started_it() -> None:
    gate = asyncio.Event()
    kept: list[Any] = []
    started = start_eagerly(_mark_and_wait("later", gate, kept))
    assert isinstance(started, Suspended)
    asyncio.get_running_loop().call_soon(gate.set)
    await started.resume()
    assert kept == ["later", asyncio.current_task(), "later"]
    assert started.ended and MARK.get() == "unset"


async def test_closing_a_suspended_coroutine_cancels_it_and_lets_it_unwind() -> None:
    unwound: list[str] = []

    async def waits_forever() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await asyncio.sleep(0)  # cleanup may await
            unwound.append("cancelled")
            raise

    started = start_eagerly(waits_forever())
    assert isinstance(started, Suspended)
    await started.close()
    assert unwound == ["cancelled"] and started.ended


async def test_closing_what_awaits_a_suspended_coroutine_closes_it() -> None:
    """As ``await`` does (PEP 380): the coroutine is closed, not sent a ``GeneratorExit`` to handle."""
    closed: list[str] = []

    async def waits() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            closed.append("closed")

    started = start_eagerly(waits())
    assert isinstance(started, Suspended)

    async def awaiter() -> None:
        await started.resume()

    outer = awaiter()
    outer.send(None)  # suspended on the event's future, as a task would hold it
    outer.close()
    assert closed == ["closed"]


@tool
async def timed(seconds: float) -> str:
    """Wait ``seconds`` under a timeout of a hundredth of that."""
    async with asyncio.timeout(seconds / 100):
        await asyncio.sleep(seconds)
    return "no timeout"  # pragma: no cover - the timeout fires first


async def test_a_timeout_entered_before_the_first_suspension_cancels_only_its_own_call(
    signal: AbortSignal | None,
) -> None:
    model = ScriptedModel(
        [reply(tool_call("timed", {"seconds": 1}), tool_call("quick", {"value": "q"})), reply(text("ok"))]
    )
    recorder = Recorder()
    async with asyncio.timeout(10):
        result = await run_agent_loop(
            [user("go")],
            AgentContext(tools=[timed, quick]),
            AgentLoopConfig(model=model.model, tool_execution="parallel"),
            recorder,
            signal,
            model,
        )
    results = {m["toolCallId"]: m for m in result if m["role"] == "toolResult"}
    assert results["call_1"]["isError"] is True
    assert results["call_1"]["content"] == [{"type": "text", "text": "TimeoutError"}]
    assert results["call_2"]["content"] == [{"type": "text", "text": "q"}]
    assert result[-1]["role"] == "assistant" and result[-1]["stopReason"] == "stop"
    check_invariants(recorder.trace(result))


@tool
async def soon(value: str) -> str:
    """Answer after a pass of the event loop."""
    await asyncio.sleep(0.001)
    return value


async def test_a_sibling_failing_while_the_first_call_waits_cancels_it(signal: AbortSignal | None) -> None:
    """``slow`` suspends while starting, so the batch's task continues it; ``soon`` runs in a task
    and its end event makes the listener fail: ``slow`` must be cancelled, not awaited."""
    model = ScriptedModel([reply(tool_call("slow", {"value": "s"}), tool_call("soon", {"value": "q"}))])
    recorder = FailingRecorder("tool_execution_end")
    tasks_before = asyncio.all_tasks()
    async with asyncio.timeout(10):  # a regression must fail, not hang on the hour-long tool
        result = await run_agent_loop(
            [user("go")],
            AgentContext(tools=[slow, soon]),
            AgentLoopConfig(model=model.model, tool_execution="parallel"),
            recorder,
            signal,
            model,
        )
    await asyncio.sleep(0)
    assert asyncio.all_tasks() <= tasks_before, "a task outlived the run"
    last = result[-1]
    assert last["role"] == "assistant" and last.get("errorMessage", "").startswith("event listener failed")
    results = {m["toolCallId"]: m for m in result if m["role"] == "toolResult"}
    assert results["call_1"]["isError"] is True, "the slow call was cancelled"
    assert results["call_2"]["content"] == [{"type": "text", "text": "q"}]
    check_invariants(recorder.trace(result))


async def test_instant_calls_of_a_batch_start_in_order_without_a_task(signal: AbortSignal | None) -> None:
    seen: list[tuple[str, asyncio.Task[Any] | None]] = []

    async def execute(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
        seen.append((call_id, asyncio.current_task()))
        return AgentToolResult(content=[{"type": "text", "text": call_id}], details={})

    echo = AgentTool(
        name="echo", label="echo", description="d", parameters={"type": "object"}, execute=execute
    )
    model = ScriptedModel([reply(*(tool_call("echo", {}, id=f"c{i}") for i in range(3))), reply("done")])
    recorder = Recorder()
    result = await run_agent_loop(
        [user("go")],
        AgentContext(tools=[echo]),
        AgentLoopConfig(model=model.model, tool_execution="parallel"),
        recorder,
        signal,
        model,
    )
    assert [call_id for call_id, _ in seen] == ["c0", "c1", "c2"]
    assert {task for _, task in seen} == {asyncio.current_task()}, "each call ran in the run's task"
    check_invariants(recorder.trace(result))


@pytest.mark.parametrize(
    ("mode", "count"),
    [("sequential", 2), ("parallel", 1), ("parallel", 2)],
    ids=["sequential", "parallel-one-call", "parallel-two-calls"],
)
async def test_every_call_runs_in_a_copy_of_the_context_however_the_batch_runs_it(
    mode: Any, count: int, signal: AbortSignal | None
) -> None:
    """What a tool sets in its context stays its own (as a task would keep it), in every mode,
    with a signal or without: the next call and the run's listener see their own context."""
    seen: list[str] = []
    at_the_end: list[str] = []

    async def execute(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
        seen.append(MARK.get())
        MARK.set(call_id)
        return AgentToolResult(content=[{"type": "text", "text": call_id}], details={})

    marks = AgentTool(
        name="marks", label="marks", description="d", parameters={"type": "object"}, execute=execute
    )
    model = ScriptedModel([reply(*(tool_call("marks", {}, id=f"c{i}") for i in range(count))), reply("done")])
    recorder = Recorder()

    async def listener(event: Any) -> None:
        await recorder(event)
        if event["type"] == "tool_execution_end":
            at_the_end.append(MARK.get())

    result = await run_agent_loop(
        [user("go")],
        AgentContext(tools=[marks]),
        AgentLoopConfig(model=model.model, tool_execution=mode),
        listener,
        signal,
        model,
    )
    assert seen == ["unset"] * count, "a call saw what an earlier call set"
    assert at_the_end == ["unset"] * count, "the listener saw what a call set"
    assert MARK.get() == "unset"
    check_invariants(recorder.trace(result))
