"""A model whose description changes under the same id (``models.json`` raises its
``contextWindow``): a resumed session runs on the model as configured now, as pi does (pi stores
provider and id only), and records the new description at its next turn. It recorded a model
only when provider or id changed, so the session went on saying the model had the old limits,
which a resume falls back to once the id is no longer listed (``restored_model``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.ai import models
from tether.session.factory import AgentOptions, SessionChoice, create_agent_session
from tether.session.manager import SessionManager
from tether.testing.scripted import ScriptedModel, reply


def configure(home: Path, context_window: int) -> None:
    (home / "config").mkdir(parents=True, exist_ok=True)
    model = {"id": "m", "contextWindow": context_window, "maxTokens": 512}
    provider = {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "models": [model]}
    (home / "config" / "models.json").write_text(json.dumps({"providers": {"lab": provider}}))


async def converse(tmp_path: Path, choice: SessionChoice) -> str:
    core = create_agent_session(AgentOptions(model="lab/m", tools=[]), cwd=tmp_path, session=choice)
    core.agent.stream_fn = ScriptedModel([reply("answer")])  # lab/m is never called
    try:
        await core.prompt("question")
        session_id = core.session_id
        assert session_id is not None
        return session_id
    finally:
        await core.close()


def stored_window(session_id: str) -> object:
    with SessionManager() as sessions, sessions.open(session_id, readonly=True) as session:
        stored = session.context.model
        assert stored is not None and stored.info is not None
        return stored.info["contextWindow"]


async def test_a_resumed_session_records_the_models_new_limits_at_its_next_turn(
    tmp_path: Path, tether_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(models, "_registry", None)
    configure(tether_home, 1000)
    session_id = await converse(tmp_path, SessionChoice())
    assert stored_window(session_id) == 1000
    configure(tether_home, 200_000)
    assert await converse(tmp_path, SessionChoice(session_id=session_id)) == session_id
    assert stored_window(session_id) == 200_000
    changes = 0
    with SessionManager() as sessions:
        changes = sum(e.type == "model_change" for e in sessions.store.entries(session_id))
    assert changes == 2
    assert await converse(tmp_path, SessionChoice(session_id=session_id)) == session_id
    with SessionManager() as sessions:  # unchanged: nothing more recorded
        assert sum(e.type == "model_change" for e in sessions.store.entries(session_id)) == changes


def test_a_model_holding_tuples_is_recorded_once(tmp_path: Path) -> None:
    # an embedder's model may hold tuples, which the stored description reads back as lists:
    # compared as they were, every resume recorded the same model again
    from session_helpers import MODEL
    from tether.session.wiring import record_settings
    from tether.wire import ModelInfo

    model: ModelInfo = {**MODEL, "input": ("text", "image")}  # type: ignore[typeddict-item]
    with SessionManager.at(tmp_path / "sessions.db") as sessions:
        session = sessions.create(str(tmp_path))
        record_settings(session, model=model)
        session_id = session.id
        session.close()
        for _ in range(3):  # three resumes
            with sessions.open(session_id) as reopened:
                record_settings(reopened, model=model)
        assert sum(e.type == "model_change" for e in sessions.store.entries(session_id)) == 1


@pytest.mark.parametrize("change", ["contextWindow", "cost"])
def test_a_live_model_changed_in_place_is_recorded(tmp_path: Path, change: str) -> None:
    # an embedder raises a limit (or a price) in the very dict its agent runs on: the session kept
    # that dict as its current model (no headers, no credentials in the URL: nothing to take out),
    # so the change looked recorded already and the stored description kept the old value
    from session_helpers import MODEL
    from tether.session.wiring import record_settings
    from tether.wire import ModelInfo

    model: ModelInfo = {**MODEL, "cost": {**MODEL["cost"]}}
    with SessionManager.at(tmp_path / "sessions.db") as sessions:
        session = sessions.create(str(tmp_path))
        record_settings(session, model=model)
        record_settings(session, model=model)  # unchanged: nothing more recorded
        if change == "contextWindow":
            model["contextWindow"] = 400_000
        else:
            model["cost"]["input"] = 3
        record_settings(session, model=model)
        session_id = session.id
        session.close()
        stored = [
            json.loads(e.payload)["model"]
            for e in sessions.store.entries(session_id)
            if e.type == "model_change"
        ]
    assert [(m["contextWindow"], m["cost"]["input"]) for m in stored] == [
        (100_000, 1),
        (400_000, 1) if change == "contextWindow" else (100_000, 3),
    ]
