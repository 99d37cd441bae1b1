"""The provider against bodies recorded from llama-cpp-python's server (``recorded/``, made by
``scripts/record_llama_server.py``), and the request it sends to such a server.

These run everywhere: no server, no model. What a recording contains is read from the file, not
restated here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.ai.local.test_localserver_requests import model

from narrowing import done_message
from tether.ai import stream
from tether.ai.types import Context, StreamOptions, Tool
from tether.testing.loopback import LoopbackServer, Reply
from tether.wire import AssistantMessageEvent

RECORDED = Path(__file__).parent / "recorded"
WEATHER: Tool = {
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def recorded_chunks(name: str) -> tuple[bytes, list[dict[str, Any]]]:
    """The raw body and its JSON chunks; the body is replayed cut at every event boundary."""
    body = (RECORDED / f"{name}.sse").read_bytes()
    events = [e for e in body.decode().split("\n\n") if e.startswith("data: ")]
    chunks = [json.loads(e.removeprefix("data: ")) for e in events if e != "data: [DONE]"]
    return body, chunks


def cut_points(body: bytes) -> list[int]:
    return [i + 2 for i in range(len(body) - 1) if body[i : i + 2] == b"\n\n"]


async def replay(
    name: str, context: Context, options: StreamOptions
) -> tuple[list[AssistantMessageEvent], Any]:
    body, _ = recorded_chunks(name)
    async with LoopbackServer([Reply(body, chunks=cut_points(body))]) as server:
        events = [e async for e in stream(model(server.url + "/v1", "llama.cpp"), context, options)]
        return events, json.loads(server.requests[0].body)


def ask(text: str) -> Context:
    return {"systemPrompt": "Be brief.", "messages": [{"role": "user", "content": text, "timestamp": 0}]}


async def test_recorded_tool_call_fragments_make_one_call() -> None:
    _, chunks = recorded_chunks("tool_call")
    fragments = [c["choices"][0]["delta"] for c in chunks if c["choices"][0]["delta"].get("tool_calls")]
    # The quirks this recording carries: id and name in every fragment, and a function_call copy.
    assert len(fragments) > 2
    assert len({(f["tool_calls"][0]["id"], f["tool_calls"][0]["function"]["name"]) for f in fragments}) == 1
    assert all(
        f["function_call"]["arguments"] == f["tool_calls"][0]["function"]["arguments"] for f in fragments
    )

    context = ask("What is the weather in Paris?")
    context["tools"] = [WEATHER]
    options = StreamOptions(
        max_tokens=40, tool_choice={"type": "function", "function": {"name": "get_weather"}}
    )
    events, request = await replay("tool_call", context, options)

    kinds = [e["type"] for e in events]
    assert kinds.count("toolcall_start") == kinds.count("toolcall_end") == 1
    message = done_message(events[-1])
    assert message["stopReason"] == "toolUse"
    (call,) = message["content"]
    recorded_args = "".join(f["tool_calls"][0]["function"]["arguments"] for f in fragments)
    assert call == {
        "type": "toolCall",
        "id": fragments[0]["tool_calls"][0]["id"],
        "name": "get_weather",
        "arguments": json.loads(recorded_args),
    }
    assert "".join(e["delta"] for e in events if e["type"] == "toolcall_delta") == recorded_args
    # What such a server understands: max_tokens, the named tool_choice as given, no `strict`.
    assert request["max_tokens"] == 40 and "max_completion_tokens" not in request
    assert request["tool_choice"] == options.tool_choice
    assert "strict" not in request["tools"][0]["function"]


async def test_recorded_text_stream() -> None:
    _, chunks = recorded_chunks("text")
    recorded_text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    finish = next(c["choices"][0]["finish_reason"] for c in chunks if c["choices"][0]["finish_reason"])
    assert not any("usage" in c for c in chunks)  # this server reports no usage when streaming

    events, _ = await replay("text", ask("What is the capital of France?"), StreamOptions(max_tokens=12))
    message = done_message(events[-1])
    assert message["content"] == [{"type": "text", "text": recorded_text}]
    assert message["stopReason"] == {"stop": "stop", "length": "length"}[finish]
    assert message["usage"]["totalTokens"] == 0
    assert message.get("responseId") == chunks[0]["id"]
