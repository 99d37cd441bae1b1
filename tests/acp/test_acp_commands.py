"""Slash commands typed in the editor's prompt box: the core runs them (or says why not) and the
model never sees them; an unknown ``/word`` is a prompt, as in pi. In process, scripted model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest
from acp import text_block
from acp.interfaces import Client
from acp.schema import AgentMessageChunk, ConfigOptionUpdate, TextContentBlock

from home_support import isolated_project
from tether.acp.server import TetherAcpAgent
from tether.session import SessionManager
from tether.session.options import SessionOptions
from tether.store import default_db_path


class QuietClient:
    def __init__(self) -> None:
        self.updates: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)

    def said(self) -> str:
        chunks = [u.content for u in self.updates if isinstance(u, AgentMessageChunk)]
        return "".join(c.text for c in chunks if isinstance(c, TextContentBlock))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = isolated_project(tmp_path, monkeypatch)
    script = tmp_path / "script.json"
    replies = [{"content": [{"type": "text", "chunks": [f"answer {i}"]}]} for i in (1, 2)]
    script.write_text(json.dumps({"responses": replies}))
    monkeypatch.setenv("TETHER_SCRIPTED", str(script))
    return folder


async def test_commands_run_in_the_core_and_only_prompts_reach_the_model(project: Path) -> None:
    agent = TetherAcpAgent(SessionOptions())
    client = QuietClient()
    agent.on_connect(cast(Client, client))

    async def say(text: str) -> str:
        client.updates.clear()
        response = await agent.prompt(session_id=session_id, prompt=[text_block(text)])
        assert response.stop_reason == "end_turn"
        return client.said()

    try:
        await agent.initialize(protocol_version=1)
        session_id = (await agent.new_session(cwd=str(project))).session_id
        assert await say("hello") == "answer 1"
        tree = await say("/tree")
        assert "hello" in tree and "/tree ID branches there" in tree
        assert any(isinstance(u, ConfigOptionUpdate) for u in client.updates)
        assert "tokens" in await say("/session")
        assert await say("/new") == (
            "/new does not work over ACP: start a new session from the editor (session/new)"
        )
        assert "/quit does not work over ACP" in await say("/quit")
        assert await say("/frob is a word") == "answer 2"
    finally:
        await agent.close()
    with SessionManager.at(default_db_path()) as sessions:
        messages = sessions.open(session_id, readonly=True).messages
    said = [m["content"] for m in messages if m["role"] == "user"]
    assert said == ["hello", "/frob is a word"]
