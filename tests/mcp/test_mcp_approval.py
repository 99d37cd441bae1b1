"""MCP tool calls through the approval gate: risky unless the server marks the tool read-only,
allowed by name with ``allowTools`` (a user setting; a project's only in a trusted folder)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.mcp.conftest import toy
from tests.mcp.test_mcp_session import results, text_of

from tether.agent import Agent
from tether.mcp import McpServers
from tether.session import AgentSession
from tether.session.settings import SettingsError, load_settings
from tether.testing.scripted import ScriptedModel, reply, tool_call
from tether.tools.approval import Approval, ApprovalGate, allowed_by
from tether.tools.workspace import Workspace
from tether.wire import ToolCall


def gated_session(
    model: ScriptedModel,
    tmp_path: Path,
    answers: list[bool],
    asked: list[str],
    *,
    policy: Approval = "ask",
    allow: tuple[str, ...] = (),
) -> AgentSession:
    async def ask(_call: ToolCall, question: str) -> bool:
        asked.append(question)
        return answers.pop(0)

    agent = Agent(model=model.model, stream_fn=model)
    gate = ApprovalGate(Workspace(tmp_path), policy, ask, allow_tools=allow)
    return AgentSession(
        agent, approval=gate, mcp=McpServers([toy()], log_dir=tmp_path / "logs"), owns=("mcp",)
    )


CALLS = reply(
    tool_call("mcp__toy__add", {"a": 2, "b": 3}),
    tool_call("mcp__toy__pid"),
    tool_call("mcp__toy__forget"),
)


async def test_only_calls_of_tools_not_marked_read_only_are_asked_about(tmp_path: Path) -> None:
    asked: list[str] = []
    core = gated_session(ScriptedModel([CALLS, reply("done")]), tmp_path, [True, False], asked)
    try:
        added, pid, forget = results(await core.prompt("go"))
    finally:
        await core.close()
    # add: readOnlyHint; pid: no annotations; forget: readOnlyHint and destructiveHint
    assert asked == ["Call pid of MCP server toy: {}", "Call forget of MCP server toy: {}"]
    assert (text_of(added), added["isError"]) == ("5", False)
    assert not pid["isError"] and text_of(pid).isdigit()
    assert forget["isError"] and "declined" in text_of(forget)


@pytest.mark.parametrize(
    ("allow", "asked_about"),
    [
        (("mcp__toy",), []),
        (("mcp__toy__*",), []),
        (("mcp__toy__pid",), ["forget"]),
        (("mcp__other",), ["pid", "forget"]),
    ],
)
async def test_allow_tools_patterns_skip_the_question(
    tmp_path: Path, allow: tuple[str, ...], asked_about: list[str]
) -> None:
    asked: list[str] = []
    core = gated_session(ScriptedModel([CALLS, reply("done")]), tmp_path, [True, True], asked, allow=allow)
    try:
        outcomes = results(await core.prompt("go"))
    finally:
        await core.close()
    assert asked == [f"Call {tool} of MCP server toy: {{}}" for tool in asked_about]
    assert not any(r["isError"] for r in outcomes)


async def test_the_deny_policy_refuses_risky_mcp_calls_and_runs_read_only_ones(tmp_path: Path) -> None:
    asked: list[str] = []
    core = gated_session(ScriptedModel([CALLS, reply("done")]), tmp_path, [], asked, policy="deny")
    try:
        added, pid, forget = results(await core.prompt("go"))
    finally:
        await core.close()
    assert asked == [] and text_of(added) == "5"
    assert pid["isError"] and "approval policy 'deny'" in text_of(pid)
    assert forget["isError"]


def test_allowed_by_reads_a_bare_server_name_as_all_its_tools() -> None:
    assert allowed_by(["mcp__time"], "mcp__time__get_current_time")
    assert not allowed_by(["mcp__time"], "mcp__timer__start")
    assert allowed_by(["mcp__fs__read_*"], "mcp__fs__read_text_file")
    assert not allowed_by(["mcp__fs__read_*"], "mcp__fs__write_file")
    assert not allowed_by([], "mcp__fs__write_file")


def test_allow_tools_setting_is_checked_and_a_project_may_add_to_it_only_when_trusted(tmp_path: Path) -> None:
    config, project = tmp_path / "config", tmp_path / "project"
    (project / ".tether").mkdir(parents=True)
    config.mkdir()
    (config / "settings.json").write_text(json.dumps({"allowTools": ["mcp__time"]}))
    (project / ".tether" / "settings.json").write_text(json.dumps({"allowTools": ["mcp__fs__write_file"]}))
    untrusted = load_settings(config, project)
    assert (untrusted.allow_tools, untrusted.ignored) == (("mcp__time",), ("allowTools",))
    trusted = load_settings(config, project, trust_project=True)
    assert trusted.allow_tools == ("mcp__time", "mcp__fs__write_file")
    (config / "settings.json").write_text(json.dumps({"allowTools": ["bash"]}))
    with pytest.raises(SettingsError, match=r'"allowTools": expected a list of MCP tool names or patterns'):
        load_settings(config, project)
