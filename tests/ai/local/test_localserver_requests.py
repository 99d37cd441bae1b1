"""What our ``openai-completions`` provider sends to a local server (llama-cpp-python, Ollama,
vLLM, LM Studio) compared with a hosted API: content as strings only."""

from __future__ import annotations

from narrowing import as_assistant
from tether.ai.providers.openai_completions import build_request, convert_messages, resolve_compat
from tether.ai.types import Context, StreamOptions
from tether.wire import AssistantMessage, ModelInfo


def model(base_url: str, provider: str) -> ModelInfo:
    return {
        "id": "smollm2",
        "name": "smollm2",
        "api": "openai-completions",
        "provider": provider,
        "baseUrl": base_url,
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 1024,
        "maxTokens": 256,
    }


def transcript() -> Context:
    """A user turn in parts, an assistant turn of only a tool call, and its result."""
    return {
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "Weather in"}, {"type": "text", "text": "Paris?"}],
                "timestamp": 0,
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "toolCall", "id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}}
                ],
                "api": "openai-completions",
                "provider": "llama.cpp",
                "model": "smollm2",
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
                "toolCallId": "c1",
                "toolName": "get_weather",
                "content": [{"type": "text", "text": "Sunny"}],
                "isError": False,
                "timestamp": 0,
            },
        ]
    }


def test_local_servers_get_string_content_only() -> None:
    """SmolLM2's template (like most) concatenates ``content``: a list or ``null`` kills the stream."""
    spec = model("http://127.0.0.1:8080/v1", "llama.cpp")
    messages = convert_messages(spec, transcript(), resolve_compat(spec))
    assert [m["content"] for m in messages] == ["Weather in\nParis?", "", "Sunny"]
    assert messages[1]["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
    }


def test_hosted_apis_keep_parts_and_null_content() -> None:
    spec = model("https://api.openai.com/v1", "openai")
    body = build_request(spec, transcript(), StreamOptions(), "key").body
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "Weather in"},
        {"type": "text", "text": "Paris?"},
    ]
    assert body["messages"][1]["content"] is None


def test_any_provider_can_ask_for_strings_even_with_thinking_as_text() -> None:
    spec = model("http://10.0.0.5:9000/v1", "my-box")
    spec["compat"] = {"requiresStringContent": True, "requiresThinkingAsText": True}
    context = transcript()
    answer: AssistantMessage = {
        **as_assistant(context["messages"][1]),
        "content": [{"type": "thinking", "thinking": "Hm."}, {"type": "text", "text": "Sunny."}],
        "provider": "my-box",  # the same model wrote it, so the handoff keeps the thinking block
    }
    context["messages"] = [context["messages"][0], answer]
    messages = convert_messages(spec, context, resolve_compat(spec))
    assert [m["content"] for m in messages] == ["Weather in\nParis?", "Hm.\n\nSunny."]
