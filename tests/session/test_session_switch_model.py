"""``AgentSession.switch_session`` goes on with the conversation's own model, as pi 1.6's
``switchSession`` does; one it cannot restore leaves the model in use and says so in a notice,
as pi says "Could not restore model"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from session_helpers import user
from tether.agent import Agent
from tether.ai.models import find_model
from tether.session import AgentSession, SessionManager
from tether.testing.scripted import ScriptedModel
from tether.wire import ModelInfo

SONNET = "anthropic/claude-sonnet-4-5"


def stored_on(manager: SessionManager, tmp_path: Path, model: ModelInfo, level: str) -> str:
    with manager.create(str(tmp_path)) as session:
        session.set_model(model)
        session.set_thinking_level(level)
        session.append_message(user("hi"))
        return session.id


def switched(manager: SessionManager, tmp_path: Path, target: str) -> tuple[AgentSession, list[str]]:
    scripted = ScriptedModel([])
    core = AgentSession(
        Agent(model=scripted.model, stream_fn=scripted), manager.create(str(tmp_path)), sessions=manager
    )
    notices: list[str] = []
    core.subscribe(lambda event: notices.append(event["message"]) if event["type"] == "notice" else None)
    core.switch_session(target)
    return core, notices


async def test_the_sessions_model_and_thinking_level_come_back(
    manager: SessionManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")  # never used: switching sends nothing
    target = stored_on(manager, tmp_path, find_model(SONNET), "high")
    core, notices = switched(manager, tmp_path, target)
    model = core.agent.model
    assert model is not None and f"{model['provider']}/{model['id']}" == SONNET
    assert core.agent.stream_fn is None  # the registry's provider, not the scripted replies
    assert (core.agent.thinking_level, notices) == ("high", [])
    await core.close()


@pytest.mark.parametrize("case", ["provider-gone", "no-key"])
async def test_a_model_that_cannot_be_restored_is_said_and_the_current_one_kept(
    manager: SessionManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_OAUTH_TOKEN", raising=False)
    stored: Any = dict(find_model(SONNET))
    if case == "provider-gone":
        stored["provider"] = "gone"
    target = stored_on(manager, tmp_path, stored, "off")
    core, notices = switched(manager, tmp_path, target)
    model = core.agent.model
    assert model is not None and model["provider"] == "scripted"
    wanted = f"{stored['provider']}/{stored['id']}"
    assert len(notices) == 1 and notices[0].startswith(f"Could not restore model {wanted} (")
    assert notices[0].endswith(f"). Using scripted/{model['id']}")
    await core.close()


async def test_the_loaded_level_is_clamped_to_the_model_kept(
    manager: SessionManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # restored or not, the level the switch loaded goes on a model: one without reasoning takes
    # "off" (a failed restore left "high" on the scripted model, which has no thinking levels)
    stored: Any = {**find_model(SONNET), "provider": "gone"}
    target = stored_on(manager, tmp_path, stored, "high")
    core, notices = switched(manager, tmp_path, target)
    model = core.agent.model
    assert model is not None and not model.get("reasoning") and len(notices) == 1
    assert core.agent.thinking_level == "off"
    await core.close()
