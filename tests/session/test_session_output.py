"""Typed results: ``AgentSession.run(prompt, output=Model)`` returns a validated instance through a
``final_answer`` tool, on each of the four APIs (their wire shapes served by a loopback server),
with bounded re-asks; ``tether.run_sync`` does the same from synchronous code, inside a running
event loop too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import tether
from tether.agent import Agent
from tether.ai.types import SimpleStreamOptions
from tether.session.agent_session import AgentSession
from tether.session.output import OutputError
from tether.testing.loopback import LoopbackServer, Reply, loopback_model
from tether.testing.scripted import ScriptedModel, reply, tool_call


class City(BaseModel):
    """A city and its population in millions."""

    name: str
    population: float


GOOD: dict[str, Any] = {"name": "Paris", "population": 2.1}
BAD = {"name": "Paris", "population": "lots"}


def sse(payload: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + json.dumps(payload).encode() + b"\n\n"


def completions(args: dict[str, Any]) -> bytes:
    call: dict[str, Any] = {"index": 0, "id": "call_1", "type": "function"}
    call["function"] = {"name": "final_answer", "arguments": json.dumps(args)}
    delta = {"role": "assistant", "tool_calls": [call]}
    return (
        sse({"id": "r", "choices": [{"index": 0, "delta": delta}]})
        + sse({"id": "r", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
        + b"data: [DONE]\n\n"
    )


def anthropic(args: dict[str, Any]) -> bytes:
    def event(kind: str, **fields: Any) -> bytes:
        return sse({"type": kind, **fields}, kind)

    block: dict[str, Any] = {"type": "tool_use", "id": "toolu_1", "name": "final_answer", "input": {}}
    return (
        event("message_start", message={"id": "m", "usage": {"input_tokens": 3}})
        + event("content_block_start", index=0, content_block=block)
        + event(
            "content_block_delta",
            index=0,
            delta={"type": "input_json_delta", "partial_json": json.dumps(args)},
        )
        + event("content_block_stop", index=0)
        + event("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 5})
        + event("message_stop")
    )


def responses(args: dict[str, Any]) -> bytes:
    def event(kind: str, **fields: Any) -> bytes:
        return sse({"type": kind, **fields}, kind)

    item = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "final_answer",
        "arguments": "",
    }
    done = {**item, "arguments": json.dumps(args), "status": "completed"}
    response: dict[str, Any] = {"id": "resp_1", "status": "completed", "output": [done]}
    response["usage"] = {"input_tokens": 3, "output_tokens": 5, "total_tokens": 8}
    return (
        event("response.created", response={"id": "resp_1", "status": "in_progress", "output": []})
        + event("response.output_item.added", output_index=0, item=item)
        + event(
            "response.function_call_arguments.delta", output_index=0, item_id="fc_1", delta=json.dumps(args)
        )
        + event("response.output_item.done", output_index=0, item=done)
        + event("response.completed", response=response)
    )


def gemini(args: dict[str, Any]) -> bytes:
    part = {"functionCall": {"name": "final_answer", "args": args}}
    body = {
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}]
    }
    return b"data: " + json.dumps(body).encode() + b"\r\n\r\n"


WIRE = {
    "openai-completions": completions,
    "anthropic-messages": anthropic,
    "openai-responses": responses,
    "google-generative-ai": gemini,
}


@pytest.mark.parametrize("api", sorted(WIRE))
async def test_a_typed_answer_on_every_api_after_one_invalid_one(api: str) -> None:
    body = WIRE[api]
    async with LoopbackServer([Reply(body(BAD)), Reply(body(GOOD))]) as server:
        agent = Agent(model=loopback_model(server.url, api), options=SimpleStreamOptions(api_key="k"))
        core = AgentSession(agent)
        city = await core.run("Which city is the capital of France?", output=City)
        await core.close()
    assert city == City(**GOOD)
    assert len(server.requests) == 2  # the invalid answer came back to the model once
    sent = json.dumps(json.loads(server.requests[0].body))
    assert "final_answer" in sent and "population" in sent  # the schema went out as a tool
    assert "final_answer" not in [t.name for t in agent.tools]  # the tool was for that run only


def scripted_core(*replies: Any) -> tuple[AgentSession, ScriptedModel]:
    scripted = ScriptedModel(list(replies))
    return AgentSession(Agent(model=scripted.model, stream_fn=scripted)), scripted


async def test_invalid_answers_are_asked_again_a_bounded_number_of_times() -> None:
    bad = reply(tool_call("final_answer", BAD))
    core, _ = scripted_core(bad, bad, bad, bad, reply(tool_call("final_answer", GOOD)))
    with pytest.raises(OutputError, match="no valid City after 2 answers") as raised:
        await core.run("Capital of France?", output=City, max_reasks=1)
    results = [m for m in core.messages if m["role"] == "toolResult"]
    assert raised.value.reason == "invalid" and len(results) == 2 and all(r["isError"] for r in results)
    await core.close()


async def test_a_reply_without_the_tool_is_reminded_then_given_up_on() -> None:
    core, scripted = scripted_core(reply("Paris."), reply(tool_call("final_answer", GOOD)))
    assert await core.run("Capital of France?", output=City) == City(**GOOD)
    assert "final_answer" in tether.message_text(scripted.requests[1].context["messages"][-1])
    core, _ = scripted_core(reply("Paris."), reply("Still Paris."))
    with pytest.raises(OutputError) as raised:
        await core.run("Capital of France?", output=City, max_reasks=1)
    assert raised.value.reason == "missing"


async def test_an_output_that_is_no_pydantic_model_is_the_programs_mistake() -> None:
    """Said at once, before any model call, not as a failed model call (``OutputError``)."""
    core, scripted = scripted_core(reply(tool_call("final_answer", GOOD)))
    with pytest.raises(tether.UserError, match=r"output must be a pydantic model class.*dict"):
        await core.run("Capital of France?", output=dict)  # pyright: ignore[reportArgumentType] (the mistake)
    assert not scripted.requests and not core.messages
    assert [t.name for t in core.agent.tools] == []  # no final_answer tool left behind
    await core.close()


def script(tmp_path: Path, *replies: dict[str, Any]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(list(replies)))
    return f"scripted:{path}"


def test_run_sync_answers_text_and_typed(tmp_path: Path) -> None:
    text = script(tmp_path, {"content": [{"type": "text", "chunks": ["Hel", "lo"]}]})
    assert tether.run_sync("Say hello", model=text) == "Hello"
    typed = script(tmp_path, {"content": [{"type": "toolCall", "name": "final_answer", "arguments": GOOD}]})
    assert tether.run_sync("Capital?", model=typed, output=City) == City(**GOOD)


async def test_run_sync_works_inside_a_running_event_loop(tmp_path: Path) -> None:
    text = script(tmp_path, {"content": [{"type": "text", "chunks": ["Hi"]}]})
    assert tether.run_sync("Say hi", model=text) == "Hi"
