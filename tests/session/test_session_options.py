"""``start_session`` applies a front end's sandbox choices on top of the settings' sandbox: a flag
given replaces the setting (mode, network), hosts add to the setting's, and none given leaves the
setting as it is."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from tether.agent import Agent
from tether.session.agent_session import AgentSession
from tether.session.factory import SessionChoice, create_agent_session, start_session
from tether.session.options import AgentOptions, SessionOptions
from tether.session.settings import Settings
from tether.tools.sandbox import SandboxPolicy


def policy(tmp_path: Path, options: SessionOptions, settings: Settings) -> SandboxPolicy:
    script = tmp_path / "script.json"
    script.write_text("[]")
    options = replace(options, model=f"scripted:{script}", mcp=False, extensions=False)
    core = start_session(
        options, cwd=tmp_path, settings=settings, ask=None, session=SessionChoice(persist=False)
    )
    assert core.approval is not None and core.approval.workspace.sandbox is not None
    return core.approval.workspace.sandbox


def test_sandbox_flags_go_on_top_of_the_setting(tmp_path: Path) -> None:
    settings = Settings()
    settings = replace(settings, sandbox=replace(settings.sandbox, allow_hosts=("pypi.org",)))
    flagged = policy(
        tmp_path,
        SessionOptions(sandbox="read-only", sandbox_network=True, sandbox_allow_hosts=("example.org",)),
        settings,
    )
    assert (flagged.mode, flagged.network, flagged.allow_hosts) == (
        "read-only",
        True,
        ("pypi.org", "example.org"),
    )
    unflagged = policy(tmp_path, SessionOptions(), settings)
    assert (unflagged.mode, unflagged.network, unflagged.allow_hosts) == (
        settings.sandbox.mode,
        settings.sandbox.network,
        ("pypi.org",),
    )


def test_a_trusted_projects_settings_only_narrow_the_users_sandbox(tmp_path: Path) -> None:
    from tether.session.settings import load_settings
    from tether.tools.sandbox import DEFAULT_PIDS_MAX

    config, project = tmp_path / "config", tmp_path / "project"
    (project / ".tether").mkdir(parents=True)
    config.mkdir()
    user = {"sandbox": {"mode": "workspace-write", "allowHosts": ["pypi.org"], "mcp": True}}
    (config / "settings.json").write_text(json.dumps(user))
    wider = {"mode": "off", "network": True, "allowHosts": ["pypi.org", "evil.example"]}
    wider |= {"pidsMax": DEFAULT_PIDS_MAX * 10, "mcp": False, "escalationTimeout": 3600}
    (project / ".tether" / "settings.json").write_text(json.dumps({"sandbox": wider}))
    got = load_settings(config, project, trust_project=True).sandbox
    assert (got.mode, got.network, got.allow_hosts, got.pids_max, got.mcp, got.escalation_timeout) == (
        "workspace-write",
        False,
        ("pypi.org",),
        DEFAULT_PIDS_MAX,
        True,
        120,
    )
    narrower = {"mode": "read-only", "hide": [str(tmp_path / "private")], "pidsMax": 64}
    narrower |= {"escalationTimeout": 5}
    (project / ".tether" / "settings.json").write_text(json.dumps({"sandbox": narrower}))
    got = load_settings(config, project).sandbox  # narrowing needs no trust
    assert (got.mode, got.pids_max, got.escalation_timeout) == ("read-only", 64, 5)
    assert tmp_path / "private" in got.hide


@pytest.mark.parametrize("bad", [0, -1, True, "60", 86401])
def test_a_bad_escalation_timeout_is_one_line_naming_it(tmp_path: Path, bad: object) -> None:
    from tether.session.settings import SettingsError, load_settings

    (tmp_path / "settings.json").write_text(json.dumps({"sandbox": {"escalationTimeout": bad}}))
    with pytest.raises(
        SettingsError, match=r'settings.json: "sandbox.escalationTimeout": expected seconds above 0'
    ):
        load_settings(tmp_path, tmp_path)


def test_without_bubblewrap_the_session_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "script.json"
    script.write_text("[]")
    options = SessionOptions(model=f"scripted:{script}", mcp=False, extensions=False)
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs-here"))
    core = start_session(
        options, cwd=tmp_path, settings=Settings(), ask=None, session=SessionChoice(persist=False)
    )
    lines = [line for line in (core.notice or "").splitlines() if "sandbox" in line]
    assert lines == [
        "sandbox unavailable: bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap); "
        "bash asks before every command (--sandbox off: no confinement)"
    ]
    off = start_session(
        replace(options, sandbox="off"),
        cwd=tmp_path,
        settings=Settings(),
        ask=None,
        session=SessionChoice(persist=False),
    )
    assert "sandbox" not in (off.notice or "")


async def test_the_workspace_may_be_given_as_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``cwd="/some/dir"``, as most programs would write it, failed deep inside with "'str' object
    has no attribute 'parents'"; a relative one is taken from the current directory."""
    script = tmp_path / "s.json"
    script.write_text('[{"content": [{"type": "text", "chunks": ["ok"]}]}]')
    (tmp_path / "work").mkdir()
    core = create_agent_session(
        AgentOptions(model=f"scripted:{script}", tools=[]),
        cwd=str(tmp_path / "work"),
        session=SessionChoice(persist=False),
    )
    assert core.cwd == tmp_path / "work"
    await core.close()
    monkeypatch.chdir(tmp_path)
    bare = AgentSession(Agent(), cwd="work")
    assert bare.cwd == tmp_path / "work"
    await bare.close()
