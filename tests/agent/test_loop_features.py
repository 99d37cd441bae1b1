"""Seed-001 contracts beyond the reference, and the event-stream form of the loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from agent_support import Recorder, check_invariants
from pydantic import BaseModel

from narrowing import content_of
from tether.agent import (
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    AgentToolResult,
    ToolUpdate,
    TurnContext,
    agent_loop,
    agent_loop_continue,
    run_agent_loop,
    tool,
)
from tether.ai.abort import AbortController, AbortSignal
from tether.ai.event_stream import AssistantMessageEventStream, new_assistant_message
from tether.ai.types import SimpleStreamOptions
from tether.testing.conformance import context_message
from tether.testing.scripted import ScriptedModel, reply, text, thinking, tool_call
from tether.wire import AgentMessage


def user(content: str) -> AgentMessage:
    return {"role": "user", "content": content, "timestamp": 0}


@tool
async def echo(value: str) -> str:
    """Echo the value."""
    return value


async def run(
    model: ScriptedModel,
    config: AgentLoopConfig | None = None,
    tools: list[AgentTool] | None = None,
    prompt: str = "go",
    signal: AbortSignal | None = None,
    **context: Any,
) -> tuple[Recorder, list[AgentMessage]]:
    recorder = Recorder()
    result = await run_agent_loop(
        [user(prompt)],
        AgentContext(tools=tools if tools is not None else [echo], **context),
        config or AgentLoopConfig(model=model.model),
        recorder,
        signal,
        model,
    )
    return recorder, result


async def test_system_prompt_and_volatile_context_are_resolved_before_every_call() -> None:
    model = ScriptedModel([reply(tool_call("echo", {"value": "a"})), reply("done")])
    state = {"prompt": "first prompt", "volatile": "12:00"}

    @tool
    async def advance() -> str:
        """Move the clock."""
        state.update(prompt="second prompt", volatile="12:01")
        return "ok"

    model.responses[0] = reply(tool_call("advance"))
    config = AgentLoopConfig(
        model=model.model,
        get_system_prompt=lambda: state["prompt"],
        get_volatile_context=lambda: state["volatile"],
    )
    await run(model, config, tools=[advance], system_prompt="ignored")
    sent = [(r.context.get("systemPrompt"), r.context.get("volatileContext")) for r in model.requests]
    assert sent == [("first prompt", "12:00"), ("second prompt", "12:01")]


async def test_context_volatile_content_is_sent_only_when_set() -> None:
    model = ScriptedModel([reply("a")])
    await run(model, volatile_context="now: 12:00")
    model.push(reply("b"))
    await run(model)
    assert model.requests[0].context.get("volatileContext") == "now: 12:00"
    assert "volatileContext" not in model.requests[1].context


async def test_should_stop_before_turn_ends_the_run_before_more_model_calls() -> None:
    model = ScriptedModel([reply(tool_call("echo", {"value": "a"})), reply("never")])
    checks: list[int] = []
    polls: list[str] = []

    async def steering() -> list[AgentMessage]:
        polls.append("steering")
        return []

    def stop() -> bool:
        checks.append(len(model.requests))
        return True

    config = AgentLoopConfig(model=model.model, should_stop_before_turn=stop, get_steering_messages=steering)
    recorder, result = await run(model, config)
    assert checks == [1], "checked once, after the first turn, never before it"
    assert polls == ["steering"], "only the poll before the first turn"
    assert len(model.requests) == 1
    assert recorder.types[-2:] == ["turn_end", "agent_end"]
    assert [m["role"] for m in result] == ["user", "assistant", "toolResult"]


async def test_should_stop_before_turn_false_keeps_going() -> None:
    model = ScriptedModel([reply(tool_call("echo", {"value": "a"})), reply("done")])
    config = AgentLoopConfig(model=model.model, should_stop_before_turn=lambda: False)
    _, result = await run(model, config)
    assert len(model.requests) == 2
    assert result[-1]["role"] == "assistant"


async def test_continuation_messages_come_after_follow_ups_run_dry() -> None:
    model = ScriptedModel([reply("one"), reply("two"), reply("three")])
    follow_ups = [[user("follow")]]
    seen: list[tuple[str, int, bool]] = []

    async def get_follow_ups() -> list[AgentMessage]:
        return follow_ups.pop(0) if follow_ups else []

    async def continuation(turn: TurnContext, signal: AbortSignal | None) -> list[AgentMessage]:
        block = turn.message["content"][0]
        assert block["type"] == "text"
        seen.append((block["text"], len(turn.new_messages), signal is not None))
        return [user("keep going")] if len(seen) == 1 else []

    config = AgentLoopConfig(
        model=model.model, get_follow_up_messages=get_follow_ups, get_continuation_messages=continuation
    )
    _, result = await run(model, config, signal=AbortController().signal)
    assert seen == [("two", 4, True), ("three", 6, True)], "follow-ups first, then continuation"
    texts = [m["content"] for m in result if m["role"] == "user"]
    assert texts == ["go", "follow", "keep going"]


async def test_prepare_arguments_runs_before_validation() -> None:
    calls: list[Any] = []

    async def execute(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
        calls.append(params)
        return AgentToolResult(content=[{"type": "text", "text": "ok"}])

    def legacy(args: Any) -> Any:
        return {"path": args["file"]} if "file" in args else args

    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    read = AgentTool("read", "read", "Read", schema, execute, prepare_arguments=legacy)
    model = ScriptedModel(
        [reply(tool_call("read", {"file": "a.txt"}), tool_call("read", {"path": "b.txt"})), reply("ok")]
    )
    recorder, _ = await run(model, tools=[read])
    assert calls == [{"path": "a.txt"}, {"path": "b.txt"}]
    start = next(e for e in recorder.events if e["type"] == "tool_execution_start")
    assert start["args"] == {"file": "a.txt"}, "events show what the model sent"


async def test_a_raising_prepare_arguments_is_an_error_result() -> None:
    def broken(args: Any) -> Any:
        raise ValueError("cannot read legacy arguments")

    async def execute(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
        raise AssertionError("must not run")

    bad = AgentTool("bad", "bad", "", {"type": "object"}, execute, prepare_arguments=broken)
    model = ScriptedModel([reply(tool_call("bad")), reply("ok")])
    _, result = await run(model, tools=[bad])
    tool_result = next(m for m in result if m["role"] == "toolResult")
    assert tool_result["isError"] is True
    assert tool_result["content"] == [{"type": "text", "text": "cannot read legacy arguments"}]


async def test_api_key_is_resolved_per_call_with_fallback() -> None:
    model = ScriptedModel([reply(tool_call("echo", {"value": "a"})), reply("done")])
    keys = iter(["token-1", None])
    providers: list[str] = []

    def get_api_key(provider: str) -> str | None:
        providers.append(provider)
        return next(keys)

    config = AgentLoopConfig(
        model=model.model, get_api_key=get_api_key, options=SimpleStreamOptions(api_key="static")
    )
    await run(model, config)
    assert providers == ["scripted", "scripted"]
    assert [r.options.api_key for r in model.requests if r.options] == ["token-1", "static"]


async def test_thinking_level_service_tier_and_signal_reach_the_stream_function() -> None:
    model = ScriptedModel([reply("ok")])
    controller = AbortController()
    config = AgentLoopConfig(
        model=model.model, options=SimpleStreamOptions(reasoning="high", service_tier="flex", temperature=0.2)
    )
    await run(model, config, signal=controller.signal)
    options = model.requests[0].options
    assert options is not None
    assert (options.reasoning, options.service_tier, options.temperature) == ("high", "flex", 0.2)
    assert options.signal is controller.signal


async def test_tool_updates_arrive_in_order_and_late_ones_are_dropped() -> None:
    leaked: list[ToolUpdate] = []

    async def execute(
        call_id: str, params: Any, signal: Any, on_update: ToolUpdate | None
    ) -> AgentToolResult[Any]:
        assert on_update is not None
        for step in ("1/3", "2/3", "3/3"):
            on_update(AgentToolResult(content=[{"type": "text", "text": step}]))
            await asyncio.sleep(0)
        leaked.append(on_update)
        return AgentToolResult(content=[{"type": "text", "text": "done"}])

    job = AgentTool("job", "job", "", {"type": "object"}, execute)
    model = ScriptedModel([reply(tool_call("job")), reply("ok")])
    recorder, _ = await run(model, tools=[job])
    leaked[0](AgentToolResult(content=[{"type": "text", "text": "too late"}]))
    await asyncio.sleep(0)
    updates = [e["partialResult"].content[0] for e in recorder.events if e["type"] == "tool_execution_update"]
    assert [u["text"] for u in updates if u["type"] == "text"] == ["1/3", "2/3", "3/3"]
    end = recorder.types.index("tool_execution_end")
    assert max(i for i, t in enumerate(recorder.types) if t == "tool_execution_update") < end


async def test_tool_calls_cut_by_the_token_limit_are_not_run() -> None:
    ran: list[str] = []

    @tool
    async def write(path: str, content: str) -> str:
        """Write a file."""
        ran.append(path)
        return "written"

    model = ScriptedModel(
        [
            reply("writing", tool_call("write", {"path": "a.txt"}), stop_reason="length"),
            reply("retrying later"),
        ]
    )
    recorder, result = await run(model, tools=[write])
    assert ran == []
    tool_result = next(m for m in result if m["role"] == "toolResult")
    assert tool_result["isError"] is True
    block = tool_result["content"][0]
    assert block["type"] == "text" and "output token limit" in block["text"]
    assert len(model.requests) == 2, "the loop continues so the model can retry"
    assert "tool_execution_end" in recorder.types
    check_invariants(recorder.trace(result))


async def test_pydantic_model_tools_receive_the_model_instance() -> None:
    class Move(BaseModel):
        src: str
        dst: str
        overwrite: bool = False

    received: list[Any] = []

    async def execute(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
        received.append(params)
        return AgentToolResult(content=[{"type": "text", "text": "moved"}])

    move = AgentTool("move", "Move", "Move a file", Move, execute)
    model = ScriptedModel(
        [reply(tool_call("move", {"src": "a", "dst": "b", "overwrite": "true"})), reply("ok")]
    )
    await run(model, tools=[move])
    assert received == [Move(src="a", dst="b", overwrite=True)]
    sent_tool = model.requests[0].context.get("tools", [])[0]
    assert sent_tool["parameters"]["required"] == ["src", "dst"]


async def test_default_convert_to_llm_drops_app_messages() -> None:
    model = ScriptedModel([reply("ok")])
    note: AgentMessage = {
        "role": "custom",
        "customType": "note",
        "content": "ui only",
        "display": True,
        "timestamp": 0,
    }
    await run(model, messages=[note])
    assert [m["role"] for m in model.requests[0].context["messages"]] == ["user"]


async def test_event_stream_form_gives_the_same_events_and_the_result() -> None:
    def fresh() -> ScriptedModel:
        return ScriptedModel(
            [reply(thinking("hm"), text("a", "b"), tool_call("echo", {"value": "x"})), reply("done")]
        )

    callback, expected = await run(fresh())
    model = fresh()
    stream = agent_loop(
        [user("go")], AgentContext(tools=[echo]), AgentLoopConfig(model=model.model), None, model
    )
    types = [event["type"] async for event in stream]
    result = await stream.result()
    assert types == callback.types
    assert [m["role"] for m in result] == [m["role"] for m in expected]


async def test_event_stream_can_be_closed_early() -> None:
    @tool
    async def hang() -> str:
        """Never returns."""
        await asyncio.sleep(3600)
        return "never"

    model = ScriptedModel([reply(tool_call("hang"))])
    stream = agent_loop(
        [user("go")], AgentContext(tools=[hang]), AgentLoopConfig(model=model.model), None, model
    )
    async for event in stream:
        if event["type"] == "tool_execution_start":
            break
    before = len(asyncio.all_tasks())
    await stream.aclose()
    assert len(asyncio.all_tasks()) < before


@pytest.mark.parametrize(
    ("messages", "error"),
    [
        ([], "Cannot continue: no messages in context"),
        ("assistant", "Cannot continue from message role: assistant"),
    ],
)
async def test_continue_preconditions(messages: Any, error: str) -> None:
    model = ScriptedModel()
    if messages == "assistant":
        messages = [user("q"), context_message({"role": "assistant", "content": []})]
    context = AgentContext(messages=messages)
    with pytest.raises(ValueError, match=error):
        agent_loop_continue(context, AgentLoopConfig(model=model.model), None, model)


async def test_without_stream_fn_the_loop_uses_the_registry_stream_simple(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tether.ai.api

    model = ScriptedModel([reply("from stream_simple")])
    monkeypatch.setattr(tether.ai.api, "stream_simple", model)
    result = await run_agent_loop(
        [user("go")], AgentContext(), AgentLoopConfig(model=model.model), Recorder()
    )
    assert content_of(result[-1]) == [{"type": "text", "text": "from stream_simple"}]


async def test_a_closed_event_stream_ends_iteration_and_has_no_result() -> None:
    model = ScriptedModel([reply("a", "b")])
    stream = agent_loop([user("go")], AgentContext(), AgentLoopConfig(model=model.model), None, model)
    await stream.aclose()
    assert [event async for event in stream] == []  # closed before its first step: nothing ran
    with pytest.raises(RuntimeError, match="closed"):
        await stream.result()


async def test_a_hook_that_rewrites_the_transcript_in_place_is_seen_by_the_next_request() -> None:
    """The request is filtered incrementally; a hook handed the transcript (here
    ``should_stop_after_turn``) may change what was already sent, and the next request follows."""
    model = ScriptedModel([reply(tool_call("echo", {"value": "a"})), reply("done")])

    def hide_the_prompt(turn: TurnContext) -> bool:
        # a role no message type has: what a hook may write, and what the filter must drop
        turn.context.messages[0] = {"role": "note", "content": "hidden", "timestamp": 0}  # type: ignore[typeddict-item]
        return False

    await run(model, AgentLoopConfig(model=model.model, should_stop_after_turn=hide_the_prompt))
    first, second = (request.context["messages"] for request in model.requests)
    assert [m["role"] for m in first] == ["user"]
    assert [m["role"] for m in second] == ["assistant", "toolResult"]


def odd_provider(steps: bool) -> Any:
    """A stream function whose provider sends a delta before ``start`` (dropped), ``start``
    twice for one message, then replaces its partial with a new object: as a steps source or
    an asynchronous one."""

    def events(model: Any) -> list[Any]:
        first = new_assistant_message(model)
        first["content"] = [{"type": "text", "text": "a"}]
        second: Any = {**first, "content": [{"type": "text", "text": "ab"}]}
        done: Any = {**second, "stopReason": "stop"}
        return [
            {"type": "text_delta", "contentIndex": 0, "delta": "early", "partial": first},
            {"type": "start", "partial": first},
            {"type": "start", "partial": first},
            {"type": "text_delta", "contentIndex": 0, "delta": "b", "partial": second},
            {"type": "done", "reason": "stop", "message": done},
        ]

    def stream_fn(model: Any, context: Any, options: Any = None) -> AssistantMessageEventStream:
        if steps:
            return AssistantMessageEventStream.of_steps(model, (event for event in events(model)))

        async def source() -> AsyncIterator[Any]:
            for event in events(model):
                yield event

        return AssistantMessageEventStream(model, source())

    return stream_fn


@pytest.mark.parametrize("steps", [True, False])
async def test_the_transcript_holds_the_streamed_message_once_whatever_the_provider_sends(
    steps: bool,
) -> None:
    """Each event is read once by the stream, which hands the loop its partial: the loop still
    drops what comes before ``start``, starts the message once, and follows a partial the
    provider replaced (the transcript's last message and every event's copy are the newest)."""
    recorder = Recorder()
    result = await run_agent_loop(
        [user("go")],
        AgentContext(),
        AgentLoopConfig(model=ScriptedModel().model),
        recorder,
        None,
        odd_provider(steps),
    )
    streamed = [
        e for e in recorder.events if e["type"] in ("message_start", "message_update", "message_end")
    ][2:]
    assert [e["type"] for e in streamed] == [
        "message_start",
        "message_update",
        "message_update",
        "message_end",
    ]
    update = streamed[2]
    assert update["type"] == "message_update"
    assert content_of(update["message"]) == [{"type": "text", "text": "ab"}]
    assert [m["role"] for m in result] == ["user", "assistant"]
    assert content_of(result[1]) == [{"type": "text", "text": "ab"}]


async def test_a_context_of_a_subclass_keeps_its_class_and_fields_in_the_run() -> None:
    """The run copies its context; a caller's subclass (a field of its own for its hooks) stays
    that class in what the hooks see, as ``dataclasses.replace`` kept it."""
    from dataclasses import dataclass

    @dataclass(slots=True)
    class TaggedContext(AgentContext):
        tag: str = ""

    seen: list[AgentContext] = []

    async def continuation(turn: TurnContext, signal: AbortSignal | None) -> list[AgentMessage]:
        seen.append(turn.context)
        return []

    model = ScriptedModel([reply("done")])
    given = TaggedContext(system_prompt="sys", tag="mine")
    await run_agent_loop(
        [user("go")],
        given,
        AgentLoopConfig(model=model.model, get_continuation_messages=continuation),
        _drop,
        None,
        model,
    )
    (context,) = seen
    assert type(context) is TaggedContext and context.tag == "mine" and context.system_prompt == "sys"
    assert context is not given and given.messages == []


async def _drop(event: Any) -> None:
    """An event sink that keeps nothing."""
