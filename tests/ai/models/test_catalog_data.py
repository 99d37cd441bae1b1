"""The shipped catalog: every entry is a valid ModelInfo and the file is consistent."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest

from tether.ai.thinking import LEVELS, family_thinking_config
from tether.wire import MODEL_INFO, WireError

SHIPPED = {"openai", "anthropic", "google", "groq", "openrouter", "xai", "deepseek", "mistral", "cerebras"}
APIS = {"openai-completions", "openai-responses", "anthropic-messages", "google-generative-ai"}


def _catalog() -> dict[str, Any]:
    return json.loads(resources.files("tether.ai").joinpath("catalog.json").read_bytes())


CATALOG = _catalog()
MODELS: list[dict[str, Any]] = CATALOG["models"]


@pytest.mark.parametrize("entry", MODELS, ids=[f"{m['provider']}/{m['id']}" for m in MODELS])
def test_every_entry_is_a_valid_model_info(entry: dict[str, Any]) -> None:
    decoded = MODEL_INFO.decode(entry)
    # closed record: decoding drops unknown keys, so equality proves the entry has none
    assert decoded == entry


def test_model_info_codec_would_reject_a_broken_entry() -> None:
    broken = {**MODELS[0], "contextWindow": "200k"}
    with pytest.raises(WireError, match=r"^model\.contextWindow: "):
        MODEL_INFO.decode(broken)


def test_every_shipped_provider_has_models_with_one_api_and_base_url() -> None:
    providers = CATALOG["providers"]
    assert set(providers) == SHIPPED
    for model in MODELS:
        provider = providers[model["provider"]]
        assert model["api"] == provider["api"], model["id"]
        assert model["baseUrl"] == provider["baseUrl"], model["id"]
        assert model["api"] in APIS
    for name, provider in providers.items():
        assert provider["apiKeyEnv"].endswith("_API_KEY"), name
        assert any(m["provider"] == name for m in MODELS), name


def test_sorted_by_provider_then_id_without_duplicates() -> None:
    keys = [(m["provider"], m["id"]) for m in MODELS]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)


def test_numbers_are_plausible() -> None:
    for model in MODELS:
        name = f"{model['provider']}/{model['id']}"
        assert all(rate >= 0 for rate in model["cost"].values()), name
        assert model["contextWindow"] is None or model["contextWindow"] >= 1000, name
        assert model["maxTokens"] is None or model["maxTokens"] >= 256, name
        assert set(model["input"]) <= {"text", "image"} and "text" in model["input"], name


def test_thinking_configs_are_ordered_and_only_on_reasoning_models() -> None:
    order = {level: i for i, level in enumerate(LEVELS)}
    for model in MODELS:
        thinking = model.get("thinking")
        if thinking is None:
            continue
        name = f"{model['provider']}/{model['id']}"
        assert model["reasoning"], name
        efforts = thinking["efforts"]
        assert efforts and efforts == sorted(set(efforts), key=order.__getitem__), name
        assert set(thinking.get("effortMap", {})) <= set(efforts), name
        if thinking["mode"] == "budget":
            assert set(thinking["effortBudgets"]) == set(efforts), name


def test_native_reasoning_models_of_the_big_three_carry_thinking_levels() -> None:
    # Family rules cover every reasoning model Anthropic, OpenAI and Google ship (except the
    # Gemini Live models, which have no thinking control).
    missing = [
        f"{m['provider']}/{m['id']}"
        for m in MODELS
        if m["provider"] in ("anthropic", "openai", "google")
        and m["reasoning"]
        and "thinking" not in m
        and "-live-" not in m["id"]
    ]
    assert missing == []


def test_mistral_goes_through_its_openai_compatible_endpoint() -> None:
    mistral = [m for m in MODELS if m["provider"] == "mistral"]
    assert mistral
    for model in mistral:
        assert model["api"] == "openai-completions"
        assert model["baseUrl"] == "https://api.mistral.ai/v1"
        assert model["compat"]["maxTokensField"] == "max_tokens"
        assert model["compat"]["requiresMistralToolIds"] is True


def test_shipped_thinking_agrees_with_the_family_rules() -> None:
    # The generator bakes the family rules into the catalog; a rule changed without regenerating
    # would make shipped and user-defined copies of one model behave differently.
    stale: list[str] = []
    for entry in MODELS:
        model = MODEL_INFO.decode(entry)
        rule = family_thinking_config(model)
        if rule is not None and model.get("thinking") != rule:
            stale.append(f"{model['provider']}/{model['id']}")
    assert stale == []
