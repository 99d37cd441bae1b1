"""Why a session cannot start, as the JSON-RPC error an editor can show.

In-process: these are answers of ``TetherAcpAgent.new_session`` before any model call, so no
connection is needed (the client is never called).
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest
from acp import RequestError
from acp.interfaces import Client

from home_support import isolated_project
from tether.acp.server import TetherAcpAgent
from tether.errors import ModelError
from tether.session import model_choice
from tether.session.options import SessionOptions


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_project(tmp_path, monkeypatch)


def agent(options: SessionOptions) -> TetherAcpAgent:
    acp_agent = TetherAcpAgent(options)
    acp_agent.on_connect(cast(Client, object()))
    return acp_agent


async def initialized(options: SessionOptions) -> TetherAcpAgent:
    """An agent a client has called ``initialize`` on, as it must before ``session/new``."""
    acp_agent = agent(options)
    await acp_agent.initialize(protocol_version=1)
    return acp_agent


async def test_an_unknown_model_is_invalid_params(project: Path) -> None:
    with pytest.raises(RequestError) as info:
        await (await initialized(SessionOptions(model="nope/nothing"))).new_session(cwd=str(project))
    assert info.value.code == -32602
    assert "nope/nothing" in str(cast(dict[str, object], info.value.data)["details"])


async def test_no_usable_model_asks_for_keys(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def nothing_usable() -> model_choice.ResolvedModel:
        raise ModelError("no API key found and the embedded model is not installed")

    monkeypatch.setattr(model_choice, "_default_model", nothing_usable)
    with pytest.raises(RequestError) as info:
        await (await initialized(SessionOptions())).new_session(cwd=str(project))
    assert info.value.code == -32000
    details = str(cast(dict[str, object], info.value.data)["details"])
    assert "ANTHROPIC_API_KEY" in details and "embedded model" in details


async def test_a_bad_settings_file_is_invalid_params(project: Path) -> None:
    (project / ".tether").mkdir()
    (project / ".tether" / "settings.json").write_text('{"thinking": "very"}')
    with pytest.raises(RequestError) as info:
        await (await initialized(SessionOptions())).new_session(cwd=str(project))
    assert info.value.code == -32602
    assert '"thinking"' in str(cast(dict[str, object], info.value.data)["details"])


@pytest.mark.parametrize("model", ["nope/nothing", None])
async def test_initialize_answers_when_no_model_can_be_had_and_session_new_says_why(
    project: Path, monkeypatch: pytest.MonkeyPatch, model: str | None
) -> None:
    """``initialize`` does a first ``session/new``'s one-time work (``warm_up``), meeting the
    same unusable model: it still answers, and ``session/new`` reports the model as before."""

    def nothing_usable() -> model_choice.ResolvedModel:
        raise ModelError("no API key found and the embedded model is not installed")

    monkeypatch.setattr(model_choice, "_default_model", nothing_usable)
    acp_agent = agent(SessionOptions(model=model))
    answer = await acp_agent.initialize(protocol_version=1)
    assert answer.agent_info is not None and answer.agent_info.name == "tether"
    with pytest.raises(RequestError) as info:
        await acp_agent.new_session(cwd=str(project))
    assert info.value.code == (-32602 if model else -32000)
