"""Supported thinking levels, clamping, effort values and budgets."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings, strategies as st

from tether.ai import models
from tether.ai.thinking import (
    LEVELS,
    MIN_ANSWER_TOKENS,
    clamp_thinking_level,
    config_from_level_map,
    family_thinking_config,
    plan_thinking_budget,
    supported_thinking_levels,
    thinking_budget,
    thinking_effort,
)
from tether.ai.types import ThinkingLevel
from tether.wire import ModelInfo, ThinkingConfig

CATALOG = models.load_catalog()
ALL_MODELS = sorted(CATALOG.models.values(), key=lambda m: (m["provider"], m["id"]))


def shipped(provider: str, model_id: str) -> ModelInfo:
    return CATALOG.models[(provider, model_id)]


def custom(
    model_id: str,
    api: str,
    reasoning: bool = True,
    *,
    provider: str = "mine",
    maxTokens: int = 64000,
    thinking: ThinkingConfig | None = None,
) -> ModelInfo:
    model: ModelInfo = {
        "id": model_id,
        "name": model_id,
        "api": api,
        "provider": provider,
        "baseUrl": "http://127.0.0.1:9/v1",
        "reasoning": reasoning,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 200000,
        "maxTokens": maxTokens,
    }
    if thinking is not None:
        model["thinking"] = thinking
    return model


@pytest.mark.parametrize(
    ("provider", "model_id", "levels"),
    [
        ("openai", "gpt-4o", ["off"]),
        ("openai", "gpt-5", ["minimal", "low", "medium", "high"]),
        ("openai", "gpt-5.2", ["minimal", "low", "medium", "high", "xhigh"]),
        ("openai", "gpt-5-pro", ["high"]),
        ("openai", "o3", ["low", "medium", "high"]),
        ("anthropic", "claude-sonnet-4-5", ["off", "minimal", "low", "medium", "high"]),
        ("anthropic", "claude-opus-4-6", ["off", "low", "medium", "high", "max"]),
        ("anthropic", "claude-opus-4-7", ["off", "low", "medium", "high", "xhigh", "max"]),
        ("google", "gemini-2.5-flash", ["off", "minimal", "low", "medium", "high"]),
        ("google", "gemini-2.5-pro", ["minimal", "low", "medium", "high"]),
        ("google", "gemini-3-pro-preview", ["low", "high"]),
        ("deepseek", "deepseek-v4-pro", ["off", "high", "max"]),
        ("groq", "openai/gpt-oss-120b", ["low", "medium", "high"]),
        ("groq", "qwen/qwen3-32b", ["off", "high"]),
        # a reasoning model nobody described further: pi-ai's assumption
        ("xai", "grok-4", ["off", "minimal", "low", "medium", "high"]),
    ],
)
def test_supported_levels_of_shipped_models(provider: str, model_id: str, levels: list[str]) -> None:
    assert supported_thinking_levels(shipped(provider, model_id)) == levels


def test_family_rules_apply_to_user_defined_models() -> None:
    # A user's own Anthropic-compatible endpoint serving Opus 4.7 gets the same levels.
    opus = custom("claude-opus-4-7-20260101", "anthropic-messages")
    assert supported_thinking_levels(opus) == ["off", "low", "medium", "high", "xhigh", "max"]
    # gpt-oss on any OpenAI-compatible host
    assert supported_thinking_levels(custom("gpt-oss:20b", "openai-completions")) == ["low", "medium", "high"]
    # an explicit ThinkingConfig wins over the family rule
    own = custom("gpt-oss:20b", "openai-completions", thinking={"mode": "effort", "efforts": ["high"]})
    assert supported_thinking_levels(own) == ["off", "high"]
    # a model without reasoning accepts only off, whatever its config says
    assert supported_thinking_levels(custom("claude-opus-4-7", "anthropic-messages", reasoning=False)) == [
        "off"
    ]


def test_routers_are_left_to_their_own_data() -> None:
    routed = custom("anthropic/claude-opus-4.7", "openai-completions", provider="openrouter")
    assert family_thinking_config(routed) is None


@pytest.mark.parametrize(
    ("provider", "model_id", "asked", "effective"),
    [
        ("openai", "gpt-4o", "high", "off"),  # no reasoning: always off
        ("openai", "gpt-5", "off", "minimal"),  # cannot stop thinking: lowest effort
        ("openai", "gpt-5", "xhigh", "high"),  # above the top: the most it offers
        ("openai", "gpt-5", "max", "high"),
        ("openai", "gpt-5.2", "max", "xhigh"),
        ("openai", "o3", "minimal", "low"),  # upward first
        ("anthropic", "claude-opus-4-6", "minimal", "low"),
        ("anthropic", "claude-opus-4-6", "xhigh", "max"),  # upward first, not down to high
        ("anthropic", "claude-opus-4-7", "xhigh", "xhigh"),
        ("anthropic", "claude-sonnet-4-5", "max", "high"),
        ("google", "gemini-3-pro-preview", "medium", "high"),
        ("google", "gemini-3-pro-preview", "off", "low"),
        ("deepseek", "deepseek-v4-flash", "low", "high"),
        ("deepseek", "deepseek-v4-flash", "off", "off"),
    ],
)
def test_clamp(provider: str, model_id: str, asked: ThinkingLevel, effective: ThinkingLevel) -> None:
    assert clamp_thinking_level(shipped(provider, model_id), asked) == effective


@settings(max_examples=150, deadline=None)
@given(model=st.sampled_from(ALL_MODELS), low=st.sampled_from(LEVELS), high=st.sampled_from(LEVELS))
def test_clamp_properties_over_the_whole_catalog(
    model: ModelInfo, low: ThinkingLevel, high: ThinkingLevel
) -> None:
    if LEVELS.index(low) > LEVELS.index(high):
        low, high = high, low
    supported = supported_thinking_levels(model)
    a, b = clamp_thinking_level(model, low), clamp_thinking_level(model, high)
    assert a in supported and b in supported
    assert clamp_thinking_level(model, a) == a  # idempotent
    if low in supported:
        assert a == low  # accepted levels pass unchanged
    assert LEVELS.index(a) <= LEVELS.index(b)  # more asked never gives less
    if any(LEVELS.index(s) >= LEVELS.index(low) for s in supported):
        assert LEVELS.index(a) >= LEVELS.index(low)  # upward first when something is above


def test_effort_values() -> None:
    assert thinking_effort(shipped("openai", "gpt-5"), "off") == "minimal"
    assert thinking_effort(shipped("anthropic", "claude-opus-4-6"), "xhigh") == "max"
    assert thinking_effort(shipped("google", "gemini-3-pro-preview"), "medium") == "HIGH"
    assert thinking_effort(shipped("groq", "qwen/qwen3-32b"), "low") == "default"
    assert thinking_effort(shipped("deepseek", "deepseek-v4-pro"), "off") is None
    assert thinking_effort(shipped("openai", "gpt-4o"), "high") is None


def test_budgets_per_family() -> None:
    assert thinking_budget(shipped("anthropic", "claude-sonnet-4-5"), "medium") == 8192
    assert thinking_budget(shipped("anthropic", "claude-sonnet-4-5"), "off") == 0
    assert thinking_budget(shipped("google", "gemini-2.5-pro"), "high") == 32768
    assert thinking_budget(shipped("google", "gemini-2.5-flash"), "high") == 24576
    assert thinking_budget(shipped("google", "gemini-2.5-flash-lite"), "minimal") == 512
    # user-given budgets win over the family's
    own = custom(
        "claude-sonnet-4-5",
        "anthropic-messages",
        thinking={"mode": "budget", "efforts": ["low", "high"], "effortBudgets": {"high": 50000}},
    )
    assert thinking_budget(own, "high") == 50000
    assert thinking_budget(own, "low") == 2048


def test_plan_thinking_budget_leaves_room_for_the_answer() -> None:
    sonnet = shipped("anthropic", "claude-sonnet-4-5")  # maxTokens 64000, high budget 16384
    plan = plan_thinking_budget(sonnet, "high", 8000)
    assert (plan.max_tokens, plan.budget_tokens) == (24384, 16384)
    capped = plan_thinking_budget(sonnet, "high", 60000)
    assert (capped.max_tokens, capped.budget_tokens) == (64000, 16384)
    tiny = custom("claude-sonnet-4-5", "anthropic-messages", maxTokens=16000)
    squeezed = plan_thinking_budget(tiny, "high", 4000)  # 4000 + 16384 > 16000 ≥ budget
    assert squeezed.max_tokens == 16000
    assert squeezed.budget_tokens == 16000 - MIN_ANSWER_TOKENS
    off = plan_thinking_budget(sonnet, "off", 4000)
    assert (off.max_tokens, off.budget_tokens) == (4000, 0)


@settings(max_examples=100, deadline=None)
@given(max_tokens=st.integers(1, 200_000), limit=st.integers(1, 200_000), level=st.sampled_from(LEVELS))
@example(max_tokens=5000, limit=16394, level="high")  # a limit just above the budget
def test_plan_never_exceeds_the_model_limit(max_tokens: int, limit: int, level: ThinkingLevel) -> None:
    model = custom("claude-sonnet-4-5", "anthropic-messages", maxTokens=limit)
    plan = plan_thinking_budget(model, level, max_tokens)
    assert plan.budget_tokens >= 0
    if plan.budget_tokens:
        assert plan.max_tokens <= limit
        assert plan.budget_tokens < plan.max_tokens
        assert plan.max_tokens - plan.budget_tokens >= min(max_tokens, MIN_ANSWER_TOKENS)


def test_config_from_pi_level_map() -> None:
    # real maps from pi-ai 0.73.1's catalog
    assert config_from_level_map({"off": None}) == {
        "mode": "effort",
        "efforts": ["minimal", "low", "medium", "high"],
        "requiresEffort": True,
    }
    assert config_from_level_map({"off": None, "xhigh": "xhigh"}) == {
        "mode": "effort",
        "efforts": ["minimal", "low", "medium", "high", "xhigh"],
        "requiresEffort": True,
    }
    assert config_from_level_map({"minimal": None, "low": None, "medium": None, "high": "default"}) == {
        "mode": "effort",
        "efforts": ["high"],
        "effortMap": {"high": "default"},
    }
    assert config_from_level_map({"minimal": None, "low": None, "medium": None, "high": None}) is None


def test_an_empty_effort_list_falls_back_to_the_family() -> None:
    model = custom("gpt-oss-20b", "openai-completions", thinking={"mode": "effort", "efforts": []})
    assert supported_thinking_levels(model) == ["low", "medium", "high"]
    bare = custom(
        "mystery", "openai-completions", thinking={"mode": "effort", "efforts": [], "requiresEffort": True}
    )
    assert supported_thinking_levels(bare) == ["off", "minimal", "low", "medium", "high"]
    assert clamp_thinking_level(bare, "max") == "high"
