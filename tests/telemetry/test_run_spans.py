"""The span tree of instrumented runs, checked span by span against an in-memory SDK.

Scripted runs (``tether.testing.ScriptedModel``): parallel tool calls with one that raises,
steering, an aborted call, a provider error, failing hooks and a cancelled run. Names, kinds,
parents, attributes, events and statuses are all checked; content attributes appear only when
asked for.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, cast

import pytest
from opentelemetry.trace import SpanKind, StatusCode
from telemetry_support import ECHO, Otel, parent_of, span_id

from tether import telemetry
from tether.agent import (
    Agent,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentTool,
    AgentToolResult,
    run_agent_loop,
)
from tether.ai.abort import AbortSignal
from tether.ai.types import SimpleStreamOptions
from tether.telemetry.spans import MAX_ERROR_CHARS, TOOL_TEXT_NOT_CAPTURED
from tether.testing.scripted import ScriptedModel, reply, text, tool_call
from tether.testing.spans import span_tree
from tether.wire import UserMessage

CONTENT_KEYS = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.definitions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}


def user(text_: str) -> UserMessage:
    return {"role": "user", "content": text_, "timestamp": 0}


def three_echoes_then_done() -> ScriptedModel:
    return ScriptedModel(
        [
            reply(
                tool_call("echo", {"text": "slow", "delay": 0.05}, id="c1"),
                tool_call("echo", {"text": "fast", "delay": 0.01}, id="c2"),
                tool_call("echo", {"text": "boom"}, id="c3"),
            ),
            reply("done"),
        ]
    )


async def run_with_steering(otel: Otel, *, capture_content: bool) -> None:
    """Three parallel echoes (the third raises); a steering message arrives while they run."""
    model = three_echoes_then_done()
    agent = Agent(
        model=model.model,
        system_prompt="be brief",
        tools=[ECHO],
        stream_fn=model,
        options=SimpleStreamOptions(session_id="session-1"),
        instrumentation=otel.instrumentation(capture_content=capture_content),
    )

    def steer_once(event: AgentEvent, signal: AbortSignal) -> None:
        if event["type"] == "tool_execution_start" and event["toolCallId"] == "c1":
            agent.steer(user("and then say done"))

    agent.subscribe(steer_once)
    await agent.prompt("echo three things")
    assert [m["role"] for m in agent.messages] == [
        "user",
        "assistant",
        *["toolResult"] * 3,
        "user",
        "assistant",
    ]


async def test_a_run_with_parallel_tools_and_steering_is_one_tree(otel: Otel) -> None:
    await run_with_steering(otel, capture_content=False)
    spans = otel.spans()
    assert [s.name for s in spans] == [
        "invoke_agent tether",
        "chat scripted",
        "execute_tool echo",
        "execute_tool echo",
        "execute_tool echo",
        "chat scripted",
    ]
    run, chat1, slow, fast, boom, chat2 = spans

    assert parent_of(run) is None
    assert all(parent_of(span) == span_id(run) for span in spans[1:])
    assert [s.kind for s in spans] == [
        SpanKind.INTERNAL,
        SpanKind.CLIENT,
        *[SpanKind.INTERNAL] * 3,
        SpanKind.CLIENT,
    ]

    assert dict(run.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "tether",
        "gen_ai.provider.name": "scripted",
        "gen_ai.request.model": "scripted",
        "gen_ai.conversation.id": "session-1",
        "gen_ai.usage.input_tokens": 0,
        "gen_ai.usage.output_tokens": 0,
        "tether.usage.cost": 0.0,
    }
    assert run.status.status_code is StatusCode.UNSET
    # the steering message was delivered in the second turn, before its model call
    assert [(e.name, dict(e.attributes or {})) for e in run.events] == [
        ("tether.message", {"tether.message.role": "user", "tether.turn": 2})
    ]
    assert chat2.start_time is not None and run.events[0].timestamp <= chat2.start_time

    for turn, chat, reason in ((1, chat1, "tool_call"), (2, chat2, "stop")):
        attributes = dict(chat.attributes or {})
        first_chunk = attributes.pop("gen_ai.response.time_to_first_chunk")
        assert isinstance(first_chunk, float) and first_chunk > 0
        assert attributes == {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "scripted",
            "gen_ai.request.model": "scripted",
            "tether.api": "scripted",
            "gen_ai.request.stream": True,
            "tether.turn": turn,
            "gen_ai.conversation.id": "session-1",
            "gen_ai.response.model": "scripted",
            "gen_ai.response.finish_reasons": (reason,),
            "gen_ai.usage.input_tokens": 0,
            "gen_ai.usage.output_tokens": 0,
            "tether.usage.cost": 0.0,
        }
        assert chat.status.status_code is StatusCode.UNSET

    for span, call_id in ((slow, "c1"), (fast, "c2"), (boom, "c3")):
        attributes = dict(span.attributes or {})
        assert attributes.pop("error.type", None) == ("ValueError" if span is boom else None)
        assert attributes == {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "echo",
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.description": "Echo a text back",
        }
    assert slow.status.status_code is StatusCode.UNSET and fast.status.status_code is StatusCode.UNSET
    # the tool's error text is content (a failed command's output): not captured
    assert boom.status.status_code is StatusCode.ERROR and boom.status.description == TOOL_TEXT_NOT_CAPTURED
    assert [e.name for e in boom.events] == ["exception"]
    assert dict(boom.events[0].attributes or {})["exception.type"] == "ValueError"

    # parallel: the calls overlap, the fast one ends first; the next model call waits for all
    assert slow.end_time and fast.end_time and boom.end_time and chat1.end_time and chat2.start_time
    assert fast.start_time and slow.start_time
    assert slow.start_time < fast.end_time and fast.start_time < slow.end_time
    assert fast.end_time < slow.end_time
    assert chat1.end_time <= slow.start_time
    assert max(slow.end_time, fast.end_time, boom.end_time) <= chat2.start_time


async def test_content_is_recorded_only_when_asked_for(otel: Otel) -> None:
    await run_with_steering(otel, capture_content=False)
    assert not any(CONTENT_KEYS & set(span.attributes or {}) for span in otel.spans())


async def test_captured_content_follows_the_conventions_shapes(otel: Otel) -> None:
    await run_with_steering(otel, capture_content=True)
    _run, chat1, slow, _fast, boom, chat2 = otel.spans()
    first = dict(chat1.attributes or {})
    assert json.loads(str(first["gen_ai.system_instructions"])) == [{"type": "text", "content": "be brief"}]
    assert json.loads(str(first["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": "echo three things"}]}
    ]
    definitions = json.loads(str(first["gen_ai.tool.definitions"]))
    assert [(d["type"], d["name"], d["description"]) for d in definitions] == [
        ("function", "echo", "Echo a text back")
    ]
    output = json.loads(str(first["gen_ai.output.messages"]))
    assert output == [
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": "c1",
                    "name": "echo",
                    "arguments": {"delay": 0.05, "text": "slow"},
                },
                {
                    "type": "tool_call",
                    "id": "c2",
                    "name": "echo",
                    "arguments": {"delay": 0.01, "text": "fast"},
                },
                {"type": "tool_call", "id": "c3", "name": "echo", "arguments": {"text": "boom"}},
            ],
            "finish_reason": "tool_call",
        }
    ]
    second_input = json.loads(str(dict(chat2.attributes or {})["gen_ai.input.messages"]))
    assert [m["role"] for m in second_input] == ["user", "assistant", "tool", "tool", "tool", "user"]
    assert second_input[2]["parts"] == [
        {"type": "tool_call_response", "id": "c1", "response": [{"type": "text", "content": "slow"}]}
    ]
    assert second_input[-1]["parts"] == [{"type": "text", "content": "and then say done"}]  # the steering
    assert json.loads(str(dict(chat2.attributes or {})["gen_ai.output.messages"])) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "done"}], "finish_reason": "stop"}
    ]

    slow_attributes = dict(slow.attributes or {})
    assert json.loads(str(slow_attributes["gen_ai.tool.call.arguments"])) == {"delay": 0.05, "text": "slow"}
    assert json.loads(str(slow_attributes["gen_ai.tool.call.result"])) == "slow"
    # a failed call has arguments but no result: the error is the span's status
    assert "gen_ai.tool.call.result" not in (boom.attributes or {})
    assert boom.status.description == "boom!"
    assert dict(boom.events[0].attributes or {})["exception.message"] == "boom!"
    assert json.loads(str(dict(boom.attributes or {})["gen_ai.tool.call.arguments"])) == {"text": "boom"}


async def test_an_aborted_model_call_fails_its_span_and_the_run(otel: Otel) -> None:
    model = ScriptedModel([reply(text("one ", "two ", "three"))])
    agent = Agent(model=model.model, stream_fn=model, instrumentation=otel.instrumentation())

    def abort_on_first_delta(event: AgentEvent, signal: AbortSignal) -> None:
        if event["type"] == "message_update":
            agent.abort()

    agent.subscribe(abort_on_first_delta)
    await agent.prompt("count")
    assert agent.messages[-1]["role"] == "assistant" and agent.messages[-1]["stopReason"] == "aborted"

    run, chat = otel.spans()
    assert parent_of(chat) == span_id(run)
    attributes = dict(chat.attributes or {})
    assert attributes["error.type"] == "aborted"
    assert attributes["gen_ai.response.finish_reasons"] == ("aborted",)
    assert "gen_ai.response.time_to_first_chunk" in attributes  # it had started streaming
    assert chat.status.status_code is StatusCode.ERROR and chat.status.description == "Request was aborted"
    assert dict(run.attributes or {})["error.type"] == "aborted"
    assert run.status.status_code is StatusCode.ERROR and run.status.description == "Request was aborted"


async def test_a_provider_error_fails_its_span_and_the_run(otel: Otel) -> None:
    model = ScriptedModel(
        [reply(tool_call("echo", {"text": "a"}, id="c1")), reply("partial", error="upstream overloaded")]
    )
    agent = Agent(model=model.model, tools=[ECHO], stream_fn=model, instrumentation=otel.instrumentation())
    await agent.prompt("go")

    run, chat1, tool, chat2 = otel.spans()
    assert [s.name for s in (run, chat1, tool, chat2)] == [
        "invoke_agent tether",
        "chat scripted",
        "execute_tool echo",
        "chat scripted",
    ]
    assert chat1.status.status_code is StatusCode.UNSET and tool.status.status_code is StatusCode.UNSET
    attributes = dict(chat2.attributes or {})
    assert attributes["error.type"] == "_OTHER"  # no HTTP status: the conventions' fallback
    assert attributes["gen_ai.response.finish_reasons"] == ("error",)
    assert chat2.status.status_code is StatusCode.ERROR and chat2.status.description == "upstream overloaded"
    assert dict(run.attributes or {})["error.type"] == "_OTHER"
    assert run.status.status_code is StatusCode.ERROR and run.status.description == "upstream overloaded"


async def test_a_stream_function_that_raises_is_recorded_as_the_exception(otel: Otel) -> None:
    def broken(*args: Any) -> Any:
        raise ConnectionRefusedError("no route to the model")

    model = ScriptedModel()
    agent = Agent(model=model.model, stream_fn=broken, instrumentation=otel.instrumentation())
    await agent.prompt("hi")

    run, chat = otel.spans()
    assert dict(chat.attributes or {})["error.type"] == "ConnectionRefusedError"
    assert chat.status.description == "no route to the model"
    assert [e.name for e in chat.events] == ["exception"]
    assert dict(run.attributes or {})["error.type"] == "ConnectionRefusedError"
    assert run.status.description == "stream function failed: ConnectionRefusedError: no route to the model"


async def test_a_failing_listener_names_its_exception_on_the_run(otel: Otel) -> None:
    model = ScriptedModel([reply("hello")])
    agent = Agent(model=model.model, stream_fn=model, instrumentation=otel.instrumentation())

    def listener(event: AgentEvent, signal: AbortSignal) -> None:
        if event["type"] == "turn_end":
            raise LookupError("no such widget")

    agent.subscribe(listener)
    await agent.prompt("hi")

    run, chat = otel.spans()
    assert chat.status.status_code is StatusCode.UNSET  # the model call itself went fine
    assert dict(run.attributes or {})["error.type"] == "LookupError"
    assert run.status.description == "event listener failed: LookupError: no such widget"
    assert [e.name for e in run.events] == ["exception"]


async def test_a_cancelled_run_closes_its_open_spans(otel: Otel) -> None:
    model = ScriptedModel([reply(tool_call("echo", {"text": "never", "delay": 30}, id="c1"))])
    agent = Agent(model=model.model, tools=[ECHO], stream_fn=model, instrumentation=otel.instrumentation())
    started = asyncio.Event()
    agent.subscribe(lambda event, signal: started.set() if event["type"] == "tool_execution_start" else None)
    task = asyncio.create_task(agent.prompt("wait"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    run, chat, tool = otel.spans()
    assert chat.status.status_code is StatusCode.UNSET
    assert dict(tool.attributes or {})["error.type"] == "cancelled"
    assert tool.status.status_code is StatusCode.ERROR
    assert dict(run.attributes or {})["error.type"] == "cancelled"
    assert run.status.status_code is StatusCode.ERROR


async def test_spans_a_tool_records_nest_under_its_execute_tool_span(otel: Otel) -> None:
    tracer = otel.tracer_provider.get_tracer("my-tool")

    async def lookup(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
        with tracer.start_as_current_span("database query"):
            await asyncio.sleep(0)
        return AgentToolResult(content=[{"type": "text", "text": "found"}], details={})

    tool = AgentTool(
        name="lookup", label="lookup", description="", parameters={"type": "object"}, execute=lookup
    )
    model = ScriptedModel(
        [reply(tool_call("lookup", {}, id="c1"), tool_call("lookup", {}, id="c2")), reply("ok")]
    )
    agent = Agent(model=model.model, tools=[tool], stream_fn=model, instrumentation=otel.instrumentation())
    await agent.prompt("look it up")

    spans = otel.spans()
    tools = [s for s in spans if s.name == "execute_tool lookup"]
    queries = [s for s in spans if s.name == "database query"]
    assert len(tools) == 2 and len(queries) == 2
    # each query runs under a tool, so it has a parent
    assert sorted(cast(int, parent_of(q)) for q in queries) == sorted(span_id(t) for t in tools)
    assert "gen_ai.tool.description" not in (tools[0].attributes or {})  # an empty description is left out


async def test_the_global_switch_and_the_loop_configuration(otel: Otel) -> None:
    model = ScriptedModel([reply("one"), reply("two"), reply("three")])
    telemetry.instrument(
        tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider, agent_name="helper"
    )
    agent = Agent(model=model.model, stream_fn=model)
    await agent.prompt("first")
    assert [s.name for s in otel.spans()] == ["invoke_agent helper", "chat scripted"]

    telemetry.uninstrument()
    await agent.prompt("second")
    assert len(otel.spans()) == 2  # nothing recorded

    config = AgentLoopConfig(model=model.model, instrumentation=otel.instrumentation(agent_name="looper"))

    async def ignore(event: AgentEvent) -> None:
        return None

    await run_agent_loop([user("third")], AgentContext(), config, ignore, None, model)
    assert [s.name for s in otel.spans()][2:] == ["invoke_agent looper", "chat scripted"]


async def test_an_instrumented_run_emits_the_same_events(otel: Otel) -> None:
    """Instrumentation observes; it never changes what the run does or reports."""

    async def events_of(instrumented: bool) -> list[tuple[str, str]]:
        model = three_echoes_then_done()
        events: list[tuple[str, str]] = []
        agent = Agent(
            model=model.model,
            tools=[ECHO],
            stream_fn=model,
            instrumentation=otel.instrumentation() if instrumented else None,
        )
        agent.subscribe(
            lambda event, signal: events.append((event["type"], str(event.get("toolCallId", ""))))
        )
        await agent.prompt("go")
        return events

    assert await events_of(True) == await events_of(False)


async def test_the_printed_tree(otel: Otel) -> None:
    await run_with_steering(otel, capture_content=False)
    tree = span_tree(otel.spans(), ("tether.turn", "gen_ai.tool.call.id", "error.type"))
    assert tree.splitlines() == [
        "invoke_agent tether  INTERNAL  UNSET",
        "  · event tether.message tether.message.role=user tether.turn=2",
        "  chat scripted  CLIENT  UNSET  tether.turn=1",
        "  execute_tool echo  INTERNAL  UNSET  gen_ai.tool.call.id=c1",
        "  execute_tool echo  INTERNAL  UNSET  gen_ai.tool.call.id=c2",
        f"  execute_tool echo  INTERNAL  ERROR ({TOOL_TEXT_NOT_CAPTURED})  gen_ai.tool.call.id=c3 error.type=ValueError",
        f"    · event exception exception.type=ValueError exception.message={TOOL_TEXT_NOT_CAPTURED}",
        "  chat scripted  CLIENT  UNSET  tether.turn=2",
    ]


async def test_a_model_call_cut_short_by_its_consumer_still_ends(otel: Otel) -> None:
    """A listener failing mid-stream, or the caller cancelling, closes the stream early: the
    ``chat`` span ends as aborted, and the run names the real cause."""
    model = ScriptedModel([reply(text("a", "b", "c")), reply(text(*["x"] * 1000))])
    agent = Agent(model=model.model, stream_fn=model, instrumentation=otel.instrumentation())

    def break_on_first_delta(event: AgentEvent, signal: AbortSignal) -> None:
        if event["type"] == "message_update":
            raise RuntimeError("listener broke")

    unsubscribe = agent.subscribe(break_on_first_delta)
    await agent.prompt("first")
    unsubscribe()
    updates = asyncio.Event()
    agent.subscribe(lambda event, signal: updates.set() if event["type"] == "message_update" else None)
    task = asyncio.create_task(agent.prompt("second"))
    await updates.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    run1, chat1, run2, chat2 = otel.spans()
    assert [parent_of(chat1), parent_of(chat2)] == [span_id(run1), span_id(run2)]
    for chat in (chat1, chat2):
        assert dict(chat.attributes or {})["error.type"] == "aborted"
        assert chat.status.status_code is StatusCode.ERROR
    assert dict(run1.attributes or {})["error.type"] == "RuntimeError"
    assert run1.status.description == "event listener failed: RuntimeError: listener broke"
    assert dict(run2.attributes or {})["error.type"] == "cancelled"


async def test_a_huge_tool_error_is_cut_and_its_text_kept_out_unless_content_is_captured(otel: Otel) -> None:
    """A failed command's output is the tool's error text: megabytes, and what the command read
    (``cat .env``). It went whole into the status, the exception's message and its stack."""
    secret = "DB_PASSWORD=hunter2"

    async def cat(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
        raise ValueError(f"{secret}\n" + "x" * 5_000_000)

    tool = AgentTool(name="cat", label="cat", description="", parameters={"type": "object"}, execute=cat)
    for capture in (False, True):
        otel.exporter.clear()
        model = ScriptedModel([reply(tool_call("cat", {}, id="c1")), reply("done")])
        agent = Agent(
            model=model.model,
            tools=[tool],
            stream_fn=model,
            instrumentation=otel.instrumentation(capture_content=capture),
        )
        await agent.prompt("read the settings")
        failed = next(span for span in otel.spans() if span.name == "execute_tool cat")
        recorded = [str(failed.status.description)] + [
            str(value) for event in failed.events for value in (event.attributes or {}).values()
        ]
        assert sum(map(len, recorded)) < 3 * MAX_ERROR_CHARS + 10_000, capture
        assert (secret in str(failed.status.description)) is capture
        # nowhere else either: the exception's message and stack, an attribute, another span
        everything = [
            str(value)
            for span in otel.spans()
            for attributes in (span.attributes, *(event.attributes for event in span.events))
            for value in [span.status.description, *(attributes or {}).values()]
        ]
        assert capture or not any(secret in value for value in everything)
        assert not capture or "more characters)" in str(failed.status.description)  # said it was cut
