"""Session config options in process: the model list follows the keys in the environment, and
model and thinking level changes reach the runtime and the stored session.

No model is called: options are answered before any prompt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest
from acp import RequestError
from acp.interfaces import Client
from acp.schema import SessionConfigOptionSelect

from home_support import isolated_project
from tether.acp.server import TetherAcpAgent
from tether.session import SessionManager
from tether.session.options import SessionOptions
from tether.store import default_db_path


class QuietClient:
    """Takes the updates an option change sends."""

    def __init__(self) -> None:
        self.updates: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)


def by_id(options: list[Any] | None) -> dict[str, SessionConfigOptionSelect]:
    return {o.id: o for o in options or [] if isinstance(o, SessionConfigOptionSelect)}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = isolated_project(tmp_path, monkeypatch)
    for name in ("OPENAI_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY", "XAI_API_KEY", "GROQ_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    return folder


async def test_model_and_thinking_options(project: Path, tmp_path: Path) -> None:
    agent = TetherAcpAgent(SessionOptions(model="anthropic/claude-sonnet-4-5", thinking="low"))
    client = QuietClient()
    agent.on_connect(cast(Client, client))
    try:
        await agent.initialize(protocol_version=1)
        created = await agent.new_session(cwd=str(project))
        options = by_id(created.config_options)
        assert options["model"].current_value == "anthropic/claude-sonnet-4-5"
        offered = [o.value for o in options["model"].options]  # type: ignore[union-attr]
        assert "anthropic/claude-haiku-4-5" in offered
        assert all(value.startswith("anthropic/") for value in offered), "only providers with a key"
        assert options["thinking"].current_value == "low"
        levels = [o.value for o in options["thinking"].options]  # type: ignore[union-attr]
        assert levels == ["off", "minimal", "low", "medium", "high"]

        changed = await agent.set_config_option(
            config_id="thinking", session_id=created.session_id, value="high"
        )
        assert changed is not None and by_id(changed.config_options)["thinking"].current_value == "high"
        with pytest.raises(RequestError):
            await agent.set_config_option(config_id="thinking", session_id=created.session_id, value="xhigh")

        switched = await agent.set_config_option(
            config_id="model", session_id=created.session_id, value="anthropic/claude-haiku-4-5"
        )
        assert switched is not None
        assert by_id(switched.config_options)["model"].current_value == "anthropic/claude-haiku-4-5"
        # Recorded in the session, which is stored with its first message (none here).
        session = agent._sessions[created.session_id].core.session  # pyright: ignore[reportPrivateUsage]
        assert session is not None
        context = session.context
        assert context.model is not None and context.model.model_id == "claude-haiku-4-5"
        assert context.thinking_level == "high"
    finally:
        await agent.close()
    with SessionManager.at(default_db_path({"TETHER_HOME": str(tmp_path / "home")})) as sessions:
        assert sessions.list() == []
