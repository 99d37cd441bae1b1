"""``AgentSession.switch_session`` goes on with the conversation's own model, as pi 1.6's
``switchSession`` does; one it cannot restore leaves the model in use and says so in a notice,
as pi says "Could not restore model". A model named at start (``--model``, ``AgentOptions.model``)
wins over the stored one in every session moved to, as pi re-applies ``--model``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from session_helpers import user
from tether.agent import Agent
from tether.ai.models import find_model
from tether.session import AgentSession, SessionManager
from tether.session.factory import SessionChoice, create_agent_session
from tether.session.options import AgentOptions
from tether.session.settings import Settings
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


HAIKU = "anthropic/claude-haiku-4-5"


def chosen_core(
    manager: SessionManager, tmp_path: Path, spec: str | None, settings: Settings | None = None, **more: Any
) -> AgentSession:
    """A core as the front ends build it: ``spec`` named (``--model``), or none (the default)."""
    return create_agent_session(
        AgentOptions(model=spec, **more),
        cwd=tmp_path,
        settings=settings,
        session=SessionChoice(),
        sessions=manager,
    )


def on(core: AgentSession) -> tuple[str, str]:
    model = core.agent.model
    assert model is not None
    return f"{model['provider']}/{model['id']}", core.agent.thinking_level


async def test_a_model_named_at_start_goes_on_in_a_resumed_session(
    manager: SessionManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pi 1.6 makes the session afresh with ``--model`` on every ``/resume`` (and
    ``switch_session``): the named model wins over the stored one, on the stored thinking level
    (clamped to the model), and nothing is said, as nothing failed to be restored."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")  # never used: switching sends nothing
    target = stored_on(manager, tmp_path, find_model(SONNET), "high")
    core = chosen_core(manager, tmp_path, HAIKU)
    notices: list[str] = []
    core.subscribe(lambda event: notices.append(event["message"]) if event["type"] == "notice" else None)
    core.set_model(SONNET)  # a /model change in between is this session's, not the next one's
    core.switch_session(target)
    assert (on(core), notices) == ((HAIKU, "high"), [])
    await core.close()


async def test_a_level_named_with_the_model_goes_on_too(
    manager: SessionManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `--model haiku:low`: pi re-applies the suffix's level as it does `--thinking`
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    target = stored_on(manager, tmp_path, find_model(SONNET), "high")
    core = chosen_core(manager, tmp_path, f"{HAIKU}:low")
    core.switch_session(target)
    assert on(core) == (HAIKU, "low")
    await core.close()


@pytest.mark.parametrize("move", ["new", "fork"])
async def test_a_new_or_forked_session_starts_on_the_model_named_at_start(
    manager: SessionManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, move: str
) -> None:
    """``/new`` and ``/fork`` make the session afresh in pi too: after a ``/model`` change, the
    next session is on ``--model`` again."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    core = chosen_core(manager, tmp_path, HAIKU)
    assert core.session is not None
    core.session.append_message(user("hi"))
    core.set_model(SONNET)
    core.new_session() if move == "new" else core.fork()
    assert on(core)[0] == HAIKU
    await core.close()


async def test_without_a_model_named_the_resumed_session_keeps_its_own(
    manager: SessionManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the default (here the scripted model TETHER_SCRIPTED names) is no one's choice
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    script = tmp_path / "script.json"
    script.write_text("[]")
    monkeypatch.setenv("TETHER_SCRIPTED", str(script))
    target = stored_on(manager, tmp_path, find_model(SONNET), "high")
    core = chosen_core(manager, tmp_path, None)
    assert on(core)[0].startswith("scripted/")
    core.switch_session(target)
    assert on(core) == (SONNET, "high")
    await core.close()


async def test_the_settings_model_is_no_ones_choice_but_a_level_named_at_start_is(
    manager: SessionManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `--thinking low` alone: pi re-applies it to the resumed session, which keeps its own model
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    target = stored_on(manager, tmp_path, find_model(HAIKU), "high")
    core = chosen_core(manager, tmp_path, None, Settings(model=SONNET), thinking="low")
    assert on(core) == (SONNET, "low")
    core.switch_session(target)
    assert on(core) == (HAIKU, "low")
    await core.close()
