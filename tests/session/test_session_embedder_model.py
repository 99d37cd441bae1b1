"""A session resumed on a model of the embedder's own provider keeps the model as stored.

A program may serve a provider tether's catalog does not know: with its own stream function
(``Agent(stream_fn=...)``, the provider registered nowhere), or registered for that program
(``register_provider_info``) with a model id the catalog does not list. Resuming such a session
must give the model back as the session stored it (its limits and prices: compaction and cost
depend on them), neither failing nor falling back to another model in silence. Where requests
go is never taken from a stored descriptor (``restored_model``): the registered provider's
endpoint, or the embedder's stream function; and headers are never stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

import tether
from tether.agent import Agent
from tether.ai.models import ProviderInfo, default_registry, register_model, register_provider_info
from tether.session import SessionManager
from tether.session.agent_session import AgentSession
from tether.session.factory import AgentOptions, SessionChoice, create_agent_session
from tether.testing.loopback import LoopbackServer, Reply
from tether.testing.scripted import ScriptedModel, reply
from tether.wire import ModelInfo

ACME: dict[str, Any] = {
    "id": "acme-1",
    "name": "Acme One",
    "api": "acme-api",
    "provider": "acme",
    "baseUrl": "https://acme.invalid/v1",
    "reasoning": True,
    "input": ["text"],
    "cost": {"input": 3, "output": 4, "cacheRead": 0, "cacheWrite": 0},
    "contextWindow": 12_345,
    "maxTokens": 678,
}


async def test_a_bare_core_resumes_the_stored_model_of_a_provider_nobody_registered(
    manager: SessionManager,
) -> None:
    model = ScriptedModel([reply("one"), reply("two")])
    with_headers = cast(ModelInfo, {**ACME, "headers": {"x-acme": "1"}})
    first = AgentSession(Agent(model=with_headers, stream_fn=model), manager.create("/p"))
    await first.prompt("hello")
    session_id = first.session_id
    assert session_id is not None
    await first.close()
    again = AgentSession(Agent(stream_fn=model), manager.open(session_id))  # no model: the session's
    try:
        assert again.model == ACME  # as stored (headers never are)
        await again.prompt("more")
        assert model.requests[-1].model == ACME
        session = again.session
        assert session is not None
        assert [e["type"] for e in session.entries()].count("model_change") == 1  # nothing re-recorded
    finally:
        await again.close()


def _sse_text(words: str) -> bytes:
    import json

    chunks: list[dict[str, Any]] = [{"id": "r", "choices": [{"index": 0, "delta": {"content": words}}]}]
    chunks.append({"id": "r", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


async def test_create_agent_session_resumes_a_model_of_a_registered_provider_as_stored(
    tmp_path: Path, tether_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    registry = default_registry()
    monkeypatch.setattr(registry, "_providers", dict(registry._providers))  # pyright: ignore[reportPrivateUsage]
    monkeypatch.setattr(registry, "_models", dict(registry._models))  # pyright: ignore[reportPrivateUsage]
    async with LoopbackServer([Reply(_sse_text("one")), Reply(_sse_text("two"))]) as server:
        register_provider_info(ProviderInfo("my-server", "openai-completions", server.url, None, local=True))
        house = {**ACME, "provider": "my-server", "id": "house-model", "api": "openai-completions"}
        register_model({**house, "baseUrl": server.url, "contextWindow": 4_096, "maxTokens": 512})
        first = create_agent_session(AgentOptions(model="my-server/house-model", tools=[]))
        try:
            await first.prompt("hello")
        finally:
            await first.close()
        del registry._models[("my-server", "house-model")]  # pyright: ignore[reportPrivateUsage]
        # a later process registers the provider again, not the model: the session knows it
        again = create_agent_session(AgentOptions(tools=[]), session=SessionChoice(continue_latest=True))
        try:
            assert (again.model["provider"], again.model["id"]) == ("my-server", "house-model")
            assert (again.model["contextWindow"], again.model["maxTokens"]) == (4_096, 512)
            assert again.model["baseUrl"] == server.url
            await again.prompt("more")
            assert [tether.message_text(m) for m in again.messages][-1] == "two"
        finally:
            await again.close()
