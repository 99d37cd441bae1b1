"""``create_agent_session`` takes ``AgentOptions``; the flat keywords of earlier releases still
work, with a ``DeprecationWarning``; a keyword that is neither is refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tether
from tether.session.factory import SessionChoice, create_agent_session


def scripted(tmp_path: Path) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps([{"content": [{"type": "text", "chunks": ["Hi"]}]}]))
    return f"scripted:{path}"


async def test_the_earlier_keywords_still_build_the_session_and_warn(tmp_path: Path) -> None:
    with pytest.warns(DeprecationWarning, match=r"create_agent_session\(model=\.\.\., approval=\.\.\.\)"):
        core = create_agent_session(
            model=scripted(tmp_path), approval="yes", cwd=tmp_path, session=SessionChoice(persist=False)
        )
    try:
        assert core.model["provider"] == "scripted"
        assert core.approval is not None and core.approval.policy == "yes"
        await core.prompt("hello")
        last = core.last_assistant()
        assert last is not None and tether.message_text(last) == "Hi"
    finally:
        await core.close()


def test_a_keyword_that_is_no_choice_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'modle'"):
        create_agent_session(modle=scripted(tmp_path), cwd=tmp_path, session=SessionChoice(persist=False))


def test_run_sync_takes_any_agent_choice_as_a_keyword_without_warning(tmp_path: Path) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tether.run_sync("hello", model=scripted(tmp_path), thinking="low", cwd=tmp_path) == "Hi"


def test_a_model_record_for_a_spec_is_refused_saying_what_to_pass(tmp_path: Path) -> None:
    """``AgentOptions(model=find_model(...))``, the record ``Agent(model=...)`` takes, failed deep
    in the model choice with "AttributeError: 'dict' object has no attribute 'startswith'". Now
    a ``TypeError`` at once, naming the spec to pass instead."""
    model = tether.ScriptedModel([]).model
    with pytest.raises(
        TypeError, match=r"a model spec, a str such as 'provider/id' \(this one: scripted/scripted\)"
    ):
        create_agent_session(tether.AgentOptions(model=model), cwd=tmp_path)  # pyright: ignore[reportArgumentType]
