"""A prompt sent over RPC while a ``compact`` command runs: one response, the refusal. The server
answered ``started`` and then, the core refusing the run (``AgentBusyError``: a compaction is one
thing at a time), an error for the same id: two responses to one command."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tether.agent import Agent
from tether.rpc.server import RpcServer
from tether.session import SessionManager
from tether.session.agent_session import AgentSession
from tether.session.budget import CompactionSettings
from tether.session.compaction import SUMMARY_SYSTEM_PROMPT
from tether.session.settings import Settings
from tether.testing.scripted import ScriptedModel, reply


async def test_a_prompt_during_a_compaction_gets_one_response_the_refusal(tmp_path: Path) -> None:
    scripted = ScriptedModel([reply("THE SUMMARY"), reply("after")])
    asked, release = asyncio.Event(), asyncio.Event()

    async def held(model: Any, context: Any, options: Any = None) -> Any:
        if context.get("systemPrompt") == SUMMARY_SYSTEM_PROMPT:
            asked.set()
            await release.wait()
        return scripted(model, context, options)

    with SessionManager.at(tmp_path / "s.db") as manager:
        session = manager.create("/p", model=scripted.model)
        for i in range(4):
            session.append_message({"role": "user", "content": f"question {i} " * 200, "timestamp": 1})
            session.append_message({"role": "user", "content": f"more {i} " * 200, "timestamp": 2})
        settings = Settings(compaction=CompactionSettings(keep_recent_tokens=300))
        core = AgentSession(Agent(model=scripted.model, stream_fn=held), session, settings=settings)
        frames: list[Mapping[str, Any]] = []
        server = RpcServer(core, frames.append)
        async with asyncio.timeout(20):
            server.dispatch(json.dumps({"type": "compact", "id": "c"}).encode())
            await asked.wait()
            server.dispatch(json.dumps({"type": "prompt", "id": "p", "message": "meanwhile"}).encode())
            release.set()
            while not any(f.get("id") == "c" for f in frames):
                await asyncio.sleep(0.01)
            await server.close()
        answers = [f for f in frames if f.get("id") == "p"]
        assert len(answers) == 1 and not answers[0]["success"], answers
        assert "a compaction is running" in answers[0]["error"]
        assert [f["success"] for f in frames if f.get("id") == "c"] == [True]
