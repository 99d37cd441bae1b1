"""API keys of ``models.json`` providers: ``apiKeyEnv`` is read, and no ``apiKeyEnv`` means no key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.ai.keys import is_keyless, missing_key_message, resolve_api_key
from tether.ai.models import find_model
from tether.wire import ModelInfo


def write(config_dir: Path, provider: dict[str, object]) -> None:
    body = {"providers": {"mybox": {"api": "openai-completions", "models": [{"id": "coder"}], **provider}}}
    (config_dir / "models.json").write_text(json.dumps(body))


def test_api_key_env_of_a_user_provider_is_read(config_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(config_dir, {"baseUrl": "https://llm.example.internal/v1", "apiKeyEnv": "MYBOX_TOKEN"})
    model = find_model("mybox/coder")
    monkeypatch.delenv("MYBOX_TOKEN", raising=False)
    assert resolve_api_key(model) is None
    assert not is_keyless(model)
    assert "MYBOX_TOKEN" in missing_key_message(model)
    monkeypatch.setenv("MYBOX_TOKEN", "t-123")
    key = resolve_api_key(model)
    assert key is not None and (key.value, key.env_var) == ("t-123", "MYBOX_TOKEN")


def test_user_provider_without_a_key_on_the_network_is_keyless(config_dir: Path) -> None:
    write(config_dir, {"baseUrl": "http://10.1.2.3:8000/v1"})
    assert is_keyless(find_model("mybox/coder"))


def test_shipped_provider_still_needs_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = find_model("openai/gpt-4o")
    assert not is_keyless(model)
    assert "OPENAI_API_KEY" in missing_key_message(model)


def test_a_broken_models_file_does_not_break_key_lookup(config_dir: Path) -> None:
    (config_dir / "models.json").write_text("{not json")
    model: ModelInfo = {
        "id": "m",
        "name": "m",
        "api": "openai-completions",
        "provider": "somewhere",
        "baseUrl": "https://api.somewhere.test/v1",
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": None,
        "maxTokens": None,
    }
    assert resolve_api_key(model) is None
    assert "SOMEWHERE_API_KEY" in missing_key_message(model)
