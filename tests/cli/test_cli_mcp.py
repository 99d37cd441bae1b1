"""MCP servers from the command line: ``.mcp.json`` (trusted projects only), the user's
``mcp.json``, ``--mcp-config``, ``--no-mcp``, ``tether mcp list`` — with the real toy server."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_support import CliEnv, text_reply, tool_reply, tool_results
from tmux_support import Terminal

pytestmark = pytest.mark.subprocess

TOY = Path(__file__).resolve().parents[1] / "mcp" / "toy_server.py"


def servers_file(path: Path, **servers: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def toy(**extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(TOY)], **extra}


def test_json_mode_calls_a_tool_of_a_config_file_server_with_expanded_variables(cli: CliEnv) -> None:
    config = servers_file(cli.home / "extra.json", toy=toy(env={"TOY_MARK": "${MARK}-${UNSET_ONE:-dflt}"}))
    script = cli.script("s", [tool_reply("mcp__toy__env", {}), text_reply("done")])
    done = cli.run(
        *("--mode", "json", "--no-session", "--yes", "--mcp-config", str(config), "go"),
        script=script,
        env={"MARK": "m1"},
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
    assert done.returncode == 0, done.stderr  # "gone" failed: listed with its error, as Claude Code does
    servers = {s["name"]: s for s in json.loads(done.stdout)["servers"]}
    assert set(servers) == {"toy", "gone"}
    assert servers["toy"]["status"] == "ready" and "mcp__toy__add" in servers["toy"]["tools"]
    assert servers["gone"]["status"] == "failed" and "/nonexistent/server" in servers["gone"]["error"]


BAD_ENTRY = {"command": "x", "env": {"TOKEN": "${NOT_SET_ANYWHERE}"}}


@pytest.mark.parametrize("mode", [("-p",), ("--mode", "json")])
def test_a_bad_entry_is_one_note_and_the_other_servers_still_serve(
    cli: CliEnv, mode: tuple[str, ...]
) -> None:
    config = servers_file(
        cli.home / "servers.json",
        bad=BAD_ENTRY,
        legacy={"type": "sse", "url": "http://127.0.0.1:9/sse", "enabled": False},
        toy=toy(),
    )
    script = cli.script("s", [tool_reply("mcp__toy__add", {"a": 1, "b": 2}), text_reply("done")])
    done = cli.run(*mode, "--no-session", "--mcp-config", str(config), "go", script=script)
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stderr.splitlines() if not line.startswith("[tool]")] == [
        f"note: {config}: server 'bad': 'env.TOKEN': environment variable NOT_SET_ANYWHERE is not set (skipped)"
    ]
    if mode == ("--mode", "json"):
        assert tool_results(done.stdout)[0]["content"][0]["text"] == "3"
    else:
        assert done.stdout == "done\n"


def test_rpc_mode_tells_a_bad_entry_in_a_notify_frame_after_ready(cli: CliEnv) -> None:
    config = servers_file(cli.home / "servers.json", bad=BAD_ENTRY, toy=toy())
    script = cli.script("s", [text_reply("unused")])
    done = cli.run("--mode", "rpc", "--no-session", "--mcp-config", str(config), script=script)
    assert done.returncode == 0, done.stderr
    ready, notify = [json.loads(line) for line in done.stdout.splitlines()]
    assert ready["type"] == "ready"
    assert (notify["type"], notify["method"], notify["notifyType"]) == (
        "extension_ui_request",
        "notify",
        "warning",
    )
    assert notify["message"].startswith(f"{config}: server 'bad'") and "NOT_SET_ANYWHERE" in notify["message"]
    assert f"note: {config}: server 'bad'" in done.stderr


def test_mcp_list_warns_of_skipped_entries_and_an_untrusted_project_file_and_lists_the_rest(
    cli: CliEnv,
) -> None:
    """A bad entry is skipped and reported, never fatal to the rest: the notes are warnings on
    stderr and the listing of the other servers is a success (it exited 1 whenever a note was
    printed, so a script could not tell a listing with a skipped entry from no listing)."""
    (cli.home / "config").mkdir()
    user = servers_file(cli.home / "config" / "mcp.json", bad=BAD_ENTRY, toy=toy())
    servers_file(cli.project / ".mcp.json", proj=toy())
    below = cli.project / "src" / "deep"
    below.mkdir(parents=True)
    done = cli.run("mcp", "list", cwd=below)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "toy (stdio, user): ready"
    assert "note:" not in done.stdout
    notes = done.stderr.splitlines()
    assert (
        f"note: {user}: server 'bad': 'env.TOKEN': environment variable NOT_SET_ANYWHERE is not set (skipped)"
        in notes
    )
    [untrusted] = [line for line in notes if "not trusted" in line]
    assert untrusted.startswith(
        f"note: {cli.project / '.mcp.json'}: not trusted, its MCP servers are not started"
    )
    assert str(cli.home / "config" / "trusted-folders.json") in untrusted
    listed = json.loads(cli.run("mcp", "list", "--json", cwd=below).stdout)
    assert [s["name"] for s in listed["servers"]] == ["toy"] and len(listed["notes"]) == 2
    # trusted, the project's file is found from the subfolder too
    (cli.home / "config" / "trusted-folders.json").write_text(json.dumps([str(cli.project)]))
    servers_file(user, toy=toy())
    done = cli.run("mcp", "list", "--json", cwd=below)
    assert done.returncode == 0, done.stdout
    listed = json.loads(done.stdout)
    assert [(s["name"], s["source"], s["status"]) for s in listed["servers"]] == [
        ("toy", "user", "ready"),
        ("proj", "project", "ready"),
    ]
    assert listed["notes"] == [] and "mcp__toy__add" in listed["servers"][0]["tools"]


def test_mcp_list_fails_only_when_nothing_could_be_listed(cli: CliEnv) -> None:
    (cli.home / "config").mkdir()
    nothing = cli.run("mcp", "list")
    assert (nothing.returncode, nothing.stderr) == (0, ""), "no servers configured is a listing too"
    assert nothing.stdout.startswith("no MCP servers")
    user = servers_file(cli.home / "config" / "mcp.json", bad=BAD_ENTRY)
    skipped = cli.run("mcp", "list")
    assert skipped.returncode == 1, "every entry it found was skipped"
    assert skipped.stderr.startswith(f"note: {user}: server 'bad': ")
    user.write_text("{not json")
    broken = cli.run("mcp", "list")
    assert broken.returncode == 1
    assert broken.stderr.startswith(f"note: {user}: invalid JSON") and "Traceback" not in broken.stderr


def test_mcp_list_shows_what_a_server_names_with_its_control_characters_escaped(cli: CliEnv) -> None:
    """A server chooses its tools' names and its error messages: written as they came,
    ``\\x1b]0;...`` set the terminal's title, ``\\x1b[2J`` cleared what ``tether mcp list`` had
    shown and U+202E showed the rest of the line reversed, so the listing could hide a failure
    or another server's lines. They are escaped, as every other front end does."""
    hostile = [sys.executable, str(TOY.with_name("hostile_server.py"))]
    config = servers_file(
        cli.home / "servers.json",
        esc={"command": hostile[0], "args": [hostile[1], "escapes"]},
        no={"command": hostile[0], "args": [hostile[1], "refuse"]},
    )
    done = cli.run("mcp", "list", "--mcp-config", str(config))
    assert done.returncode == 0, done.stderr
    for shown in (done.stdout, done.stderr):
        assert not any(c in shown for c in "\x1b\x07\u202e"), shown
    assert "  not offered: bad\\x1b]0;owned\\x07\\x1b[2Jok\\u202e: its parameters schema" in done.stdout
    assert "  error: MCPError: no\\x1b]0;owned" in done.stdout
    assert "x\\x1b]0;owned" in done.stderr  # the note naming the tools it renamed


@pytest.mark.parametrize("mode", [("-p",), ("--mode", "json")])
def test_a_server_that_fails_to_start_is_a_note_on_stderr(cli: CliEnv, mode: tuple[str, ...]) -> None:
    config = servers_file(cli.home / "servers.json", toy=toy(), gone={"command": "/nonexistent/server"})
    script = cli.script("s", [tool_reply("mcp__toy__add", {"a": 1, "b": 2}), text_reply("done")])
    done = cli.run(*mode, "--no-session", "--mcp-config", str(config), "go", script=script)
    assert done.returncode == 0, done.stderr
    [note] = [line for line in done.stderr.splitlines() if line.startswith("note:")]
    assert (
        note.startswith("note: MCP server 'gone' failed: command not found: ")
        and "/nonexistent/server" in note
    )


def test_a_server_that_crashes_in_a_call_is_not_said_to_have_not_started(cli: CliEnv) -> None:
    """The note for a failed server said "did not start" whatever it was: a server that had
    started, listed its tools and crashed during a call was "did not start: the server closed
    the connection during a call to 'crash'"."""
    config = servers_file(cli.home / "servers.json", toy=toy())
    script = cli.script("s", [tool_reply("mcp__toy__crash", {}), text_reply("done")])
    done = cli.run("-p", "--no-session", "--yes", "--mcp-config", str(config), "go", script=script)
    assert done.returncode == 0, done.stderr
    [note] = [line for line in done.stderr.splitlines() if line.startswith("note:")]
    assert note.startswith("note: MCP server 'toy' failed: the server closed the connection during a call"), (
        note
    )


def calls_reply(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "content": [
            {"type": "toolCall", "id": f"call_{i}", "name": name, "arguments": arguments}
            for i, (name, arguments) in enumerate(calls)
        ]
    }


def test_json_mode_refuses_mcp_calls_that_need_approval_and_runs_read_only_ones(cli: CliEnv) -> None:
    config = servers_file(cli.home / "servers.json", toy=toy())
    calls = calls_reply(("mcp__toy__add", {"a": 1, "b": 2}), ("mcp__toy__pid", {}), ("mcp__toy__forget", {}))
    script = cli.script("s", [calls, text_reply("done")])
    run = ("--mode", "json", "--no-session", "--mcp-config", str(config), "go")
    added, pid, forget = tool_results(cli.run(*run, script=script).stdout)
    assert (added["isError"], added["content"][0]["text"]) == (False, "3")  # the server says read-only
    for refused, tool in ((pid, "pid"), (forget, "forget")):  # unannotated; read-only but destructive
        text = refused["content"][0]["text"]
        assert refused["isError"] and "needs the user's approval" in text, text
        assert f"Call {tool} of MCP server toy: {{}}" in text and "allowTools" in text
    assert not any(r["isError"] for r in tool_results(cli.run("--yes", *run, script=script).stdout))


def test_print_mode_runs_a_risky_mcp_tool_with_yes_or_a_user_allow_tools_setting(cli: CliEnv) -> None:
    marks = cli.home / "sleep.log"
    config = servers_file(cli.home / "servers.json", toy=toy(env={"TOY_SLEEP_LOG": str(marks)}))
    script = cli.script("s", [tool_reply("mcp__toy__sleep", {"seconds": 0}), text_reply("done")])

    notes: list[str] = []

    def called(*extra: str) -> bool:
        marks.unlink(missing_ok=True)
        done = cli.run("-p", "--no-session", *extra, "--mcp-config", str(config), "go", script=script)
        assert done.returncode == 0, done.stderr
        notes.append(done.stderr)
        return marks.exists()

    assert not called()
    assert called("--yes")
    # a project file may not allow it in a folder the user did not trust
    (cli.project / ".tether").mkdir()
    (cli.project / ".tether" / "settings.json").write_text(json.dumps({"allowTools": ["mcp__toy__sleep"]}))
    assert not called()
    assert 'ignored "allowTools"' in notes[-1]
    (cli.home / "config").mkdir()
    (cli.home / "config" / "settings.json").write_text(json.dumps({"allowTools": ["mcp__toy"]}))
    assert called()


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt install tmux)")
def test_interactive_mode_asks_before_a_risky_mcp_call(cli: CliEnv) -> None:
    config = servers_file(cli.home / "servers.json", toy=toy())
    script = cli.script(
        "s",
        [
            tool_reply("mcp__toy__add", {"a": 4, "b": 5}, "c1"),
            tool_reply("mcp__toy__pid", {}, "c2"),
            text_reply("declined, fine"),
        ],
    )
    env = cli.env(TETHER_SCRIPTED=str(script), TERM="xterm-256color")
    terminal = Terminal(
        [sys.executable, "-m", "tether.cli", "--mcp-config", str(config)], str(cli.project), env
    )
    try:
        terminal.wait_for("/help for commands")
        terminal.type("go")
        terminal.send("Enter")
        screen = terminal.wait_for("Call pid of MCP server toy: {}", timeout=60)
        assert "Call add" not in screen  # read-only: not asked about
        terminal.send("n")
        screen = terminal.wait_for("declined, fine")
        assert "declined" in screen.split("Call pid of MCP server toy")[-1]
    finally:
        terminal.close()


def test_a_server_listed_once_is_started_only_when_its_tool_is_called_and_a_failure_is_a_note(
    cli: CliEnv,
) -> None:
    """``tether.mcp.tool_cache``: after one run, the next offers the server's tools without
    starting it; a run calling none of them starts nothing, one calling a tool starts it then.
    When it no longer starts, the call fails and stderr says why, as for a server waited for."""
    switch, pids = cli.home / "mode", cli.home / "pids"
    switch.write_text("")
    pids.mkdir()
    line = f'[ "$(cat {switch})" = exit ] && exit 3; exec {sys.executable} {TOY}'
    config = servers_file(
        cli.home / "servers.json",
        toy={"command": "sh", "args": ["-c", line], "env": {"TOY_PID_DIR": str(pids)}},
    )
    args = ("-p", "--no-session", "--mcp-config", str(config), "go")
    first = cli.run(*args, script=cli.script("a", [text_reply("hello")]))
    assert (first.returncode, first.stdout) == (0, "hello\n") and len(list(pids.iterdir())) == 1
    idle = cli.run(*args, script=cli.script("b", [text_reply("hello")]))
    assert (idle.returncode, idle.stdout) == (0, "hello\n") and len(list(pids.iterdir())) == 1
    calling = cli.script("c", [tool_reply("mcp__toy__add", {"a": 1, "b": 2}), text_reply("done")])
    used = cli.run("--mode", "json", *args[1:], script=calling)
    assert tool_results(used.stdout)[0]["content"][0]["text"] == "3" and len(list(pids.iterdir())) == 2
    switch.write_text("exit")
    broken = cli.run("--mode", "json", *args[1:], script=calling)
    [result] = tool_results(broken.stdout)
    assert result["isError"] and "MCP server 'toy' is not available" in result["content"][0]["text"]
    assert "note: MCP server 'toy' failed: " in broken.stderr


@pytest.mark.parametrize("how", ["a FIFO", "a link to /dev/zero", "a link out of the project", "a huge file"])
def test_a_trusted_projects_mcp_file_that_is_no_plain_file_is_one_note(cli: CliEnv, how: str) -> None:
    """A trusted project's ``.mcp.json`` is read as its context files are (``tether.own_files``):
    a FIFO does not block the start (bounded here by the timeout), ``/dev/zero`` or a sparse
    1 GB file do not fill memory, a link out of the project is not followed; each is one note,
    and the run goes on."""
    config = cli.home / "config"
    config.mkdir()
    (config / "trusted-folders.json").write_text(json.dumps([str(cli.project)]))
    project = cli.project / ".mcp.json"
    if how == "a FIFO":
        os.mkfifo(project)
    elif how == "a link to /dev/zero":
        project.symlink_to("/dev/zero")
    elif how == "a link out of the project":
        outside = cli.home / "elsewhere.json"
        outside.write_text(json.dumps({"mcpServers": {"stolen": {"command": "sk-SECRET"}}}))
        project.symlink_to(outside)
    else:
        with project.open("wb") as file:
            file.write(b'{"mcpServers": {}}')
            file.truncate(1 << 30)
    done = cli.run("-p", "hi", "--no-session", script=cli.script("s", [text_reply("fine")]), timeout=30)
    assert (done.returncode, done.stdout) == (0, "fine\n"), done.stderr
    assert "Traceback" not in done.stderr and "SECRET" not in done.stderr
    assert done.stderr.startswith(f"note: {project}: cannot read: "), done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
