"""Settings files: merge order, documented keys, and errors that name the file and key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.ai.connections import (
    DEFAULT_MAX_CONNECTIONS,
    connection_limit,
    reset_connection_limits,
)
from tether.mcp import McpServerConfig
from tether.session.budget import CompactionSettings
from tether.session.factory import SessionChoice, create_agent_session
from tether.session.settings import Settings, SettingsError, load_settings


def write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def test_no_files_gives_defaults(tmp_path: Path) -> None:
    assert load_settings(tmp_path / "config", tmp_path) == Settings()


def test_project_overrides_user_and_compaction_merges_per_key(tmp_path: Path) -> None:
    config, project = tmp_path / "config", tmp_path / "proj"
    user_file = write(
        config / "settings.json",
        {
            "model": "openai/gpt-5",
            "thinking": "low",
            "compaction": {"reserveTokens": 1000, "keepRecentTokens": 5},
        },
    )
    project_file = write(
        project / ".tether" / "settings.json", {"thinking": "high", "compaction": {"enabled": False}}
    )
    (project / "sub").mkdir()
    settings = load_settings(config, project / "sub")  # found in the nearest parent
    assert settings.model == "openai/gpt-5"
    assert settings.thinking == "high"
    assert settings.compaction == CompactionSettings(enabled=False, reserve_tokens=1000, keep_recent_tokens=5)
    assert settings.sources == (user_file, project_file)


def test_all_documented_keys(tmp_path: Path) -> None:
    write(
        tmp_path / "c" / "settings.json",
        {
            "$schema": "ignored",
            "model": "anthropic/claude-sonnet-4-5",
            "thinking": "off",
            "tools": ["read", "ls"],
            "approval": "deny",
            "systemPrompt": "be brief",
            "appendSystemPrompt": "and kind",
        },
    )
    s = load_settings(tmp_path / "c", tmp_path)
    assert (s.tools, s.approval, s.system_prompt, s.append_system_prompt) == (
        ("read", "ls"),
        "deny",
        "be brief",
        "and kind",
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"thinking": "hgih"}, '"thinking": expected one of off, minimal'),
        ({"tools": "read"}, '"tools": expected a list of tool names'),
        ({"tools": ["read", "raed"]}, '"tools": expected built-in tool names (read, bash,'),
        ({"approval": True}, '"approval": expected one of ask, yes, deny, got true'),
        ({"modle": "x"}, 'unknown key "modle"'),
        (
            {"compaction": {"reserveTokens": -1}},
            '"compaction.reserveTokens": expected a non-negative integer',
        ),
        ({"compaction": {"keep": 1}}, '"compaction.keep": unknown key'),
        (
            {"streamIdleTimeoutMs": 1.5},
            '"streamIdleTimeoutMs": expected milliseconds, a non-negative integer',
        ),
        ({"maxConnections": -1}, '"maxConnections": expected a non-negative integer (0: no limit)'),
        ({"maxConnections": {"openai": "10"}}, '"maxConnections.openai": expected a non-negative integer'),
        ([1, 2], "expected a JSON object at the top level"),
        ({"steeringMode": "some"}, '"steeringMode": expected one of one-at-a-time, all, got "some"'),
        ({"enabledModels": "a/*"}, '"enabledModels": expected a list of model patterns'),
        ({"theme": 3}, '"theme": expected a string, got 3'),
        ({"mcp": 40}, '"mcp": expected an object'),
        ({"mcp": {"maxTools": -1}}, '"mcp.maxTools": expected a non-negative integer'),
        ({"mcp": {"servers": {}}}, '"mcp.servers": unknown key (known: maxTools)'),
    ],
)
def test_bad_values_name_file_and_key(tmp_path: Path, data: object, message: str) -> None:
    path = write(tmp_path / "c" / "settings.json", data)
    with pytest.raises(SettingsError) as info:
        load_settings(tmp_path / "c", tmp_path)
    assert str(info.value).startswith(f"{path}: ")
    assert message in str(info.value)


async def test_mcp_max_tools_reaches_the_sessions_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "c" / "settings.json", {"mcp": {"maxTools": 40}})
    settings = load_settings(tmp_path / "c", tmp_path)
    assert settings.mcp_max_tools == 40
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    core = create_agent_session(
        cwd=tmp_path,
        settings=settings,
        session=SessionChoice(persist=False),
        mcp_servers=[McpServerConfig("s", command="unused")],
    )
    try:
        assert core.mcp is not None and core.mcp.max_tools == 40
    finally:
        await core.close()


def test_max_connections_per_provider_merge_and_apply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "c" / "settings.json", {"maxConnections": {"openai": 10, "anthropic": 20}})
    write(tmp_path / ".tether" / "settings.json", {"maxConnections": 0})
    settings = load_settings(tmp_path / "c", tmp_path)
    assert settings.max_connections == {"openai": 10, "anthropic": 20, "*": 0}

    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    reset_connection_limits()
    try:
        create_agent_session(cwd=tmp_path, settings=settings, session=SessionChoice(persist=False))
        assert connection_limit("openai") == 10
        assert connection_limit("anthropic") == 20
        assert connection_limit("google") is None, '"*": 0 lifts the default limit'
    finally:
        reset_connection_limits()
    assert connection_limit("google") == DEFAULT_MAX_CONNECTIONS


def test_invalid_json_is_reported_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c" / "settings.json"
    path.parent.mkdir()
    path.write_text("{ model: 1 }")
    with pytest.raises(SettingsError, match="not valid JSON"):
        load_settings(tmp_path / "c", tmp_path)


@pytest.mark.parametrize("where", ["c/settings.json", "project/.tether/settings.json"])
@pytest.mark.parametrize(
    ("target", "why"), [("gone.json", "No such file"), ("settings.json", "Too many levels")]
)
def test_a_settings_link_to_nothing_is_reported_not_skipped(
    tmp_path: Path, where: str, target: str, why: str
) -> None:
    """A link whose target moved (or a loop) did not ``exists()``: the settings were silently
    left out."""
    path = tmp_path / where
    path.parent.mkdir(parents=True)
    path.symlink_to(target)
    with pytest.raises(SettingsError) as info:
        load_settings(tmp_path / "c", tmp_path / "project")
    assert str(info.value).startswith(f"{path}: cannot read: {why}")


def test_pi_settings_keys_and_saving_one_key_of_an_object(tmp_path: Path) -> None:
    from tether.session.settings import save_user_setting

    config = tmp_path / "c"
    write(config / "settings.json", {"compaction": {"reserveTokens": 100}, "theme": "light"})
    save_user_setting(config, "compaction.enabled", False)
    save_user_setting(config, "steeringMode", "all")
    save_user_setting(config, "enabledModels", ["openai/*", "anthropic/claude-sonnet-4-5:high"])
    assert json.loads((config / "settings.json").read_text())["compaction"] == {
        "reserveTokens": 100,
        "enabled": False,
    }
    s = load_settings(config, tmp_path)
    assert (s.theme, s.steering_mode, s.follow_up_mode) == ("light", "all", "one-at-a-time")
    assert s.compaction == CompactionSettings(enabled=False, reserve_tokens=100)
    assert s.enabled_models == ("openai/*", "anthropic/claude-sonnet-4-5:high")
    with pytest.raises(SettingsError):  # checked before the file is replaced
        save_user_setting(config, "followUpMode", "never")
    assert load_settings(config, tmp_path).follow_up_mode == "one-at-a-time"


def test_queue_modes_and_enabled_models_reach_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``steeringMode``/``followUpMode`` set the agent's queues; ``enabledModels`` is the Ctrl-P
    scope (and the start-up model), a pattern matching nothing one note, not a failure."""
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.delenv("TETHER_SCRIPTED", raising=False)
    settings = Settings(
        steering_mode="all", follow_up_mode="all", enabled_models=("nosuchmodel-xyz", "openai/gpt-4o-mini")
    )
    core = create_agent_session(cwd=tmp_path, settings=settings, session=SessionChoice(persist=False))
    assert (core.agent.steering_mode, core.agent.follow_up_mode) == ("all", "all")
    assert [f"{s.model['provider']}/{s.model['id']}" for s in core.scoped_models] == ["openai/gpt-4o-mini"]
    assert core.model["id"] == "gpt-4o-mini"
    assert core.notice is not None and "enabledModels:" in core.notice and "nosuchmodel-xyz" in core.notice
