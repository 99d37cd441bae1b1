"""``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL`` and ``GOOGLE_GEMINI_BASE_URL`` move their provider
as the official SDKs do: every catalog model of it, requests included; an explicit ``baseUrl`` of
``models.json`` still wins; unset, the shipped URL is back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.ai import stream
from tether.ai.models import ModelRegistry, get_model, get_provider_info
from tether.ai.types import Context, StreamOptions
from tether.testing.loopback import LoopbackServer, Reply


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_each_variable_moves_its_provider_and_only_while_set(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = ModelRegistry()
    shipped = registry.get_model("openai", "gpt-5")["baseUrl"]
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1/")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://gateway.example/anthropic")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "https://gateway.example/gemini/")

    assert registry.get_model("openai", "gpt-5")["baseUrl"] == "http://127.0.0.1:8080/v1"
    assert registry.get_provider_info("openai").base_url == "http://127.0.0.1:8080/v1"
    assert (
        registry.get_model("anthropic", "claude-sonnet-4-5")["baseUrl"] == "https://gateway.example/anthropic"
    )
    # google-genai adds the API version to its variable's URL; the catalog's URL holds it.
    assert (
        registry.get_model("google", "gemini-2.5-pro")["baseUrl"] == "https://gateway.example/gemini/v1beta"
    )
    assert registry.get_model("groq", "openai/gpt-oss-120b")["baseUrl"] == "https://api.groq.com/openai/v1"

    monkeypatch.delenv("OPENAI_BASE_URL")
    assert registry.get_model("openai", "gpt-5")["baseUrl"] == shipped


def test_models_json_base_url_wins_over_the_variable(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (home / "config").mkdir(parents=True)
    providers = {"openai": {"baseUrl": "https://proxy.example/v1"}}
    (home / "config" / "models.json").write_text(json.dumps({"providers": providers}))
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")
    assert get_model("openai", "gpt-5")["baseUrl"] == "https://proxy.example/v1"
    assert get_provider_info("openai").base_url == "https://proxy.example/v1"


def test_a_model_json_header_override_keeps_the_moved_url(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (home / "config").mkdir(parents=True)
    providers = {"anthropic": {"headers": {"x-team": "a"}}}
    (home / "config" / "models.json").write_text(json.dumps({"providers": providers}))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://gateway.example")
    model = get_model("anthropic", "claude-sonnet-4-5")
    assert (model["baseUrl"], model.get("headers")) == ("https://gateway.example", {"x-team": "a"})


async def test_requests_go_to_the_moved_url(monkeypatch: pytest.MonkeyPatch) -> None:
    body = b'event: message_start\ndata: {"type":"message_start","message":{"id":"m1","usage":{"input_tokens":1,"output_tokens":0}}}\n\n'
    async with LoopbackServer(
        [Reply(body + b'event: message_stop\ndata: {"type":"message_stop"}\n\n')]
    ) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        model = get_model("anthropic", "claude-sonnet-4-5")
        context: Context = {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]}
        await stream(model, context, StreamOptions(api_key="k", max_retries=0)).result()
    [request] = server.requests
    assert request.path == "/v1/messages"
