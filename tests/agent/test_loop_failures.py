"""Hooks, stream functions and listeners that break their contract still end the run properly:
``message_start``/``message_end`` for an assistant error naming what failed, ``turn_end``,
``agent_end``; every tool call answered; no task left behind."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from agent_support import Recorder, check_invariants

from tether.agent import (
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentToolResult,
    ToolExecutionMode,
    TurnContext,
    run_agent_loop,
    tool,
)
from tether.ai.abort import AbortSignal
from tether.ai.types import Context, SimpleStreamOptions
from tether.testing.scripted import ScriptedModel, reply, text, tool_call
from tether.wire import AgentMessage, AssistantMessage, AssistantMessageEvent, ModelInfo, decode_message


class Boom(Exception):
    pass


@tool
async def quick(value: str) -> str:
    """Answer at once."""
    return value


@tool
async def slow(value: str) -> str:
    """Answer after a while."""
    await asyncio.sleep(3600)
    return value


def user(content: str) -> AgentMessage:
    return {"role": "user", "content": content, "timestamp": 0}


class FailingRecorder(Recorder):
    """Records every event; raises on the ``nth`` event of type ``kind`` (every later one too
    when ``keep_failing``)."""

    def __init__(self, kind: str, nth: int = 1, keep_failing: bool = False) -> None:
        super().__init__()
        self.kind, self.nth, self.keep_failing = kind, nth, keep_failing
        self.seen = 0
        self.failed = False

    async def __call__(self, event: AgentEvent) -> None:
        await super().__call__(event)
        if self.failed and self.keep_failing:
            raise Boom("listener still broken")
        if event["type"] == self.kind:
            self.seen += 1
            if self.seen == self.nth:
                self.failed = True
                raise Boom("listener broke")


class BrokenStream:
    """A stream function result that breaks the never-raise contract while iterating."""

    def __aiter__(self) -> AsyncIterator[AssistantMessageEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[AssistantMessageEvent]:
        raise Boom("socket exploded")
        yield  # pragma: no cover

    async def result(self) -> AssistantMessage:
        raise Boom("no result")

    async def aclose(self) -> None:
        pass


def _responses() -> list[Any]:
    return [reply(text("a", "b"), tool_call("quick", {"value": "x"})), reply("second"), reply("third")]


async def _run(
    config: AgentLoopConfig, model: ScriptedModel, emit: Recorder, stream_fn: Any = None
) -> list[AgentMessage]:
    tasks_before = asyncio.all_tasks()
    async with asyncio.timeout(10):  # a regression must fail, not hang on the hour-long tool
        result = await run_agent_loop(
            [user("go")], AgentContext(tools=[quick, slow]), config, emit, None, stream_fn or model
        )
    await asyncio.sleep(0)
    assert asyncio.all_tasks() <= tasks_before, "a task outlived the run"
    return result


def _assert_ended_with_error(recorder: Recorder, result: list[AgentMessage], step: str) -> None:
    last = result[-1]
    assert last["role"] == "assistant" and last["stopReason"] == "error"
    assert last.get("errorMessage", "").startswith(f"{step} failed: Boom"), last.get("errorMessage")
    assert recorder.types[-2:] == ["turn_end", "agent_end"]
    assert "message_end" in recorder.types[-3:]
    check_invariants(recorder.trace(result))


def _raises(*_: Any) -> Any:
    raise Boom("hook broke")


async def _async_raises(*_: Any) -> Any:
    raise Boom("hook broke")


def _config_with_hook(model: ModelInfo, hook: str, fn: Callable[..., Any]) -> AgentLoopConfig:
    """A config whose hook named ``hook`` is ``fn``: the tests take the hook's name as a
    parameter, so its keyword is known only at run time (hence the ``Any`` of the mapping)."""
    hooks: dict[str, Any] = {hook: fn}
    return AgentLoopConfig(model=model, **hooks)


def _second_call_raises() -> Any:
    calls = [0]

    async def poll() -> list[AgentMessage]:
        calls[0] += 1
        if calls[0] == 2:
            raise Boom("poll broke")
        return []

    return poll


HOOKS = {
    "convert_to_llm": _raises,
    "transform_context": _async_raises,
    "get_api_key": _raises,
    "get_system_prompt": _raises,
    "get_volatile_context": _raises,
    "should_stop_after_turn": _raises,
    "should_stop_before_turn": _raises,
    "get_follow_up_messages": _async_raises,
    "get_continuation_messages": _async_raises,
}


@pytest.mark.parametrize("hook", sorted(HOOKS))
async def test_a_raising_hook_ends_the_run_with_an_error_naming_it(hook: str) -> None:
    model = ScriptedModel(_responses())
    config = _config_with_hook(model.model, hook, HOOKS[hook])
    recorder = Recorder()
    result = await _run(config, model, recorder)
    _assert_ended_with_error(recorder, result, hook)


@pytest.mark.parametrize("first", [True, False])
async def test_a_raising_steering_poll_ends_the_run(first: bool) -> None:
    model = ScriptedModel(_responses())
    config = AgentLoopConfig(
        model=model.model, get_steering_messages=_async_raises if first else _second_call_raises()
    )
    recorder = Recorder()
    result = await _run(config, model, recorder)
    _assert_ended_with_error(recorder, result, "get_steering_messages")
    assert len(model.requests) == (0 if first else 1)


async def test_a_raising_stream_function() -> None:
    def stream_fn(model: ModelInfo, context: Context, options: SimpleStreamOptions | None) -> Any:
        raise Boom("provider bug")

    model = ScriptedModel()
    recorder = Recorder()
    result = await _run(AgentLoopConfig(model=model.model), model, recorder, stream_fn)
    _assert_ended_with_error(recorder, result, "stream function")
    assert recorder.types == [
        "agent_start", "turn_start", "message_start", "message_end",
        "message_start", "message_end", "turn_end", "agent_end",
    ]  # fmt: skip


async def test_a_stream_that_raises_while_iterating() -> None:
    def stream_fn(model: ModelInfo, context: Context, options: SimpleStreamOptions | None) -> BrokenStream:
        return BrokenStream()

    model = ScriptedModel()
    recorder = Recorder()
    result = await _run(AgentLoopConfig(model=model.model), model, recorder, stream_fn)
    _assert_ended_with_error(recorder, result, "model stream")


@pytest.mark.parametrize(
    ("kind", "nth"),
    [
        ("agent_start", 1),
        ("message_start", 1),
        ("message_update", 2),
        ("message_end", 2),  # the assistant message with the tool call
        ("tool_execution_start", 1),
        ("tool_execution_end", 1),
        ("message_start", 3),  # the tool result
        ("message_end", 3),
        ("turn_end", 1),
        ("turn_start", 2),
    ],
)
@pytest.mark.parametrize("keep_failing", [False, True])
async def test_a_raising_listener_ends_the_run(kind: str, nth: int, keep_failing: bool) -> None:
    model = ScriptedModel(_responses())
    recorder = FailingRecorder(kind, nth, keep_failing)
    result = await _run(AgentLoopConfig(model=model.model), model, recorder)
    _assert_ended_with_error(recorder, result, "event listener")


@pytest.mark.parametrize("kind", ["agent_start", "turn_start", "message_start"])
async def test_a_listener_failing_before_the_prompt_is_announced_keeps_the_prompt(kind: str) -> None:
    """The prompts are in the run's transcript before ``agent_start``, as pi's ``agentLoop`` puts
    them, and announced before the error reply: a listener failing on ``agent_start`` lost the
    user's prompt (the run's messages were the error reply alone, nothing announced it)."""
    model = ScriptedModel(_responses())
    recorder = FailingRecorder(kind)
    result = await _run(AgentLoopConfig(model=model.model), model, recorder)
    assert [m["role"] for m in result] == ["user", "assistant"] and result[0] == user("go")
    ended = [e["message"] for e in recorder.events if e["type"] == "message_end"]
    assert ended == result  # each announced once, the prompt before the error reply
    _assert_ended_with_error(recorder, result, "event listener")


async def test_a_listener_failing_in_a_parallel_batch_cancels_the_other_calls() -> None:
    model = ScriptedModel([reply(tool_call("slow", {"value": "s"}), tool_call("quick", {"value": "q"}))])
    recorder = FailingRecorder("tool_execution_end")
    result = await _run(AgentLoopConfig(model=model.model, tool_execution="parallel"), model, recorder)
    _assert_ended_with_error(recorder, result, "event listener")
    results = {m["toolCallId"]: m for m in result if m["role"] == "toolResult"}
    assert set(results) == {"call_1", "call_2"}
    assert results["call_1"]["isError"] is True, "the slow call was cancelled"
    assert results["call_2"]["isError"] is False, "the quick call ended: its real result is kept"
    assert results["call_2"]["content"] == [{"type": "text", "text": "q"}]


async def test_a_listener_failing_at_agent_end_changes_nothing_after_it() -> None:
    model = ScriptedModel([reply("only")])
    recorder = FailingRecorder("agent_end")
    result = await _run(AgentLoopConfig(model=model.model), model, recorder)
    assert recorder.types.count("agent_end") == 1
    assert recorder.types[-1] == "agent_end"
    assert result[-1]["role"] == "assistant" and result[-1]["stopReason"] == "stop"


async def test_continuation_hook_sees_turn_context() -> None:
    seen: list[TurnContext] = []

    async def continuation(turn: TurnContext, signal: AbortSignal | None) -> list[AgentMessage]:
        seen.append(turn)
        return []

    model = ScriptedModel([reply("done")])
    await _run(AgentLoopConfig(model=model.model, get_continuation_messages=continuation), model, Recorder())
    assert len(seen) == 1
    assert seen[0].context.messages[-1] is seen[0].message
    assert seen[0].tool_results == []


@pytest.mark.parametrize("tool_execution", ["parallel", "sequential"])
async def test_a_listener_failing_on_a_tool_update_ends_the_run(tool_execution: ToolExecutionMode) -> None:
    from tether.agent import AgentTool, AgentToolResult

    async def progress(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
        on_update(AgentToolResult(content=[{"type": "text", "text": "half"}], details={}))
        await asyncio.sleep(0)
        return AgentToolResult(content=[{"type": "text", "text": "done"}], details={})

    steps = AgentTool(
        name="steps", label="steps", description="", parameters={"type": "object"}, execute=progress
    )
    model = ScriptedModel([reply(tool_call("steps"), tool_call("quick", {"value": "q"})), reply("never")])
    recorder = FailingRecorder("tool_execution_update")
    result = await run_agent_loop(
        [user("go")],
        AgentContext(tools=[steps, quick]),
        AgentLoopConfig(model=model.model, tool_execution=tool_execution),
        recorder,
        None,
        model,
    )
    _assert_ended_with_error(recorder, result, "event listener")
    assert {m["toolCallId"] for m in result if m["role"] == "toolResult"} == {"call_1", "call_2"}


@tool
async def stray_cancel() -> str:
    """Reads the result of a task it cancelled itself: raises CancelledError, uncancelled."""
    inner = asyncio.ensure_future(asyncio.sleep(3600, "never"))
    inner.cancel()
    await asyncio.sleep(0)
    return inner.result()


@pytest.mark.parametrize("with_signal", [False, True])
async def test_a_tool_raising_cancelled_error_on_its_own_is_an_error_result(with_signal: bool) -> None:
    """A ``CancelledError`` a tool raised while nobody cancelled the run went up through the loop:
    the caller's ``await`` raised it, the call got no result and no ``agent_end`` came."""
    from tether.ai.abort import AbortController

    model = ScriptedModel([reply(tool_call("stray_cancel", {})), reply("after")])
    recorder = Recorder()
    signal = AbortController().signal if with_signal else None
    async with asyncio.timeout(10):
        result = await run_agent_loop(
            [user("go")],
            AgentContext(tools=[stray_cancel]),
            AgentLoopConfig(model=model.model),
            recorder,
            signal,
            model,
        )
    tool_result = next(m for m in result if m["role"] == "toolResult")
    assert tool_result["isError"] and "CancelledError" in str(tool_result["content"])
    assert result[-1]["role"] == "assistant" and result[-1]["stopReason"] == "stop"
    assert recorder.types[-1] == "agent_end"
    check_invariants(recorder.trace(result))


async def test_cancelling_the_caller_during_a_tool_still_cancels_the_run() -> None:
    model = ScriptedModel([reply(tool_call("slow", {"value": "x"})), reply("never")])
    run = asyncio.ensure_future(
        run_agent_loop(
            [user("go")],
            AgentContext(tools=[slow]),
            AgentLoopConfig(model=model.model),
            Recorder(),
            None,
            model,
        )
    )
    while not model.requests:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run


@pytest.mark.parametrize("hook", ["before_tool_call", "after_tool_call"])
async def test_a_tool_hook_returning_a_wrong_shape_fails_that_call_naming_it(hook: str) -> None:
    """pi's hooks answer an object literal (``{block: true}``); one here that returns a dict (or
    anything but its result class or ``None``) fails the call it was asked about, as a hook that
    raises does: it ended the whole run as "agent loop failed: AttributeError: 'dict' object has
    no attribute 'block'"."""

    async def wrong(*_: Any) -> Any:
        return {"block": True, "content": []}

    model = ScriptedModel(_responses())
    recorder = Recorder()
    result = await _run(_config_with_hook(model.model, hook, wrong), model, recorder)
    answer = next(m for m in result if m["role"] == "toolResult")
    assert answer["isError"] and answer["content"] == [
        {"type": "text", "text": f"{hook} returned a dict, not {hook.title().replace('_', '')}Result or None"}
    ]
    assert result[-1]["role"] == "assistant" and result[-1]["stopReason"] == "stop"
    check_invariants(recorder.trace(result))


@pytest.mark.parametrize(
    ("where", "said"),
    [
        ("tool", "Tool quick returned content as a str, not a list of blocks"),
        ("after_tool_call", "after_tool_call returned content as a str, not a list of blocks"),
    ],
)
async def test_content_given_as_a_string_fails_that_call_naming_who_gave_it(where: str, said: str) -> None:
    """``AgentToolResult(content="text")`` from a tool, or ``AfterToolCallResult(content="text")``
    from the hook whose content replaces it (pi's type, and this one's, is a list of blocks), was
    kept as is: a session failed to store the message ("event listener failed: WireError:
    message.content: expected an array"), a bare loop sent it on to the provider."""
    from tether.agent.hooks import AfterToolCallResult

    @tool
    async def quick(value: str) -> AgentToolResult[Any]:
        """Answer at once, wrongly when the tool is the one tested."""
        content: Any = value if where == "tool" else [{"type": "text", "text": value}]
        return AgentToolResult[Any](content=content)

    async def after(*_: Any) -> AfterToolCallResult:
        content: Any = "rewritten"
        return AfterToolCallResult(content=content)

    model = ScriptedModel(_responses())
    recorder = Recorder()
    config = (
        AgentLoopConfig(model=model.model)
        if where == "tool"
        else _config_with_hook(model.model, "after_tool_call", after)
    )
    result = await run_agent_loop([user("go")], AgentContext(tools=[quick]), config, recorder, None, model)
    answer = next(m for m in result if m["role"] == "toolResult")
    assert answer["isError"] and answer["content"] == [{"type": "text", "text": said}]
    assert decode_message(answer) == answer  # what a session stores
    assert result[-1]["role"] == "assistant" and result[-1]["stopReason"] == "stop"
    check_invariants(recorder.trace(result))


async def test_plain_function_tool_hooks_are_called_as_the_other_hooks_are() -> None:
    """Every other hook may be a plain function; these two failed each call with "object
    NoneType can't be used in 'await' expression"."""
    from tether.agent.hooks import AfterToolCallResult, BeforeToolCallResult

    asked: list[str] = []

    def before(context: Any, signal: Any) -> BeforeToolCallResult | None:
        asked.append("before")
        return BeforeToolCallResult(block=True, reason="not now") if context.args.value == "no" else None

    def after(context: Any, signal: Any) -> AfterToolCallResult:
        asked.append("after")
        return AfterToolCallResult(details={"seen": True})

    model = ScriptedModel(
        [reply(tool_call("quick", {"value": "x"}), tool_call("quick", {"value": "no"})), reply("done")]
    )
    config = AgentLoopConfig(model=model.model, before_tool_call=before, after_tool_call=after)  # pyright: ignore[reportArgumentType]
    result = await _run(config, model, Recorder())
    answers = [(m["isError"], m["content"], m.get("details")) for m in result if m["role"] == "toolResult"]
    assert answers == [
        (False, [{"type": "text", "text": "x"}], {"seen": True}),
        (True, [{"type": "text", "text": "not now"}], {}),  # blocked: never ran, nothing to finalize
    ]
    assert sorted(asked) == ["after", "before", "before"]


@pytest.mark.parametrize(
    ("hook", "returned"),
    [
        ("convert_to_llm", 42),
        ("get_continuation_messages", "more"),
        ("get_continuation_messages", {"role": "user"}),
        ("get_follow_up_messages", 7),
    ],
)
async def test_a_hook_answering_no_list_of_messages_ends_the_run_naming_it(
    hook: str, returned: object
) -> None:
    """It was blamed on another step, "stream function failed: TypeError" (``convert_to_llm``'s
    ``42`` went to the provider) or "agent loop failed: TypeError: 'int' object is not iterable";
    a string became a message per letter and a dict its keys. The stream still ends with stop
    reason ``error``, the invariants kept, nothing raised."""
    model = ScriptedModel(_responses())
    recorder = Recorder()
    result = await _run(_config_with_hook(model.model, hook, lambda *_: returned), model, recorder)
    last = result[-1]
    assert last["role"] == "assistant" and last["stopReason"] == "error"
    kind = type(returned).__name__
    assert last.get("errorMessage") == f"{hook} failed: TypeError: it returned {kind}, not a list of messages"
    check_invariants(recorder.trace(result))


async def test_a_transform_context_answering_no_list_ends_the_run_naming_it() -> None:
    """It was blamed on the next step: "convert_to_llm failed: TypeError: object of type 'NoneType'
    has no len()", a hook the program never set."""

    async def forgets_to_return(messages: list[AgentMessage], signal: AbortSignal | None) -> Any:
        messages.append(user("note"))

    model = ScriptedModel(_responses())
    recorder = Recorder()
    result = await _run(
        AgentLoopConfig(model=model.model, transform_context=forgets_to_return), model, recorder
    )
    assert result[-1].get("errorMessage") == (
        "transform_context failed: TypeError: it returned NoneType, not a list of messages"
    )
    check_invariants(recorder.trace(result))
