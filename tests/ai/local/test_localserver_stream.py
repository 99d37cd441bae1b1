"""Our ``openai-completions`` provider against a real llama-cpp-python server.

SmolLM2-135M is a smoke-test model: what it says is not asserted, only the shape of the stream.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from narrowing import done_message
from tether.ai import stream
from tether.ai.abort import AbortController
from tether.ai.local_servers import usable_models
from tether.ai.types import Context, StreamOptions, Tool
from tether.testing.llama_server import LlamaServer
from tether.wire import AssistantMessageEvent, ModelInfo

pytestmark = [pytest.mark.local_model, pytest.mark.subprocess]

WEATHER: Tool = {
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
DISCONNECTED = "Disconnected from client"
"""What the server logs when a client goes away mid-stream."""
FORCE_WEATHER = {"type": "function", "function": {"name": "get_weather"}}


def ask(text: str, *tools: Tool) -> Context:
    context: Context = {
        "systemPrompt": "You are a helpful assistant.",
        "messages": [{"role": "user", "content": text, "timestamp": 0}],
    }
    if tools:
        context["tools"] = list(tools)
    return context


async def collect(model: ModelInfo, context: Context, options: StreamOptions) -> list[AssistantMessageEvent]:
    return [event async for event in stream(model, context, options)]


async def test_streamed_text_stops_at_max_tokens(model: ModelInfo) -> None:
    events = await collect(
        model, ask("Write a long story about a dragon."), StreamOptions(max_tokens=8, temperature=0)
    )
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["start", "text_start"] and kinds[-2:] == ["text_end", "done"]
    deltas = [e["delta"] for e in events if e["type"] == "text_delta"]
    # llama.cpp streams a chunk per token (fewer when a character spans tokens): the server got our
    # max_tokens (the provider sends `max_tokens`, not `max_completion_tokens`, to a local server).
    assert 1 <= len(deltas) <= 8 and "".join(deltas).strip()
    message = done_message(events[-1])
    assert message["content"] == [{"type": "text", "text": "".join(deltas)}]
    assert message["stopReason"] == "length"
    assert (message["api"], message["provider"], message["model"]) == (
        "openai-completions",
        "llama.cpp",
        model["id"],
    )
    assert message.get("responseId", "").startswith("chatcmpl-")
    # llama-cpp-python 0.3.36 sends no usage in a stream (it ignores stream_options.include_usage),
    # so there is nothing to count: zero, not an estimate. A later server that reports it fails here.
    assert message["usage"]["totalTokens"] == message["usage"]["input"] == message["usage"]["output"] == 0


async def test_named_tool_choice_streams_one_tool_call(model: ModelInfo) -> None:
    options = StreamOptions(max_tokens=40, temperature=0, tool_choice=FORCE_WEATHER)
    events = await collect(model, ask("What is the weather in Paris?", WEATHER), options)
    kinds = [e["type"] for e in events]
    # Every fragment repeats the call's id and name and carries a `function_call` copy of the
    # arguments: still one call, whose arguments are the fragments once each.
    assert kinds.count("toolcall_start") == 1 and kinds.count("toolcall_end") == 1
    assert kinds[:2] == ["start", "toolcall_start"] and kinds[-2:] == ["toolcall_end", "done"]
    assert set(kinds[2:-2]) == {"toolcall_delta"}
    message = done_message(events[-1])
    assert message["stopReason"] == "toolUse"
    (call,) = message["content"]
    assert call["type"] == "toolCall" and call["name"] == "get_weather"
    assert call["id"].startswith("call_")
    streamed = "".join(e["delta"] for e in events if e["type"] == "toolcall_delta")
    assert json.loads(streamed) == call["arguments"]
    assert isinstance(call["arguments"]["city"], str)


async def test_abort_mid_stream_ends_aborted_and_the_server_serves_the_next_request(
    model: ModelInfo, server: LlamaServer
) -> None:
    disconnects = server.log().count(DISCONNECTED)
    controller = AbortController()
    seen: list[str] = []
    s = stream(
        model,
        ask("Count from one to one hundred."),
        StreamOptions(max_tokens=200, temperature=0, signal=controller.signal),
    )
    async for event in s:
        if event["type"] == "text_delta":
            seen.append(event["delta"])
            controller.abort()
    message = await s.result()
    assert message["stopReason"] == "aborted"
    assert seen and message["content"] == [{"type": "text", "text": "".join(seen)}]
    # The abort closed the connection, and the server noticed: it stopped generating for us.
    deadline = time.monotonic() + 10
    while server.log().count(DISCONNECTED) == disconnects and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert server.log().count(DISCONNECTED) == disconnects + 1
    after = await stream(model, ask("Hi"), StreamOptions(max_tokens=4, temperature=0)).result()
    assert after["stopReason"] in ("stop", "length") and after["content"]


async def test_the_server_is_listed_as_usable(model: ModelInfo, server: LlamaServer) -> None:
    listed: list[Any] = [(m["provider"], m["id"], m["baseUrl"]) for m in await usable_models(timeout=5)]
    assert ("llama.cpp", server.model_id, server.base_url) in listed
