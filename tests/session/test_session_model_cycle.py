"""Model and thinking-level cycling (Ctrl-P, Shift-Tab) and the picker's list, on the core; and the
``/resume`` picker's operations on other sessions (rename, delete)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tether.agent import Agent
from tether.ai.models import get_model
from tether.session import AgentSession, SessionManager
from tether.session.model_choice import ScopedModel, next_thinking_level
from tether.testing.scripted import ScriptedModel


def _models_json(home: Path) -> None:
    """Two providers of ``models.json``: one whose key is set, one whose key is not."""
    (home / "config").mkdir(parents=True, exist_ok=True)
    providers = {
        "alpha": {
            "baseUrl": "http://127.0.0.1:9/v1",
            "api": "openai-completions",
            "apiKeyEnv": "ALPHA_TEST_KEY",
            "models": [{"id": "a1"}, {"id": "a2", "reasoning": True}, {"id": "a3"}],
        },
        "beta": {
            "baseUrl": "http://127.0.0.1:9/v1",
            "api": "openai-completions",
            "apiKeyEnv": "BETA_TEST_KEY",
            "models": [{"id": "b1"}],
        },
    }
    (home / "config" / "models.json").write_text(json.dumps({"providers": providers}))


@pytest.fixture
def keyed(tether_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.endswith("_API_KEY")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("ALPHA_TEST_KEY", "k")
    monkeypatch.delenv("BETA_TEST_KEY", raising=False)
    _models_json(tether_home)


async def test_the_picker_lists_the_usable_models(keyed: None) -> None:
    core = AgentSession(Agent(model=get_model("alpha", "a1")))
    listed = [f"{m['provider']}/{m['id']}" for m in await core.model_candidates()]
    assert listed[:3] == ["alpha/a1", "alpha/a2", "alpha/a3"]
    assert "beta/b1" not in listed  # its key is not set
    cycled = await core.cycle_model()  # Ctrl-P walks the same list
    assert cycled is not None and cycled.model["id"] == "a2"


async def test_the_picker_lists_the_scoped_set_with_the_model_in_use_first(keyed: None) -> None:
    scripted = ScriptedModel([])
    core = AgentSession(Agent(model=scripted.model, stream_fn=scripted))
    core.scoped_models = [ScopedModel(get_model("alpha", "a3")), ScopedModel(get_model("beta", "b1"))]
    names = [m["id"] for m in await core.model_candidates()]
    assert names == [scripted.model["id"], "a3", "b1"]  # the model in use first: the user is there


async def test_thinking_cycles_through_what_the_model_accepts(keyed: None) -> None:
    core = AgentSession(Agent(model=get_model("alpha", "a2"), thinking_level="off"))
    levels = [core.cycle_thinking_level() for _ in range(8)]
    assert levels[0] == "minimal" and "off" in levels[1:]
    assert levels.index("off") == len(set(levels)) - 1  # every level once, then round again
    plain = get_model("alpha", "a1")
    assert next_thinking_level(plain, "off") is None  # no reasoning: nothing to cycle


async def test_rename_and_delete_other_sessions(manager: SessionManager) -> None:
    other = manager.create("/p")
    other.append_message({"role": "user", "content": "x", "timestamp": 0})
    other.close()
    current = manager.create("/p")
    scripted = ScriptedModel([])
    core = AgentSession(Agent(model=scripted.model, stream_fn=scripted), current, sessions=manager)
    core.rename_session(other.id, "the other one")
    assert manager.open(other.id, readonly=True).title == "the other one"
    core.rename_session(current.id, "this one")
    assert core.session is not None and core.session.title == "this one"
    with pytest.raises(ValueError, match="in use"):
        core.delete_session(current.id)
    core.delete_session(other.id)
    assert [r.id for r in manager.list()] == [current.id]
