"""The stateful ``Agent``: state, listeners, queues, abort, continue."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from narrowing import block_text, content_of
from tether.agent import Agent, AgentBusyError, AgentEvent, tool
from tether.ai.abort import AbortSignal
from tether.ai.event_stream import empty_usage
from tether.testing.scripted import ScriptedModel, reply, text, tool_call
from tether.wire import AgentMessage, ImageContent


def user(content: str) -> AgentMessage:
    return {"role": "user", "content": content, "timestamp": 0}


def texts(messages: Sequence[AgentMessage]) -> list[tuple[str, str | None]]:
    """Each message as (role, its first text) for compact assertions."""
    out: list[tuple[str, str | None]] = []
    for m in messages:
        if "content" not in m:
            out.append((m["role"], None))
        elif isinstance(m["content"], str):
            out.append((m["role"], m["content"]))
        else:
            first = next((b for b in m["content"] if b["type"] == "text"), None)
            out.append((m["role"], block_text(first) if first else None))
    return out


class Gate:
    """A tool that waits until the test opens it, so the test can act mid-run."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.opened = asyncio.Event()

        @tool(name="gate")
        async def gate(signal: AbortSignal | None) -> str:
            """Wait for the test."""
            self.entered.set()
            opened = asyncio.ensure_future(self.opened.wait())
            aborted = asyncio.ensure_future(signal.wait()) if signal else None
            try:
                await asyncio.wait([f for f in (opened, aborted) if f], return_when=asyncio.FIRST_COMPLETED)
            finally:
                opened.cancel()
                if aborted:
                    aborted.cancel()
            if signal is not None and signal.aborted:
                raise RuntimeError("Tool execution was aborted")
            return "opened"

        self.tool = gate


def make_agent(*responses: Any, **kwargs: Any) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(list(responses))
    return Agent(model=model.model, stream_fn=model, **kwargs), model


async def test_prompt_runs_and_keeps_the_transcript() -> None:
    agent, _ = make_agent(reply("hello"))
    added = await agent.prompt("hi")
    assert texts(agent.messages) == [("user", "hi"), ("assistant", "hello")]
    assert added == agent.messages
    assert not agent.is_streaming and agent.streaming_message is None and agent.error_message is None


async def test_prompt_with_images_message_or_messages() -> None:
    agent, model = make_agent(reply("a"), reply("b"), reply("c"))
    image: ImageContent = {"type": "image", "data": "aGk=", "mimeType": "image/png"}
    await agent.prompt("look", images=[image])
    first = agent.messages[0]
    assert first["role"] == "user" and first["content"] == [{"type": "text", "text": "look"}, image]
    await agent.prompt(user("as message"))
    await agent.prompt([user("one"), user("two")])
    assert [texts(r.context["messages"])[-2:] for r in model.requests][2] == [
        ("user", "one"),
        ("user", "two"),
    ]
    with pytest.raises(ValueError, match="images"):
        await agent.prompt(user("x"), images=[image])


async def test_listeners_are_awaited_in_order_with_the_run_signal() -> None:
    agent, _ = make_agent(reply("ok"))
    calls: list[tuple[str, str]] = []
    signals: set[int] = set()

    async def slow(event: AgentEvent, signal: AbortSignal) -> None:
        await asyncio.sleep(0.001)
        calls.append(("slow", event["type"]))
        signals.add(id(signal))

    def fast(event: AgentEvent, signal: AbortSignal) -> None:
        calls.append(("fast", event["type"]))
        signals.add(id(signal))

    agent.subscribe(slow)
    unsubscribe = agent.subscribe(fast)
    await agent.prompt("go")
    assert calls[:4] == [
        ("slow", "agent_start"),
        ("fast", "agent_start"),
        ("slow", "turn_start"),
        ("fast", "turn_start"),
    ]
    assert len(signals) == 1
    unsubscribe()
    calls.clear()
    agent.messages = []
    agent.stream_fn = ScriptedModel([reply("again")])
    await agent.prompt("go")
    assert {who for who, _ in calls} == {"slow"}


async def test_a_listener_is_not_called_with_the_event_types_it_skips_read_at_each_event() -> None:
    """``subscribe(skip=...)``: the set is read at each event, so its owner may change it mid-run
    (an ``AgentSession`` hears every event only while someone listens to it)."""
    agent, _ = make_agent(reply("ok"))
    skipped = {"message_update", "turn_start"}
    heard: list[str] = []
    everything: list[str] = []

    def listener(event: AgentEvent) -> None:
        heard.append(event["type"])
        if event["type"] == "message_start" and event["message"]["role"] == "assistant":
            skipped.clear()  # from the next event on, every one

    agent.subscribe(listener, skip=skipped)
    agent.subscribe(lambda event: everything.append(event["type"]))
    await agent.prompt("go")
    assert everything[:3] == ["agent_start", "turn_start", "message_start"]
    assert "turn_start" not in heard and heard[:2] == ["agent_start", "message_start"]
    assert heard[heard.index("message_start", 2) :] == everything[everything.index("message_start", 3) :]
    assert "message_update" in heard


async def test_is_streaming_until_agent_end_listeners_finish() -> None:
    agent, _ = make_agent(reply("ok"))
    during: list[bool] = []

    async def listener(event: AgentEvent, signal: AbortSignal) -> None:
        if event["type"] == "agent_end":
            await asyncio.sleep(0.001)
            during.append(agent.is_streaming)

    agent.subscribe(listener)
    await agent.prompt("go")
    assert during == [True]
    assert agent.is_streaming is False


async def test_state_is_copied_on_assignment() -> None:
    agent, _ = make_agent()
    messages = [user("a")]
    tools = [Gate().tool]
    agent.messages = messages
    agent.tools = tools
    messages.append(user("b"))
    tools.clear()
    assert len(agent.messages) == 1 and len(agent.tools) == 1


async def test_prompt_or_continue_while_running_is_refused_with_advice() -> None:
    gate = Gate()
    agent, _ = make_agent(reply(tool_call("gate")), reply("done"), tools=[gate.tool])
    run = asyncio.create_task(agent.prompt("go"))
    await gate.entered.wait()
    assert agent.is_streaming
    with pytest.raises(AgentBusyError, match=r"steer\(\) or follow_up\(\)"):
        await agent.prompt("again")
    with pytest.raises(AgentBusyError, match=r"steer\(\) or follow_up\(\)"):
        await agent.continue_()
    gate.opened.set()
    await run
    assert texts(agent.messages)[-1] == ("assistant", "done")


async def test_runtime_state_while_tools_run() -> None:
    gate = Gate()
    agent, _ = make_agent(
        reply(text("calling"), tool_call("gate", id="g1")), reply("done"), tools=[gate.tool]
    )
    streamed: list[str] = []

    def listener(event: AgentEvent, signal: AbortSignal) -> None:
        if event["type"] == "message_update" and agent.streaming_message is not None:
            streamed.append(agent.streaming_message["role"])

    agent.subscribe(listener)
    run = asyncio.create_task(agent.prompt("go"))
    await gate.entered.wait()
    assert agent.pending_tool_calls == frozenset({"g1"})
    assert agent.streaming_message is None
    gate.opened.set()
    await run
    assert agent.pending_tool_calls == frozenset()
    assert streamed and set(streamed) == {"assistant"}


async def test_steering_goes_before_the_next_model_call_and_follow_ups_after_the_stop() -> None:
    gate = Gate()
    agent, model = make_agent(
        reply(tool_call("gate")), reply("steered"), reply("followed"), tools=[gate.tool]
    )
    run = asyncio.create_task(agent.prompt("go"))
    await gate.entered.wait()
    agent.follow_up(user("after"))
    agent.steer(user("now"))
    gate.opened.set()
    await run
    assert texts(model.requests[1].context["messages"])[-1] == ("user", "now")
    assert texts(model.requests[2].context["messages"])[-2:] == [("assistant", "steered"), ("user", "after")]
    assert not agent.has_queued_messages()


@pytest.mark.parametrize(("mode", "calls"), [("one-at-a-time", 3), ("all", 2)])
async def test_follow_up_queue_modes(mode: Any, calls: int) -> None:
    agent, model = make_agent(reply("a"), reply("b"), reply("c"), follow_up_mode=mode)
    agent.follow_up(user("f1"))
    agent.follow_up(user("f2"))
    await agent.prompt("go")
    assert len(model.requests) == calls
    assert [t for r, t in texts(agent.messages) if r == "user"] == ["go", "f1", "f2"]


async def test_steering_mode_all_delivers_every_message_in_one_turn() -> None:
    agent, model = make_agent(reply("a"), steering_mode="all")
    agent.steer(user("s1"))
    agent.steer(user("s2"))
    await agent.prompt("go")
    assert len(model.requests) == 1
    assert texts(model.requests[0].context["messages"]) == [("user", "go"), ("user", "s1"), ("user", "s2")]


async def test_clear_queues() -> None:
    agent, _ = make_agent()
    agent.steer(user("s"))
    agent.follow_up(user("f"))
    agent.clear_steering_queue()
    assert agent.follow_up_queue and not agent.steering_queue
    agent.steer(user("s"))
    agent.clear_follow_up_queue()
    assert agent.steering_queue and not agent.follow_up_queue
    agent.follow_up(user("f"))
    agent.clear_all_queues()
    assert not agent.has_queued_messages()


async def test_abort_ends_the_run_and_reports_the_error() -> None:
    gate = Gate()
    agent, _ = make_agent(reply(tool_call("gate")), reply("never"), tools=[gate.tool])
    run = asyncio.create_task(agent.prompt("go"))
    await gate.entered.wait()
    agent.abort()
    await agent.wait_for_idle()
    await run
    assert agent.error_message == "Request was aborted"
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "toolResult", "assistant"]
    last = agent.messages[-1]
    assert last["role"] == "assistant" and last["stopReason"] == "aborted"
    assert not agent.is_streaming


async def test_queued_messages_survive_an_abort() -> None:
    gate = Gate()
    agent, model = make_agent(reply(tool_call("gate")), tools=[gate.tool])
    run = asyncio.create_task(agent.prompt("go"))
    await gate.entered.wait()
    agent.steer(user("steer me"))
    agent.follow_up(user("then this"))
    agent.abort()
    await run
    assert [content_of(m) for m in agent.steering_queue] == ["steer me"]
    assert [content_of(m) for m in agent.follow_up_queue] == ["then this"]
    assert all(texts(r.context["messages"])[-1] != ("user", "steer me") for r in model.requests)


async def test_drained_but_undelivered_messages_go_back_to_the_front() -> None:
    agent, _ = make_agent(reply("first"), reply("never"), steering_mode="all")
    turns = [0]

    async def listener(event: AgentEvent, signal: AbortSignal) -> None:
        if event["type"] == "turn_end" and turns[0] == 1:
            agent.steer(user("s1"))
            agent.steer(user("s2"))
        if event["type"] == "turn_start":
            turns[0] += 1
            if turns[0] == 2:  # the steering messages are drained, not yet delivered
                agent.steer(user("typed later"))
                agent.abort()
                raise RuntimeError("UI crashed")

    agent.subscribe(listener)
    await agent.prompt("go")
    assert [content_of(m) for m in agent.steering_queue] == ["s1", "s2", "typed later"]
    assert ("user", "s1") not in texts(agent.messages)


async def test_cancelled_run_puts_drained_follow_ups_back() -> None:
    agent, _ = make_agent(reply("first"), reply("never"))
    agent.follow_up(user("f1"))
    agent.follow_up(user("f2"))
    blocked = asyncio.Event()

    async def listener(event: AgentEvent, signal: AbortSignal) -> None:
        if event["type"] == "turn_start" and agent.follow_up_queue == (user("f2"),):
            blocked.set()
            await asyncio.sleep(3600)

    agent.subscribe(listener)
    run = asyncio.create_task(agent.prompt("go"))
    await blocked.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert [content_of(m) for m in agent.follow_up_queue] == ["f1", "f2"]
    assert not agent.is_streaming


async def test_a_run_cancelled_mid_tool_leaves_no_call_without_its_result() -> None:
    """Cancelling the task that awaits ``agent.prompt()`` while a tool ran left the assistant's
    tool call in ``agent.messages`` without a result, and listeners never heard the run end; pi's
    abort mid-tool records a result (``abort-during-tool``'s trace), as ``agent.abort()`` and an
    ``AgentSession`` do. Now the run ends as an aborted one, then the cancellation goes on up."""
    gate = Gate()
    agent, model = make_agent(reply(tool_call("gate", {})), reply("never"), reply("again"), tools=[gate.tool])
    seen: list[str] = []
    agent.subscribe(lambda event: seen.append(event["type"]))
    run = asyncio.ensure_future(agent.prompt("go"))
    await gate.entered.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    roles = [(m["role"], m.get("stopReason")) for m in agent.messages]
    assert roles == [("user", None), ("assistant", "toolUse"), ("toolResult", None), ("assistant", "aborted")]
    result = agent.messages[2]
    assert result["role"] == "toolResult" and result["isError"]
    assert seen[-4:] == ["message_start", "message_end", "turn_end", "agent_end"]
    assert "tool_execution_end" in seen and agent.error_message and not agent.is_streaming
    await agent.prompt("next")  # the transcript goes on as after an abort
    assert texts(agent.messages)[-1] == ("assistant", "never")
    assert len(model.requests) == 2


async def test_a_listener_deaf_after_a_cancellation_holds_it_only_for_the_grace() -> None:
    """The aborted ending that a cancelled run now goes through is bounded: a listener that
    sleeps through every event after the cancellation is cut after ``ABORT_GRACE``, and the
    cancellation goes on up (the ending with it) instead of waiting for the listener."""
    gate = Gate()
    agent, _ = make_agent(reply(tool_call("gate", {})), tools=[gate.tool])
    cancelled = asyncio.Event()

    async def deaf(event: AgentEvent) -> None:
        if cancelled.is_set():
            await asyncio.sleep(3600)

    agent.subscribe(deaf, bounded=False)
    run = asyncio.ensure_future(agent.prompt("go"))
    await gate.entered.wait()
    cancelled.set()
    run.cancel()
    started = asyncio.get_running_loop().time()
    with pytest.raises(asyncio.CancelledError):
        async with asyncio.timeout(10):
            await run
    assert asyncio.get_running_loop().time() - started < 5
    assert not agent.is_streaming


async def test_continue_variants() -> None:
    agent, model = make_agent(reply("answer"), reply("steered"), reply("followed"))
    with pytest.raises(ValueError, match="No messages to continue from"):
        await agent.continue_()
    agent.messages = [user("question")]
    await agent.continue_()
    assert texts(agent.messages) == [("user", "question"), ("assistant", "answer")]
    with pytest.raises(ValueError, match="Cannot continue from message role: assistant"):
        await agent.continue_()
    agent.steer(user("s"))
    await agent.continue_()
    assert texts(agent.messages)[-2:] == [("user", "s"), ("assistant", "steered")]
    agent.follow_up(user("f"))
    await agent.continue_()
    assert texts(agent.messages)[-2:] == [("user", "f"), ("assistant", "followed")]
    assert len(model.requests) == 3


async def test_state_setters_reach_the_model_call() -> None:
    agent, model = make_agent(reply(tool_call("change")), reply("done"))

    @tool
    async def change() -> str:
        """Change the system prompt mid-run."""
        agent.system_prompt = "second"
        return "ok"

    agent.tools = [change]
    agent.system_prompt = "first"
    agent.volatile_context = "clock 1"
    agent.thinking_level = "high"
    agent.service_tier = "priority"
    await agent.prompt("go")
    assert [r.context.get("systemPrompt") for r in model.requests] == ["first", "second"]
    assert model.requests[0].context.get("volatileContext") == "clock 1"
    options = model.requests[0].options
    assert options is not None and options.reasoning == "high" and options.service_tier == "priority"
    agent.thinking_level = "off"
    model.push(reply("x"))
    await agent.prompt("again")
    assert model.requests[-1].options is not None and model.requests[-1].options.reasoning is None


async def test_a_tool_added_during_a_run_is_declared_and_callable_in_its_next_model_call() -> None:
    """``tools``, like the system prompt, is read before every model call: an MCP tool the model
    found with ``mcp_tool_search`` must be callable in the same run. The run used to keep the
    tools it started with, so the found tool was undeclared and its call failed ("not found")."""
    agent, model = make_agent(reply(tool_call("unlock")), reply(tool_call("secret")), reply("done"))

    @tool
    async def secret() -> str:
        """A tool the run did not start with."""
        return "the secret"

    @tool
    async def unlock() -> str:
        """Make ``secret`` available."""
        agent.tools.append(secret)
        return "unlocked"

    agent.tools = [unlock]
    added = await agent.prompt("go")
    declared = [[t["name"] for t in r.context.get("tools") or []] for r in model.requests]
    assert declared == [["unlock"], ["unlock", "secret"], ["unlock", "secret"]]
    results = [m for m in added if m["role"] == "toolResult"]
    assert [(m["toolName"], m["isError"]) for m in results] == [("unlock", False), ("secret", False)]
    assert texts(results)[1] == ("toolResult", "the secret")


async def test_error_message_and_reset() -> None:
    agent, _ = make_agent(reply(error="overloaded"))
    await agent.prompt("go")
    assert agent.error_message == "overloaded"
    agent.steer(user("s"))
    agent.reset()
    assert agent.messages == [] and agent.error_message is None and not agent.has_queued_messages()


async def test_a_model_is_required() -> None:
    with pytest.raises(ValueError, match="model is not set"):
        await Agent().prompt("hi")


async def test_a_failing_listener_ends_the_run_as_an_error() -> None:
    agent, _ = make_agent(reply("ok"))

    def listener(event: AgentEvent, signal: AbortSignal) -> None:
        if event["type"] == "message_update":
            raise KeyError("ui")

    agent.subscribe(listener)
    await agent.prompt("go")
    assert agent.error_message is not None and agent.error_message.startswith(
        "event listener failed: KeyError"
    )
    assert not agent.is_streaming


async def test_continue_delivers_drained_steering_when_a_listener_fails_at_agent_start() -> None:
    """Drained for ``continue_()``, the steering message is one of the run's prompts: in its
    transcript from the start and announced before the error reply (as a prompt's), not lost
    and not put back to run a second time."""
    agent, _ = make_agent(reply("never"))
    answer: AgentMessage = {
        "role": "assistant",
        "content": [{"type": "text", "text": "a"}],
        "api": "scripted",
        "provider": "scripted",
        "model": "scripted",
        "usage": empty_usage(),  # pyright: ignore[reportAssignmentType]
        "stopReason": "stop",
        "timestamp": 0,
    }
    agent.messages = [user("q"), answer]
    agent.steer(user("s"))

    def listener(event: AgentEvent, signal: AbortSignal) -> None:
        if event["type"] == "agent_start":
            raise RuntimeError("UI not ready")

    agent.subscribe(listener)
    await agent.continue_()
    assert not agent.steering_queue
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "user", "assistant"]
    assert content_of(agent.messages[2]) == "s" and agent.messages[3].get("stopReason") == "error"


async def test_an_abort_before_the_first_step_aborts_the_run() -> None:
    """pi's ``prompt()`` makes its run on the call, so ``agent.prompt(...)`` not yet awaited then
    ``agent.abort()`` ends that run aborted; the scripted reply is never played."""
    agent, _ = make_agent(reply("never"))
    run = asyncio.ensure_future(agent.prompt("go"))
    agent.abort()
    added = await run
    assert texts(added)[0] == ("user", "go")
    last = added[-1]
    assert last["role"] == "assistant" and last["stopReason"] == "aborted"
    assert ("assistant", "never") not in texts(agent.messages)
    assert agent.error_message == "Request was aborted"
    assert not agent.is_streaming


async def test_an_abort_before_continue_starts_aborts_it() -> None:
    agent, _ = make_agent(reply("never"), messages=[user("go")])
    run = asyncio.ensure_future(agent.continue_())
    agent.abort()
    added = await run
    assert added[-1]["role"] == "assistant" and added[-1]["stopReason"] == "aborted"


async def test_an_abort_holds_only_for_runs_asked_before_it() -> None:
    """A prompt made after the abort, or one made and dropped before it, is not touched."""
    agent, _ = make_agent(reply("first"), reply("second"))
    dropped = agent.prompt("never run")
    agent.abort()
    dropped.close()
    assert texts(await agent.prompt("go"))[-1] == ("assistant", "first")
    agent.abort()  # nothing asked: nothing held for the next prompt
    assert texts(await agent.prompt("again"))[-1] == ("assistant", "second")


def test_a_prompt_made_before_the_event_loop_runs() -> None:
    """``asyncio.run(agent.prompt(...))`` makes the run (``prompt()``'s call) before any event
    loop runs: nothing of it may need one yet."""
    agent, _ = make_agent(reply("hello"))
    added = asyncio.run(agent.prompt("hi"))
    assert texts(added) == [("user", "hi"), ("assistant", "hello")]


async def test_a_model_record_missing_fields_is_refused_naming_them() -> None:
    """A model dict written by hand (pydantic-ai and the OpenAI SDK take a name) without ``api``
    raised a bare ``KeyError: 'api'`` out of ``prompt()``; without ``maxTokens`` the reply failed
    as "KeyError: 'maxTokens'", after the request was on its way for some other fields."""
    from tether.errors import ModelError
    from tether.testing.loopback import loopback_model

    model: Any = {
        k: v for k, v in loopback_model("http://127.0.0.1:9").items() if k not in ("api", "maxTokens")
    }
    agent = Agent(model=model)
    with pytest.raises(ModelError, match=r"^the model lacks api, maxTokens: take it from tether\.find_model"):
        await agent.prompt("hi")
    assert agent.messages == [] and not agent.is_streaming


async def test_two_tools_of_one_name_the_later_takes_the_earlier_place() -> None:
    """As ``create_agent_session`` does with ``extra_tools``: both would reach the model (which a
    provider refuses) while only one could run."""

    @tool(name="look")
    async def first() -> str:
        """The first."""
        return "first"

    @tool
    async def other() -> str:
        """Another."""
        return "other"

    @tool(name="look")
    async def second() -> str:
        """The second."""
        return "second"

    agent, model = make_agent(reply(tool_call("look", {})), reply("done"), tools=[first, other, second])
    assert agent.tools == [second, other]
    await agent.prompt("go")
    assert [t["name"] for t in model.requests[0].context.get("tools", [])] == ["look", "other"]
    assert texts(agent.messages)[2] == ("toolResult", "second")
    agent.tools = [*agent.tools, first]  # set later: the same
    assert agent.tools == [first, other]
