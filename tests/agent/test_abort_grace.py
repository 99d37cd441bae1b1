"""``until_abort_grace``, the race between a tool's end and the run's abort that every tool call of
a run with a signal (every ``Agent`` run) goes through once it suspends: the tool's result when it
ends, its answer to the abort when it gives one within the grace, its cancellation when the caller
is cancelled, and nothing left listening on the signal afterwards.

The tool runs in the awaiting task, started eagerly as the batch starts each call (``_guarded``
below does what the batch's ``_run`` does): an instant one ends in its first step (no task, no
grace), one that suspends is driven from there, and left behind when the grace ends, whether it
takes its cancellation or ignores it. (Abandoning a tool that ignores the abort is also covered end to end in
tests/session/test_session_abort.py.) The grace is shortened here: its length is not the subject."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Awaitable
from typing import Any

import pytest
from agent_support import Recorder, check_invariants

import tether.agent.abort_grace as grace_module
from tether.agent import AgentContext, AgentLoopConfig, AgentTool, AgentToolResult, run_agent_loop, tool
from tether.agent.abort_grace import ToolAbandonedError, until_abort_grace
from tether.agent.eager import start_eagerly
from tether.ai.abort import AbortController, AbortSignal
from tether.testing.scripted import ScriptedModel, reply, tool_call
from tether.wire import AgentMessage

MARK: contextvars.ContextVar[str] = contextvars.ContextVar("MARK", default="unset")


@pytest.fixture(autouse=True)
def _short_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grace_module, "ABORT_GRACE", 0.01)


def _result(text: str) -> AgentToolResult[Any]:
    return AgentToolResult(content=[{"type": "text", "text": text}], details={})


class _Call:
    ended = False
    abandoned = False


async def _guarded(work: Awaitable[AgentToolResult[Any]], signal: AbortSignal) -> AgentToolResult[Any]:
    """``work`` run as the batch runs a call: started eagerly, driven with the grace once it
    suspends, its result kept where its caller looks (the batch's record)."""
    call = _Call()
    returned: list[AgentToolResult[Any]] = []

    async def execute() -> None:
        try:
            returned.append(await work)
        finally:
            call.ended = True

    suspended = start_eagerly(execute())
    if suspended is not None:
        await until_abort_grace(suspended, signal, call)
    return returned[0]


async def test_a_tool_that_ends_gives_its_result_and_leaves_no_listener() -> None:
    controller = AbortController()

    async def tool() -> AgentToolResult[Any]:
        await asyncio.sleep(0)
        return _result("done")

    result = await _guarded(tool(), controller.signal)
    assert result.content == [{"type": "text", "text": "done"}]
    assert controller.signal._listeners == []  # pyright: ignore[reportPrivateUsage]


async def test_a_tool_that_answers_the_abort_gives_its_answer() -> None:
    controller = AbortController()
    started = asyncio.Event()

    async def tool() -> AgentToolResult[Any]:
        started.set()
        await controller.signal.wait()
        return _result("stopped")

    racing = asyncio.ensure_future(_guarded(tool(), controller.signal))
    await started.wait()
    controller.abort()
    result = await racing
    assert result.content == [{"type": "text", "text": "stopped"}]


async def test_cancelling_the_caller_cancels_the_tool() -> None:
    controller = AbortController()
    started = asyncio.Event()
    outcome: list[str] = []

    async def tool() -> AgentToolResult[Any]:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            outcome.append("cancelled")
            raise
        return _result("never")

    racing = asyncio.ensure_future(_guarded(tool(), controller.signal))
    await started.wait()
    racing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await racing
    await asyncio.sleep(0)  # the tool's task takes its cancellation on the next pass
    assert outcome == ["cancelled"]
    assert controller.signal._listeners == []  # pyright: ignore[reportPrivateUsage]


async def test_an_instant_tool_ends_in_its_first_step_in_the_callers_task_and_its_own_context() -> None:
    controller = AbortController()
    seen: list[object] = []

    async def tool() -> AgentToolResult[Any]:
        MARK.set("tool")
        seen.append(asyncio.current_task())
        return _result("done")

    awaiting = _guarded(tool(), controller.signal)
    with pytest.raises(StopIteration) as ended:  # one step, no suspension: no task, no pass
        awaiting.send(None)
    assert ended.value.value.content == [{"type": "text", "text": "done"}]
    assert seen == [asyncio.current_task()]
    assert MARK.get() == "unset", "the tool ran in a copy of the context, as a task would run it"
    assert controller.signal._listeners == []  # pyright: ignore[reportPrivateUsage]


async def test_what_the_first_step_raises_propagates_and_leaves_no_listener() -> None:
    controller = AbortController()

    async def tool() -> AgentToolResult[Any]:
        raise ValueError("at once")

    with pytest.raises(ValueError, match="at once"):
        await _guarded(tool(), controller.signal)
    assert controller.signal._listeners == []  # pyright: ignore[reportPrivateUsage]


async def test_a_suspended_tool_that_outlives_the_grace_is_cancelled_and_abandoned() -> None:
    controller = AbortController()
    outcome: list[str] = []

    async def tool() -> AgentToolResult[Any]:
        try:
            await asyncio.Event().wait()  # never looks at its signal
        except asyncio.CancelledError:
            outcome.append("cancelled")
            raise
        return _result("never")  # pragma: no cover

    racing = asyncio.ensure_future(_guarded(tool(), controller.signal))
    await asyncio.sleep(0)
    controller.abort()
    with pytest.raises(ToolAbandonedError, match="did not stop within"):
        async with asyncio.timeout(10):  # a regression must fail, not hang on the tool
            await racing
    assert outcome == ["cancelled"]
    assert racing.cancelling() == 0, "the task running it was not cancelled: only the tool's wait"
    assert controller.signal._listeners == []  # pyright: ignore[reportPrivateUsage]


async def test_a_tool_that_ignores_its_cancellation_is_left_behind_and_its_late_result_dropped() -> None:
    controller = AbortController()
    release = asyncio.Event()
    outcome: list[str] = []

    async def tool() -> AgentToolResult[Any]:
        while True:
            try:
                await release.wait()
                break
            except asyncio.CancelledError:
                outcome.append("ignored")
        outcome.append("finished anyway")
        return _result("late")

    tasks_before = asyncio.all_tasks()
    racing = asyncio.ensure_future(_guarded(tool(), controller.signal))
    await asyncio.sleep(0)
    controller.abort()
    with pytest.raises(ToolAbandonedError):
        async with asyncio.timeout(10):
            await racing
    assert outcome == ["ignored"]
    left = asyncio.all_tasks() - tasks_before - {racing}
    assert len(left) == 1, "the tool goes on in a task of its own"
    release.set()
    await asyncio.gather(*left)
    assert outcome == ["ignored", "finished anyway"]


async def test_cancelling_the_caller_leaves_a_tool_that_ignores_it_behind() -> None:
    controller = AbortController()
    release = asyncio.Event()
    outcome: list[str] = []

    async def tool() -> AgentToolResult[Any]:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            outcome.append("cleaning up")
            await release.wait()  # cleanup that awaits: the caller does not wait for it
            outcome.append("cleaned up")
        return _result("late")

    tasks_before = asyncio.all_tasks()
    racing = asyncio.ensure_future(_guarded(tool(), controller.signal))
    await asyncio.sleep(0)
    racing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await racing
    assert outcome == ["cleaning up"]
    left = asyncio.all_tasks() - tasks_before - {racing}
    release.set()
    await asyncio.gather(*left)
    assert outcome == ["cleaning up", "cleaned up"]
    assert controller.signal._listeners == []  # pyright: ignore[reportPrivateUsage]


async def test_a_tool_that_swallows_the_callers_cancellation_does_not_stop_it() -> None:
    controller = AbortController()

    async def tool() -> AgentToolResult[Any]:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return _result("swallowed")
        return _result("never")  # pragma: no cover

    racing = asyncio.ensure_future(_guarded(tool(), controller.signal))
    await asyncio.sleep(0)
    racing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await racing


async def test_a_tools_own_timeout_is_its_own_business() -> None:
    """The tool's ``asyncio.timeout`` cancels the task it runs in (the caller's): the tool takes
    that cancellation back and goes on, so it is neither left behind nor is the caller cancelled."""
    controller = AbortController()

    async def tool() -> AgentToolResult[Any]:
        try:
            async with asyncio.timeout(0.001):
                await asyncio.Event().wait()
        except TimeoutError:
            await asyncio.sleep(0)
            return _result("timed out, recovered")
        return _result("never")  # pragma: no cover

    async with asyncio.timeout(10):
        result = await _guarded(tool(), controller.signal)
    assert result.content == [{"type": "text", "text": "timed out, recovered"}]
    current = asyncio.current_task()
    assert current is not None and current.cancelling() == 0


@tool
async def deaf() -> str:
    """Waits for an event nobody sets, and never looks at its signal."""
    await asyncio.Event().wait()
    return "never"  # pragma: no cover


@tool
async def instant() -> str:
    """Answers at once."""
    return "instant"


async def test_a_call_abandoned_while_the_batch_reports_another_calls_end() -> None:
    """``instant`` ends while the batch starts, ``deaf`` suspends there and waits for the batch's
    task to continue it; the batch reports ``instant``'s end first, and its listener aborts and
    outlasts the grace: ``deaf`` is abandoned as soon as the batch gets back to it."""
    controller = AbortController()
    recorder = Recorder()

    async def listener(event: Any) -> None:
        await recorder(event)
        if event["type"] == "tool_execution_end" and event["toolName"] == "instant":
            controller.abort()
            await asyncio.sleep(0.05)  # past the (shortened) grace

    model = ScriptedModel([reply(tool_call("instant", {}), tool_call("deaf", {}))])
    prompt: AgentMessage = {"role": "user", "content": "go", "timestamp": 0}
    tasks_before = asyncio.all_tasks()
    async with asyncio.timeout(10):  # a regression must fail, not hang on the deaf tool
        result = await run_agent_loop(
            [prompt],
            AgentContext(tools=[instant, deaf]),
            AgentLoopConfig(model=model.model, tool_execution="parallel"),
            listener,
            controller.signal,
            model,
        )
    assert asyncio.all_tasks() <= tasks_before, "a task outlived the run"
    results = {m["toolName"]: m for m in result if m["role"] == "toolResult"}
    assert results["instant"]["content"] == [{"type": "text", "text": "instant"}]
    assert results["deaf"]["isError"] is True
    assert "did not stop within" in str(results["deaf"]["content"])
    check_invariants(recorder.trace(result))


@pytest.mark.parametrize(
    ("mode", "names"),
    [
        ("sequential", ["instant", "stuck"]),
        ("parallel", ["stuck"]),  # the one runnable call: no concurrency
        ("parallel", ["instant", "stuck"]),  # suspends while the batch starts its calls
        ("parallel", ["stuck", "instant"]),  # ``instant`` then starts as a task of its own
        ("parallel", ["stuck", "stuck"]),  # the second in a task of its own, suspended too
        ("sequential", ["instant", "blocking"]),  # a plain function, in a thread
        ("parallel", ["instant", "blocking"]),
    ],
)
async def test_a_call_that_suspends_gets_the_grace_however_the_batch_runs_it(
    mode: Any, names: list[str]
) -> None:
    """An instant call ends in its first step, before any grace exists; one that suspends is
    watched from there, in every way a batch runs a call. Here it aborts the run once it is
    suspended and ignores the abort: it is abandoned after the grace, the instant call keeps its
    result, and nothing outlives the run (but the plain function's thread, released below)."""
    controller = AbortController()
    loop = asyncio.get_running_loop()
    release = threading.Event()

    @tool
    async def stuck() -> str:
        """Aborts the run on the next pass, and never looks at its signal."""
        loop.call_soon(controller.abort)
        await asyncio.Event().wait()
        return "never"  # pragma: no cover

    @tool
    def blocking() -> str:
        """Aborts the run from its thread, and blocks until the test releases it."""
        loop.call_soon_threadsafe(controller.abort)
        release.wait(10)
        return "late"

    recorder = Recorder()
    calls = [tool_call(name, {}, id=f"c{i}") for i, name in enumerate(names)]
    model = ScriptedModel([reply(*calls)])
    prompt: AgentMessage = {"role": "user", "content": "go", "timestamp": 0}
    tasks_before = asyncio.all_tasks()
    try:
        async with asyncio.timeout(10):  # a call left unwatched hangs: it must fail instead
            result = await run_agent_loop(
                [prompt],
                AgentContext(tools=[instant, stuck, blocking]),
                AgentLoopConfig(model=model.model, tool_execution=mode),
                recorder,
                controller.signal,
                model,
            )
    finally:
        release.set()
    assert asyncio.all_tasks() <= tasks_before, "a task outlived the run"
    results = [m for m in result if m["role"] == "toolResult"]
    assert [m["toolName"] for m in results] == names
    for message in results:
        if message["toolName"] == "instant":
            assert message["content"] == [{"type": "text", "text": "instant"}]
            assert message["isError"] is False
        else:
            assert message["isError"] is True
            assert "did not stop within" in str(message["content"])
    assert controller.signal._listeners == []  # pyright: ignore[reportPrivateUsage]
    check_invariants(recorder.trace(result))


async def test_a_tool_that_hands_back_a_future_is_awaited_like_a_coroutine() -> None:
    """``execute`` may return any awaitable: one that is not a coroutine is driven the same way."""
    controller = AbortController()
    answer: asyncio.Future[AgentToolResult[Any]] = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_soon(answer.set_result, _result("later"))
    result = await _guarded(answer, controller.signal)
    assert result.content == [{"type": "text", "text": "later"}]
    assert controller.signal._listeners == []  # pyright: ignore[reportPrivateUsage]


async def test_a_tool_awaiting_a_task_gets_its_result() -> None:
    controller = AbortController()

    async def child() -> str:
        await asyncio.sleep(0)
        return "from the child"

    async def tool() -> AgentToolResult[Any]:
        return _result(await asyncio.get_running_loop().create_task(child()))

    result = await _guarded(tool(), controller.signal)
    assert result.content == [{"type": "text", "text": "from the child"}]


async def test_a_tool_awaiting_work_that_ignores_its_cancellation_is_still_abandoned() -> None:
    """The tool waits on ``gather`` (or a task), which cancelling does not end while its work
    ignores the cancellation: the run's task must still wake when the grace ends."""
    controller = AbortController()
    release = asyncio.Event()
    outcome: list[str] = []

    async def deaf_child() -> None:
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                outcome.append("child ignored")

    async def tool() -> AgentToolResult[Any]:
        try:
            await asyncio.gather(deaf_child())
        except asyncio.CancelledError:
            outcome.append("tool cancelled")
            raise
        return _result("never")  # pragma: no cover

    tasks_before = asyncio.all_tasks()
    racing = asyncio.ensure_future(_guarded(tool(), controller.signal))
    await asyncio.sleep(0)
    controller.abort()
    try:
        # not ``asyncio.timeout``: cancelling a task stuck on the deaf child would not end it either
        done, _ = await asyncio.wait({racing}, timeout=10)
        assert done, "the task running the tool never woke to leave it"
        with pytest.raises(ToolAbandonedError):
            racing.result()
        assert outcome == ["child ignored", "tool cancelled"]
    finally:
        release.set()
        await asyncio.gather(*(asyncio.all_tasks() - tasks_before), return_exceptions=True)


async def test_cancelling_the_caller_cancels_the_task_a_tool_awaits() -> None:
    controller = AbortController()
    outcome: list[str] = []

    async def child() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            outcome.append("child cancelled")
            raise

    async def tool() -> AgentToolResult[Any]:
        await asyncio.get_running_loop().create_task(child())
        return _result("never")  # pragma: no cover

    racing = asyncio.ensure_future(_guarded(tool(), controller.signal))
    for _ in range(2):  # the child starts
        await asyncio.sleep(0)
    racing.cancel()
    with pytest.raises(asyncio.CancelledError):
        async with asyncio.timeout(10):
            await racing
    await asyncio.sleep(0)
    assert outcome == ["child cancelled"]


@pytest.mark.parametrize("then", ["returns", "sleeps"])
@pytest.mark.parametrize("mode", ["sequential", "parallel"])
async def test_a_cancellation_nobody_asked_of_the_run_is_the_tools_to_handle(mode: Any, then: str) -> None:
    """A future the tool waits on is cancelled by someone else (not the run, not the grace): the
    ``CancelledError`` is the tool's, and the tool that handles it keeps its result, whether it
    returns at once or goes on. Neither ends the run's task nor leaves the tool behind."""
    controller = AbortController()

    @tool
    async def recovers() -> str:
        """Waits on a future that something else cancels, and recovers."""
        waiting = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(waiting.cancel)
        try:
            await waiting
        except asyncio.CancelledError:
            if then == "sleeps":
                await asyncio.sleep(0)
            return "recovered"
        return "never"  # pragma: no cover

    recorder = Recorder()
    model = ScriptedModel([reply(tool_call("recovers", {}), tool_call("instant", {})), reply("done")])
    prompt: AgentMessage = {"role": "user", "content": "go", "timestamp": 0}
    tasks_before = asyncio.all_tasks()
    async with asyncio.timeout(10):
        result = await run_agent_loop(
            [prompt],
            AgentContext(tools=[recovers, instant]),
            AgentLoopConfig(model=model.model, tool_execution=mode),
            recorder,
            controller.signal,
            model,
        )
    assert asyncio.all_tasks() <= tasks_before, "a task outlived the run"
    results = {m["toolName"]: m for m in result if m["role"] == "toolResult"}
    assert results["recovers"]["content"] == [{"type": "text", "text": "recovered"}]
    assert results["recovers"]["isError"] is False
    assert results["instant"]["content"] == [{"type": "text", "text": "instant"}]
    check_invariants(recorder.trace(result))


async def test_an_abandoned_tool_that_goes_on_changes_nothing_of_its_call() -> None:
    """Left behind after the grace, the tool ignores its cancellation; released as its end goes
    out, it sends an update and returns while the batch is still reporting: both are dropped,
    its end and its result message say it was abandoned, and nothing more comes of it."""
    controller = AbortController()
    release = asyncio.Event()
    late: list[str] = []

    async def execute(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
        asyncio.get_running_loop().call_soon(controller.abort)
        while not release.is_set():
            with contextlib.suppress(asyncio.CancelledError):  # ignored
                await release.wait()
        on_update(_result("late update"))
        late.append("returned")
        return _result("late")

    deafening = AgentTool(
        name="deafening", label="deafening", description="d", parameters={"type": "object"}, execute=execute
    )
    recorder = Recorder()

    async def listener(event: Any) -> None:
        await recorder(event)
        if event["type"] == "tool_execution_end" and event["toolName"] == "deafening":
            release.set()
            for _ in range(5):  # the tool, left behind, goes on meanwhile
                await asyncio.sleep(0)

    model = ScriptedModel([reply(tool_call("deafening", {}), tool_call("instant", {}))])
    prompt: AgentMessage = {"role": "user", "content": "go", "timestamp": 0}
    async with asyncio.timeout(10):
        result = await run_agent_loop(
            [prompt],
            AgentContext(tools=[deafening, instant]),
            AgentLoopConfig(model=model.model, tool_execution="parallel"),
            listener,
            controller.signal,
            model,
        )
    assert late == ["returned"], "the tool went on in a task of its own while the batch reported"
    assert not [e for e in recorder.events if e["type"] == "tool_execution_update"]
    ends = [e for e in recorder.events if e["type"] == "tool_execution_end" and e["toolName"] == "deafening"]
    assert len(ends) == 1 and ends[0]["isError"] is True
    assert "did not stop within" in str(ends[0]["result"].content)
    results = {m["toolName"]: m for m in result if m["role"] == "toolResult"}
    assert results["deafening"]["content"] == ends[0]["result"].content, "its late result was kept"
    check_invariants(recorder.trace(result))


@pytest.mark.parametrize("mode", ["sequential", "parallel"])
async def test_cancelling_the_run_waits_for_the_update_a_tool_sent(mode: Any) -> None:
    """The run is cancelled while the tool it runs has an update still going out: the tool is
    cancelled and ends, and its call's end (its updates going out) is no ignored cancellation:
    the run's cancellation propagates once the update is out, and no task outlives the run."""
    controller = AbortController()
    started = asyncio.Event()
    release = asyncio.Event()
    recorder = Recorder()

    async def execute(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
        on_update(_result("partial"))
        started.set()
        await asyncio.Event().wait()
        return _result("never")  # pragma: no cover

    slow = AgentTool(
        name="slow", label="slow", description="d", parameters={"type": "object"}, execute=execute
    )

    async def listener(event: Any) -> None:
        if event["type"] == "tool_execution_update":
            await release.wait()
        await recorder(event)

    model = ScriptedModel([reply(tool_call("slow", {})), reply("done")])
    prompt: AgentMessage = {"role": "user", "content": "go", "timestamp": 0}
    tasks_before = asyncio.all_tasks()
    run = asyncio.ensure_future(
        run_agent_loop(
            [prompt],
            AgentContext(tools=[slow]),
            AgentLoopConfig(model=model.model, tool_execution=mode),
            listener,
            controller.signal,
            model,
        )
    )
    await started.wait()
    run.cancel()
    # The fixed code cannot end the run while the listener is held: no wait is too short for it.
    await asyncio.wait({run}, timeout=0.2)
    assert not run.done(), "the run ended while its tool's update was still going out"
    release.set()
    with pytest.raises(asyncio.CancelledError):
        async with asyncio.timeout(10):
            await run
    assert asyncio.all_tasks() <= tasks_before | {asyncio.current_task()}, "a task outlived the run"
    types = recorder.types  # the update out before its call's end; cancelled, the run ends aborted
    assert types.index("tool_execution_update") < types.index("tool_execution_end")
    assert types[-1] == "agent_end"


@pytest.mark.parametrize("mode", ["sequential", "parallel"])
async def test_a_call_that_stops_when_abandoned_ends_after_its_update_and_leaves_no_task(mode: Any) -> None:
    """The tool sends an update and is given up by the grace while that update's listener still
    runs; it stops at its cancellation. Its call's end (the update going out) is driven by the
    batch, not left to a task: it ends once, after the update, and no task outlives the run."""
    controller = AbortController()
    cancelled = asyncio.Event()

    async def execute(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
        on_update(_result("partial"))
        controller.abort()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return _result("never")  # pragma: no cover

    stops = AgentTool(
        name="stops", label="s", description="d", parameters={"type": "object"}, execute=execute
    )
    recorder = Recorder()

    async def listener(event: Any) -> None:
        if event["type"] == "tool_execution_update":
            await cancelled.wait()  # the grace gave the call up meanwhile
        await recorder(event)

    model = ScriptedModel([reply(tool_call("stops", {}))])
    prompt: AgentMessage = {"role": "user", "content": "go", "timestamp": 0}
    tasks_before = asyncio.all_tasks()
    async with asyncio.timeout(10):
        result = await run_agent_loop(
            [prompt],
            AgentContext(tools=[stops]),
            AgentLoopConfig(model=model.model, tool_execution=mode),
            listener,
            controller.signal,
            model,
        )
    assert asyncio.all_tasks() <= tasks_before, "a task outlived the run"
    events = [e["type"] for e in recorder.events if e["type"].startswith("tool_")]
    assert events == ["tool_execution_start", "tool_execution_update", "tool_execution_end"]
    (message,) = [m for m in result if m["role"] == "toolResult"]
    assert "did not stop within" in str(message["content"])
    check_invariants(recorder.trace(result))


async def test_an_abandoned_call_whose_update_is_going_out_ends_once() -> None:
    """A parallel batch: ``deaf`` sends an update while starting, aborts the run and ignores the
    abort; the grace gives it up while the update's listener is still running, and ``other`` runs
    in a task of its own meanwhile (so another task settles the batch, and may report ``deaf``'s
    end too). ``deaf`` ends once, after its update went out."""
    controller = AbortController()
    cancelled = asyncio.Event()
    deaf_ended = asyncio.Event()

    async def ignores(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
        on_update(_result("partial"))
        controller.abort()
        while not deaf_ended.is_set():
            try:
                await deaf_ended.wait()
            except asyncio.CancelledError:  # ignored
                cancelled.set()
        return _result("late")

    async def waits(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
        await deaf_ended.wait()
        return _result("other")

    deaf_tool = AgentTool(
        name="deaf", label="d", description="d", parameters={"type": "object"}, execute=ignores
    )
    other = AgentTool(name="other", label="o", description="o", parameters={"type": "object"}, execute=waits)
    recorder = Recorder()

    async def listener(event: Any) -> None:
        if event["type"] == "tool_execution_update":
            await cancelled.wait()  # the grace ended meanwhile: the call is abandoned
        await recorder(event)
        if event["type"] == "tool_execution_end" and event["toolName"] == "deaf":
            deaf_ended.set()

    model = ScriptedModel([reply(tool_call("deaf", {}), tool_call("other", {}))])
    prompt: AgentMessage = {"role": "user", "content": "go", "timestamp": 0}
    async with asyncio.timeout(10):
        result = await run_agent_loop(
            [prompt],
            AgentContext(tools=[deaf_tool, other]),
            AgentLoopConfig(model=model.model, tool_execution="parallel"),
            listener,
            controller.signal,
            model,
        )
    deaf_events = [e["type"] for e in recorder.events if "toolName" in e and e["toolName"] == "deaf"]
    assert deaf_events == ["tool_execution_start", "tool_execution_update", "tool_execution_end"]
    results = {m["toolName"]: m for m in result if m["role"] == "toolResult"}
    assert "did not stop within" in str(results["deaf"]["content"])
    check_invariants(recorder.trace(result))
