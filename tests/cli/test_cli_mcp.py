"""MCP servers from the command line: ``.mcp.json`` (trusted projects only), the user's
``mcp.json``, ``--mcp-config``, ``--no-mcp``, ``tether mcp list`` — with the real toy server."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_support import CliEnv, json_lines, text_reply, tool_reply

pytestmark = pytest.mark.subprocess

TOY = Path(__file__).resolve().parents[1] / "mcp" / "toy_server.py"


def servers_file(path: Path, **servers: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def toy(**extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(TOY)], **extra}


def tool_results(stdout: str) -> list[dict[str, Any]]:
    return [
        e["message"]
        for e in json_lines(stdout)
        if e["type"] == "message_end" and e["message"]["role"] == "toolResult"
    ]


def test_json_mode_calls_a_tool_of_a_config_file_server_with_expanded_variables(cli: CliEnv) -> None:
    config = servers_file(cli.home / "extra.json", toy=toy(env={"TOY_MARK": "${MARK}-${UNSET_ONE:-dflt}"}))
    script = cli.script("s", [tool_reply("mcp__toy__env", {}), text_reply("done")])
    done = cli.run(
        "--mode", "json", "--no-session", "--mcp-config", str(config), "go", script=script, env={"MARK": "m1"}
    )
    assert done.returncode == 0, done.stderr
    [result] = tool_results(done.stdout)
    assert not result["isError"]
    assert result["content"][0]["text"].startswith("m1-dflt ")
    assert done.stderr == ""  # the server's stderr went to its log


def test_project_servers_start_only_in_a_trusted_project(cli: CliEnv) -> None:
    servers_file(cli.project / ".mcp.json", proj=toy())
    script = cli.script("s", [tool_reply("mcp__proj__add", {"a": 1, "b": 2}), text_reply("done")])
    untrusted = cli.run("--mode", "json", "--no-session", "go", script=script)
    [refused] = tool_results(untrusted.stdout)
    assert refused["isError"] and "mcp__proj__add" in refused["content"][0]["text"]  # no such tool
    (cli.home / "config").mkdir()
    (cli.home / "config" / "trusted-folders.json").write_text(json.dumps([str(cli.project)]))
    trusted = cli.run("--mode", "json", "--no-session", "go", script=script)
    [added] = tool_results(trusted.stdout)
    assert added["content"][0]["text"] == "3"
    # --no-mcp: none of the files' servers start
    off = cli.run("--mode", "json", "--no-session", "--no-mcp", "go", script=script)
    assert tool_results(off.stdout)[0]["isError"]


def test_mcp_list_reports_servers_their_tools_and_disabled_ones_not_at_all(cli: CliEnv) -> None:
    (cli.home / "config").mkdir()
    servers_file(
        cli.home / "config" / "mcp.json",
        toy=toy(),
        off=toy(enabled=False),
        gone={"command": "/nonexistent/server"},
    )
    done = cli.run("mcp", "list", "--json")
    assert done.returncode == 0, done.stderr
    servers = {s["name"]: s for s in json.loads(done.stdout)["servers"]}
    assert set(servers) == {"toy", "gone"}
    assert servers["toy"]["status"] == "ready" and "mcp__toy__add" in servers["toy"]["tools"]
    assert servers["gone"]["status"] == "failed" and "/nonexistent/server" in servers["gone"]["error"]


def test_a_bad_config_file_is_one_line_naming_it(cli: CliEnv) -> None:
    config = servers_file(cli.home / "bad.json", toy=toy(env={"TOKEN": "${NOT_SET_ANYWHERE}"}))
    done = cli.run(
        "-p", "--no-session", "--mcp-config", str(config), "go", script=cli.script("s", [text_reply("x")])
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"tether: {config}: server 'toy': 'env.TOKEN': environment variable NOT_SET_ANYWHERE is not set"
    ]


@pytest.mark.parametrize("mode", [("-p",), ("--mode", "json")])
def test_a_server_that_fails_to_start_is_a_note_on_stderr(cli: CliEnv, mode: tuple[str, ...]) -> None:
    config = servers_file(cli.home / "servers.json", toy=toy(), gone={"command": "/nonexistent/server"})
    script = cli.script("s", [tool_reply("mcp__toy__add", {"a": 1, "b": 2}), text_reply("done")])
    done = cli.run(*mode, "--no-session", "--mcp-config", str(config), "go", script=script)
    assert done.returncode == 0, done.stderr
    [note] = [line for line in done.stderr.splitlines() if line.startswith("note:")]
    assert note.startswith("note: MCP server 'gone' did not start: ") and "/nonexistent/server" in note
