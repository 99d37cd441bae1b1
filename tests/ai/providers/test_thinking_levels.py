"""Unified thinking levels through ``stream_simple``, for all four APIs: what goes on the wire.

Each case sends a real request to a loopback server and reads the body it received. The level a
model does not accept clamps to the nearest accepted one, upward first, and the caller can see the
effective level beforehand with ``clamp_thinking_level`` (the same function every provider uses).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from narrowing import is_json_object
from tether.ai import SimpleStreamOptions, clamp_thinking_level, complete_simple, supported_thinking_levels
from tether.ai.types import Context, ThinkingLevel
from tether.testing.loopback import LoopbackServer, Reply
from tether.wire import ModelInfo, ThinkingConfig

CONTEXT: Context = {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]}
PATHS = {
    "openai-completions": "/v1",
    "openai-responses": "/v1",
    "anthropic-messages": "",
    "google-generative-ai": "/v1beta",
}


def model(
    api: str, model_id: str, provider: str, max_tokens: int = 64000, thinking: ThinkingConfig | None = None
) -> ModelInfo:
    spec: ModelInfo = {
        "id": model_id,
        "name": model_id,
        "api": api,
        "provider": provider,
        "baseUrl": "",
        "reasoning": True,
        "input": ["text"],
        "cost": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 200000,
        "maxTokens": max_tokens,
    }
    if thinking is not None:
        spec["thinking"] = thinking
    return spec


async def sent_body(spec: ModelInfo, level: ThinkingLevel | None) -> dict[str, Any]:
    """The JSON body ``stream_simple`` sends for ``level`` (the server answers 400, not retried)."""
    async with LoopbackServer([Reply(b'{"error":{"message":"no"}}', 400)]) as server:
        target: ModelInfo = {**spec, "baseUrl": server.url + PATHS[spec["api"]]}
        final = await complete_simple(target, CONTEXT, SimpleStreamOptions(api_key="k", reasoning=level))
    assert final["stopReason"] == "error" and final.get("errorStatus") == 400
    return json.loads(server.requests[0].body)


ANTHROPIC = "anthropic-messages"
RESPONSES = "openai-responses"
CHAT = "openai-completions"
GEMINI = "google-generative-ai"


@pytest.mark.parametrize(
    ("spec", "level", "effective", "expected"),
    [
        # No room for the API's minimum budget (1024) next to the answer: no thinking at all.
        (
            model(ANTHROPIC, "claude-sonnet-4-5", "anthropic", max_tokens=1500),
            "high",
            "high",
            {"thinking": {"type": "disabled"}, "max_tokens": 1500},
        ),
        # Anthropic, budget models: the budget is added on top of the answer's max_tokens.
        (
            model(ANTHROPIC, "claude-sonnet-4-5", "anthropic"),
            "medium",
            "medium",
            {
                "thinking": {"type": "enabled", "budget_tokens": 8192, "display": "summarized"},
                "max_tokens": 32000 + 8192,
            },
        ),
        (
            model(ANTHROPIC, "claude-sonnet-4-5", "anthropic"),
            "xhigh",
            "high",
            {
                "thinking": {"type": "enabled", "budget_tokens": 16384, "display": "summarized"},
                "max_tokens": 32000 + 16384,
            },
        ),
        # ... within the model's limit, leaving room for the answer.
        (
            model(ANTHROPIC, "claude-sonnet-4-5", "anthropic", max_tokens=4096),
            "high",
            "high",
            {
                "thinking": {"type": "enabled", "budget_tokens": 4096 - 1024, "display": "summarized"},
                "max_tokens": 4096,
            },
        ),
        (
            model(ANTHROPIC, "claude-sonnet-4-5", "anthropic"),
            "off",
            "off",
            {"thinking": {"type": "disabled"}},
        ),
        # Anthropic, adaptive models: an effort, clamped to what each accepts.
        (
            model(ANTHROPIC, "claude-sonnet-4-6", "anthropic"),
            "xhigh",
            "max",
            {"thinking": {"type": "adaptive", "display": "summarized"}, "output_config": {"effort": "max"}},
        ),
        (
            model(ANTHROPIC, "claude-opus-4-7", "anthropic"),
            "xhigh",
            "xhigh",
            {"thinking": {"type": "adaptive", "display": "summarized"}, "output_config": {"effort": "xhigh"}},
        ),
        (
            model(ANTHROPIC, "claude-opus-4-6", "anthropic"),
            "minimal",
            "low",
            {"thinking": {"type": "adaptive", "display": "summarized"}, "output_config": {"effort": "low"}},
        ),
        # OpenAI Responses: reasoning.effort with a summary and the encrypted reasoning.
        (
            model(RESPONSES, "gpt-5", "openai"),
            "medium",
            "medium",
            {
                "reasoning": {"effort": "medium", "summary": "auto"},
                "include": ["reasoning.encrypted_content"],
            },
        ),
        (
            model(RESPONSES, "gpt-5", "openai"),
            "max",
            "high",
            {"reasoning": {"effort": "high", "summary": "auto"}, "include": ["reasoning.encrypted_content"]},
        ),
        (
            model(RESPONSES, "gpt-5.2", "openai"),
            "max",
            "xhigh",
            {"reasoning": {"effort": "xhigh", "summary": "auto"}, "include": ["reasoning.encrypted_content"]},
        ),
        # o3 cannot stop reasoning: off is its lowest effort.
        (
            model(RESPONSES, "o3", "openai"),
            "off",
            "low",
            {"reasoning": {"effort": "low", "summary": "auto"}, "include": ["reasoning.encrypted_content"]},
        ),
        # A model whose config maps levels to its own wire values, and that can stop reasoning.
        (
            model(
                RESPONSES,
                "house-model",
                "house",
                thinking={"mode": "effort", "efforts": ["low", "high"], "effortMap": {"high": "deep"}},
            ),
            "medium",
            "high",
            {"reasoning": {"effort": "deep", "summary": "auto"}, "include": ["reasoning.encrypted_content"]},
        ),
        (
            model(RESPONSES, "house-model", "house", thinking={"mode": "effort", "efforts": ["low", "high"]}),
            "off",
            "off",
            {"reasoning": {"effort": "none"}},
        ),
        # OpenAI Chat Completions: reasoning_effort, clamped the same way.
        (model(CHAT, "o3", "openai"), "minimal", "low", {"reasoning_effort": "low"}),
        (model(CHAT, "gpt-5", "openai"), "off", "minimal", {"reasoning_effort": "minimal"}),
        # Gemini 3: thinkingLevel; it cannot turn thinking off, so off thinks at its lowest level, unshown.
        (
            model(GEMINI, "gemini-3-pro-preview", "google"),
            "medium",
            "high",
            {
                "generationConfig": {
                    "maxOutputTokens": 32000,
                    "thinkingConfig": {"includeThoughts": True, "thinkingLevel": "HIGH"},
                }
            },
        ),
        (
            model(GEMINI, "gemini-3-pro-preview", "google"),
            "off",
            "low",
            {"generationConfig": {"maxOutputTokens": 32000, "thinkingConfig": {"thinkingLevel": "LOW"}}},
        ),
        (
            model(GEMINI, "gemini-3-flash-preview", "google"),
            "minimal",
            "minimal",
            {
                "generationConfig": {
                    "maxOutputTokens": 32000,
                    "thinkingConfig": {"includeThoughts": True, "thinkingLevel": "MINIMAL"},
                }
            },
        ),
        # Gemini 2.5: token budgets; Flash can turn thinking off, Pro cannot.
        (
            model(GEMINI, "gemini-2.5-flash", "google"),
            "low",
            "low",
            {
                "generationConfig": {
                    "maxOutputTokens": 32000,
                    "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 2048},
                }
            },
        ),
        (
            model(GEMINI, "gemini-2.5-flash", "google"),
            "off",
            "off",
            {"generationConfig": {"maxOutputTokens": 32000, "thinkingConfig": {"thinkingBudget": 0}}},
        ),
        (
            model(GEMINI, "gemini-2.5-pro", "google"),
            "off",
            "minimal",
            {"generationConfig": {"maxOutputTokens": 32000, "thinkingConfig": {"thinkingBudget": 128}}},
        ),
        (
            model(GEMINI, "gemini-2.5-pro", "google"),
            "max",
            "high",
            {
                "generationConfig": {
                    "maxOutputTokens": 32000,
                    "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 32768},
                }
            },
        ),
    ],
    ids=lambda v: v["id"] if is_json_object(v) and "id" in v else None,
)
async def test_level_on_the_wire(
    spec: ModelInfo, level: ThinkingLevel, effective: ThinkingLevel, expected: dict[str, Any]
) -> None:
    assert clamp_thinking_level(spec, level) == effective  # what the caller sees beforehand
    assert effective in supported_thinking_levels(spec)
    body = await sent_body(spec, level)
    for key, value in expected.items():
        assert body.get(key) == value, key
    if effective == "off":
        assert "include" not in body  # no encrypted reasoning is asked for when there is none


@pytest.mark.parametrize("api", [ANTHROPIC, RESPONSES, CHAT, GEMINI])
async def test_a_model_without_reasoning_gets_no_thinking_fields(api: str) -> None:
    spec = model(api, "plain", "house")
    spec["reasoning"] = False
    body = await sent_body(spec, "high")
    assert clamp_thinking_level(spec, "high") == "off"
    assert not {"thinking", "reasoning", "reasoning_effort", "include", "output_config"} & body.keys()
    assert "thinkingConfig" not in body.get("generationConfig", {})
