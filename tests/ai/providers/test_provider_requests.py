"""What we send: request bodies and headers of both providers, compat detection, option mapping."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from tether.ai import SimpleStreamOptions, StreamOptions, complete_simple
from tether.ai.handoff import TOOL_IMAGE_PLACEHOLDER, USER_IMAGE_PLACEHOLDER
from tether.ai.providers import anthropic, openai_completions
from tether.ai.providers.openai_completions import (
    OpenAICompletionsOptions,
    detect_compat,
    resolve_compat,
)
from tether.ai.types import Context, Tool
from tether.testing.loopback import LoopbackServer, Reply
from tether.wire import (
    AssistantContent,
    AssistantMessage,
    Effort,
    JsonObject,
    ModelInfo,
    StopReason,
    ThinkingConfig,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
)

PNG = "iVBORw0KGgo="


def model(
    provider: str,
    url: str,
    api: str = "openai-completions",
    *,
    id: str = "m",
    reasoning: bool = False,
    input: Sequence[str] = ("text",),
    maxTokens: int = 30000,
    compat: JsonObject | None = None,
    thinking: ThinkingConfig | None = None,
) -> ModelInfo:
    spec: ModelInfo = {
        "id": id,
        "name": "m",
        "api": api,
        "provider": provider,
        "baseUrl": url,
        "reasoning": reasoning,
        "input": list(input),
        "cost": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 100000,
        "maxTokens": maxTokens,
    }
    if compat is not None:
        spec["compat"] = compat
    if thinking is not None:
        spec["thinking"] = thinking
    return spec


def assistant(
    *content: AssistantContent,
    stop: StopReason = "toolUse",
    api: str = "openai-completions",
    provider: str = "openai",
) -> AssistantMessage:
    """An earlier answer; the handoff replays signatures only to the model that wrote them."""
    return {
        "role": "assistant",
        "content": list(content),
        "api": api,
        "provider": provider,
        "model": "m",
        "usage": {
            "input": 0,
            "output": 0,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 0,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
        "stopReason": stop,
        "timestamp": 0,
    }


def result(call_id: str, text: str, *, images: bool = False, error: bool = False) -> ToolResultMessage:
    content: list[UserContent] = [{"type": "text", "text": text}] if text else []
    if images:
        content.append({"type": "image", "data": PNG, "mimeType": "image/png"})
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": "read",
        "content": content,
        "isError": error,
        "timestamp": 0,
    }


CALL: ToolCall = {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "a.py"}}
CALL_2: ToolCall = {"type": "toolCall", "id": "call_2", "name": "read", "arguments": {"path": "b.py"}}
TOOLS: list[Tool] = [
    {
        "name": "read",
        "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
]

CONTEXT: Context = {
    "systemPrompt": "Be brief.",
    "messages": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look \ud83d"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
            ],
            "timestamp": 0,
        },
        assistant(
            {"type": "thinking", "thinking": "need file", "thinkingSignature": "reasoning_content"}, CALL
        ),
        result("call_1", "print(1)"),
        assistant(stop="aborted"),
        {"role": "user", "content": "thanks", "timestamp": 0},
    ],
    "tools": TOOLS,
}


# -- openai-completions --------------------------------------------------------------------------


def test_compat_detection_by_provider_and_url() -> None:
    openai = detect_compat(model("openai", "https://api.openai.com/v1"))
    assert (openai.maxTokensField, openai.supportsStore, openai.supportsDeveloperRole) == (
        "max_completion_tokens",
        True,
        True,
    )
    mistral = detect_compat(model("custom", "https://api.mistral.ai/v1"))
    assert (mistral.maxTokensField, mistral.requiresToolResultName, mistral.supportsStrictMode) == (
        "max_tokens",
        True,
        False,
    )
    ollama = detect_compat(model("ollama", "http://localhost:11434/v1"))
    assert (ollama.maxTokensField, ollama.supportsDeveloperRole) == ("max_tokens", False)
    deepseek = detect_compat(model("deepseek", "https://api.deepseek.com"))
    assert (deepseek.thinkingFormat, deepseek.requiresReasoningContentOnAssistantMessages) == (
        "deepseek",
        True,
    )
    assert detect_compat(
        model("openrouter", "https://openrouter.ai/api/v1", id="anthropic/claude-sonnet-4.5")
    ).anthropicCacheControl
    assert not detect_compat(model("xai", "https://api.x.ai/v1")).supportsReasoningEffort


@pytest.mark.parametrize(
    ("provider", "url", "role"),
    [
        ("openai", "https://api.openai.com/v1", "developer"),
        ("custom", "https://api.openai.com/v1", "developer"),
        ("openrouter", "https://openrouter.ai/api/v1", "system"),
        ("faux", "http://127.0.0.1:9/v1", "system"),
        ("groq", "https://api.groq.com/openai/v1", "system"),
    ],
)
def test_a_reasoning_models_instructions_go_as_developer_only_to_openai(
    provider: str, url: str, role: str
) -> None:
    """pi 1.6: the developer role is OpenAI's; other hosts' chat templates often reject it."""
    spec = model(provider, url, reasoning=True)
    body = openai_completions.build_request(spec, CONTEXT, OpenAICompletionsOptions(), "key").body
    assert body["messages"][0] == {"role": role, "content": "Be brief."}


def test_model_compat_overrides_detection() -> None:
    spec = model(
        "openai", "https://api.openai.com/v1", compat={"maxTokensField": "max_tokens", "unknownKey": 1}
    )
    assert resolve_compat(spec).maxTokensField == "max_tokens"


def test_openai_body_for_a_reasoning_model() -> None:
    spec = model("openai", "https://api.openai.com/v1", reasoning=True, input=["text", "image"])
    options = OpenAICompletionsOptions(
        max_tokens=500, reasoning_effort="high", session_id="s1", extra={"seed": 7}
    )
    request = openai_completions.build_request(spec, CONTEXT, options, "key")
    body = request.body
    assert request.url == "https://api.openai.com/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer key"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["store"] is False and body["max_completion_tokens"] == 500
    assert body["reasoning_effort"] == "high" and body["prompt_cache_key"] == "s1" and body["seed"] == 7
    messages = body["messages"]
    assert messages[0] == {"role": "developer", "content": "Be brief."}
    assert messages[1]["content"][0] == {"type": "text", "text": "look "}  # lone surrogate stripped
    assert messages[1]["content"][1]["image_url"]["url"] == f"data:image/png;base64,{PNG}"
    call_turn = messages[2]
    assert call_turn["reasoning_content"] == "need file"  # reasoning goes back in its own field
    assert call_turn["tool_calls"][0]["function"] == {"name": "read", "arguments": '{"path": "a.py"}'}
    assert messages[3] == {"role": "tool", "content": "print(1)", "tool_call_id": "call_1"}
    assert messages[4] == {"role": "user", "content": "thanks"}  # the empty aborted turn is dropped
    assert body["tools"][0]["function"]["strict"] is False


def test_text_only_model_gets_image_placeholders_and_mistral_names_tool_results() -> None:
    spec = model("mistral", "https://api.mistral.ai/v1")
    context: Context = {
        "messages": [CONTEXT["messages"][0], assistant(CALL), result("call_1", "", images=True)]
    }
    body = openai_completions.build_request(spec, context, StreamOptions(max_tokens=10), "k").body
    assert body["max_tokens"] == 10 and "store" not in body
    # The cross-provider handoff (tether.ai.handoff) replaces images for text-only models.
    assert body["messages"][0]["content"][1] == {"type": "text", "text": USER_IMAGE_PLACEHOLDER}
    tool = body["messages"][2]
    assert tool["name"] == "read" and tool["content"] == TOOL_IMAGE_PLACEHOLDER
    assert body["tools"] == []  # tool history without tools: proxies need the key


def test_tool_results_send_their_text_and_their_images_in_a_user_turn_after_them() -> None:
    spec = model("openai", "https://api.openai.com/v1", input=["text", "image"])
    mixed = result("call_1", "first")
    mixed["content"].extend(
        [{"type": "image", "data": PNG, "mimeType": "image/png"}, {"type": "text", "text": "second"}]
    )
    context: Context = {
        "messages": [
            {"role": "user", "content": "read both", "timestamp": 0},
            assistant({"type": "text", "text": "Reading é"}, CALL, CALL_2),
            mixed,
            result("call_2", "", images=True),
        ]
    }
    body = openai_completions.build_request(spec, context, StreamOptions(), "k").body
    url = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    calls = body["messages"][1]["tool_calls"]
    assert body["messages"][1]["content"] == "Reading é"
    assert [c["function"]["arguments"] for c in calls] == ['{"path": "a.py"}', '{"path": "b.py"}']
    assert body["messages"][2:] == [
        {"role": "tool", "content": "first\nsecond", "tool_call_id": "call_1"},
        {"role": "tool", "content": "(see attached image)", "tool_call_id": "call_2"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "Attached image(s) from tool result:"}, url, url],
        },
    ]


def test_volatile_context_follows_the_system_prompt() -> None:
    context: Context = {"systemPrompt": "Be brief.", "volatileContext": "Now: Monday", "messages": []}
    body = openai_completions.build_request(
        model("groq", "https://api.groq.com/openai/v1"), context, StreamOptions(), "k"
    ).body
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "system", "content": "Now: Monday"},
    ]


def test_openrouter_anthropic_models_get_cache_marks() -> None:
    spec = model("openrouter", "https://openrouter.ai/api/v1", id="anthropic/claude-sonnet-4.5")
    body = openai_completions.build_request(spec, CONTEXT, StreamOptions(), "k").body
    assert body["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}


async def test_stream_simple_maps_thinking_levels_on_the_wire() -> None:
    done = b'data: {"id":"r","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\n'
    async with LoopbackServer([Reply(done)]) as server:
        efforts: list[Effort] = ["low", "medium", "high", "xhigh", "max"]
        spec = model(
            "openai",
            server.url,
            reasoning=True,
            maxTokens=100000,
            thinking={"mode": "effort", "efforts": efforts},
        )
        message = await complete_simple(
            spec, {"messages": []}, SimpleStreamOptions(api_key="k", reasoning="max")
        )
        off = await complete_simple(spec, {"messages": []}, SimpleStreamOptions(api_key="k", reasoning="off"))
    assert message["stopReason"] == "stop" and off["stopReason"] == "stop"
    first, second = (json.loads(r.body) for r in server.requests)
    assert first["reasoning_effort"] == "xhigh"  # Chat Completions has no "max"
    assert first["max_completion_tokens"] == 32000  # default: the model's limit, capped
    assert "reasoning_effort" not in second


# -- anthropic-messages ------------------------------------------------------------------------


def test_anthropic_body_caching_and_replay() -> None:
    spec = model("anthropic", "https://api.anthropic.com", api="anthropic-messages", input=["text", "image"])
    signed: ThinkingContent = {"type": "thinking", "thinking": "plan", "thinkingSignature": "sig"}
    # how the Anthropic parser records a redacted block: the open record's extra `redacted` key,
    # which ThinkingContent does not declare (hence the ignore)
    redacted: ThinkingContent = {
        "type": "thinking",
        "thinking": "[Reasoning redacted]",
        "thinkingSignature": "opaque",
        "redacted": True,  # type: ignore[typeddict-unknown-key]
    }
    unsigned: ThinkingContent = {"type": "thinking", "thinking": "half a thought"}
    context: Context = {
        "systemPrompt": "Be brief.",
        "volatileContext": "Today is Monday.",
        "messages": [
            {"role": "user", "content": "hi", "timestamp": 0},
            assistant(
                signed, redacted, unsigned, CALL, CALL_2, api="anthropic-messages", provider="anthropic"
            ),
            result("call_1", "ok"),
            result("call_2", "bad", error=True),
        ],
        "tools": TOOLS,
    }
    request = anthropic.build_request(spec, context, StreamOptions(cache_retention="long"), "sk-ant-api-1")
    body = request.body
    assert request.url == "https://api.anthropic.com/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant-api-1"
    assert request.headers["anthropic-version"] == "2023-06-01"
    mark = {"type": "ephemeral", "ttl": "1h"}
    assert body["system"] == [
        {"type": "text", "text": "Be brief.", "cache_control": mark},
        {"type": "text", "text": "Today is Monday."},
    ]
    assert body["tools"][-1]["cache_control"] == mark
    assert body["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "plan", "signature": "sig"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "text", "text": "half a thought"},
        {"type": "tool_use", "id": "call_1", "name": "read", "input": {"path": "a.py"}},
        {"type": "tool_use", "id": "call_2", "name": "read", "input": {"path": "b.py"}},
    ]
    results = body["messages"][2]
    assert results["role"] == "user" and [r["tool_use_id"] for r in results["content"]] == [
        "call_1",
        "call_2",
    ]
    assert results["content"][1]["is_error"] is True
    assert results["content"][-1]["cache_control"] == mark  # the last user block
    assert body["max_tokens"] == 10000  # a third of the model's limit by default


def test_anthropic_no_cache_marks_when_disabled_and_image_placeholder() -> None:
    spec = model("anthropic", "https://api.anthropic.com", api="anthropic-messages")
    body = anthropic.build_request(spec, CONTEXT, StreamOptions(cache_retention="none"), "k").body
    assert "cache_control" not in json.dumps(body)
    assert body["messages"][0]["content"][1] == {"type": "text", "text": USER_IMAGE_PLACEHOLDER}


def test_anthropic_oauth_token_uses_bearer_and_identity() -> None:
    spec = model("anthropic", "https://api.anthropic.com", api="anthropic-messages")
    request = anthropic.build_request(spec, CONTEXT, StreamOptions(), "sk-ant-oat01-x")
    assert request.headers["authorization"] == "Bearer sk-ant-oat01-x" and "x-api-key" not in request.headers
    assert request.body["system"][0]["text"] == anthropic.CLAUDE_CODE_IDENTITY


async def test_anthropic_thinking_budget_and_adaptive_effort() -> None:
    body = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"x","usage":{}}}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    async with LoopbackServer([Reply(body)]) as server:
        budget_model = model(
            "anthropic",
            server.url,
            api="anthropic-messages",
            id="claude-sonnet-4-5",
            reasoning=True,
            maxTokens=64000,
        )
        adaptive_model = model(
            "anthropic", server.url, api="anthropic-messages", id="claude-sonnet-4-6", reasoning=True
        )
        options = SimpleStreamOptions(api_key="k", reasoning="medium", max_tokens=4000, temperature=0.5)
        await complete_simple(budget_model, {"messages": []}, options)
        await complete_simple(adaptive_model, {"messages": []}, options)
    budget, adaptive = (json.loads(r.body) for r in server.requests)
    assert budget["thinking"] == {"type": "enabled", "budget_tokens": 8192, "display": "summarized"}
    assert budget["max_tokens"] == 4000 + 8192  # room left for the answer
    assert "temperature" not in budget  # incompatible with thinking
    assert "interleaved-thinking-2025-05-14" in server.requests[0].headers["anthropic-beta"]
    assert adaptive["thinking"]["type"] == "adaptive" and adaptive["output_config"] == {"effort": "medium"}
