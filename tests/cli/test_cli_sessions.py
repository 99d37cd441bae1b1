"""Sessions across processes: every message stored, then --continue, --resume, --session."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import CliEnv, json_lines, text_reply
from tmux_support import Terminal

from tether.session import SessionManager
from tether.store import default_db_path

pytestmark = pytest.mark.subprocess


def stored_sessions(cli: CliEnv) -> SessionManager:
    return SessionManager.at(default_db_path({"TETHER_HOME": str(cli.home)}))


def roles(cli: CliEnv, session_id: str) -> list[str]:
    with stored_sessions(cli) as sessions:
        return [m["role"] for m in sessions.open(session_id, readonly=True).messages]


def session_of(events: list[dict[str, object]]) -> str:
    with_id = [e for e in events if e["type"] == "session"]
    assert with_id, "json mode starts with a session line"
    return str(with_id[0]["id"])


def test_continue_resume_and_session_id_across_processes(cli: CliEnv) -> None:
    first = cli.run("-p", "first question", script=cli.script("a", [text_reply("first answer")]))
    assert first.returncode == 0, first.stderr
    with stored_sessions(cli) as sessions:
        records = sessions.list(str(cli.project))
    assert len(records) == 1
    session_id = records[0].id
    assert roles(cli, session_id) == ["user", "assistant"]

    second = cli.run("-c", "-p", "second question", script=cli.script("b", [text_reply("second answer")]))
    assert second.returncode == 0, second.stderr
    assert roles(cli, session_id) == ["user", "assistant", "user", "assistant"]

    third = cli.run("--resume", session_id, "-p", "third", script=cli.script("c", [text_reply("3")]))
    assert third.returncode == 0, third.stderr
    assert roles(cli, session_id) == ["user", "assistant"] * 3

    listing = cli.run("sessions")
    assert session_id in listing.stdout and "first question" in listing.stdout


def test_json_mode_reports_the_session_and_no_session_stores_nothing(cli: CliEnv) -> None:
    done = cli.run("--mode", "json", "hello", script=cli.script("a", [text_reply("hi")]))
    assert done.returncode == 0, done.stderr
    session_id = session_of(json_lines(done.stdout))
    assert roles(cli, session_id) == ["user", "assistant"]
    cli.run("-p", "x", "--no-session", script=cli.script("b", [text_reply("y")]))
    with stored_sessions(cli) as sessions:
        assert [r.id for r in sessions.list()] == [session_id]


def test_session_option_opens_that_session(cli: CliEnv) -> None:
    created = cli.run("--mode", "json", "one", script=cli.script("a", [text_reply("1")]))
    session_id = session_of(json_lines(created.stdout))
    cli.run("-p", "unrelated", script=cli.script("b", [text_reply("other session")]))
    reused = cli.run("--session", session_id, "-p", "two", script=cli.script("c", [text_reply("2")]))
    assert reused.returncode == 0, reused.stderr
    assert roles(cli, session_id) == ["user", "assistant", "user", "assistant"]


def test_resume_of_a_missing_session_is_a_clear_error(cli: CliEnv) -> None:
    done = cli.run("--resume", "nope", "-p", "x", script=cli.script("a", [text_reply("y")]))
    assert done.returncode == 1
    assert "nope" in done.stderr and "Traceback" not in done.stderr


def test_resume_picker_lists_sessions_and_needs_a_terminal(cli: CliEnv) -> None:
    cli.run("-p", "picked question", script=cli.script("a", [text_reply("x")]))
    done = cli.run("--resume", "-p", "again", script=cli.script("b", [text_reply("y")]))
    assert done.returncode == 1
    assert "picked question" in done.stderr  # the list, numbered
    assert "pass the id" in done.stderr
    everywhere = cli.run("sessions", "--all")
    assert "picked question" in everywhere.stdout and str(cli.project.resolve()) in everywhere.stdout


def test_sessions_list_is_the_listing_of_sessions_alone(cli: CliEnv, tmp_path: Path) -> None:
    """``tether sessions list``, as ``mcp list`` and ``runs list`` are spelt, was "No such
    command 'list'"; it lists what ``tether sessions`` lists, ``--all`` on either command."""
    cli.run("-p", "listed question", script=cli.script("a", [text_reply("x")]))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cli.run("-p", "other folder", cwd=elsewhere, script=cli.script("b", [text_reply("y")]))
    here = cli.run("sessions")
    assert "listed question" in here.stdout and "other folder" not in here.stdout
    listed = cli.run("sessions", "list")
    assert (listed.returncode, listed.stdout, listed.stderr) == (0, here.stdout, "")
    everywhere = cli.run("sessions", "--all").stdout
    assert "other folder" in everywhere
    assert cli.run("sessions", "list", "--all").stdout == everywhere
    assert cli.run("sessions", "--all", "list").stdout == everywhere


def test_sessions_import_and_export_in_both_formats(cli: CliEnv, tmp_path: Path) -> None:
    """``tether sessions import`` takes pi session files and tether exports alike (a bad file is
    one error line, the others still go in); ``export --format pi`` writes a pi file."""
    pi_file = tmp_path / "pi.jsonl"
    pi_file.write_text(
        '{"type":"session","version":3,"id":"p","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/p"}\n'
        '{"type":"message","id":"a1","parentId":null,"timestamp":"2024-12-03T14:00:01.000Z",'
        '"message":{"role":"user","content":"from pi","timestamp":1}}\n'
    )
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"type":"message"}\n')
    done = cli.run("sessions", "import", str(pi_file), str(broken))
    assert done.returncode == 1
    assert (
        done.stderr.strip()
        == f"error: {broken}: neither a pi session file nor a tether export (no session header first)"
    )
    (imported, name) = done.stdout.split()
    assert name == str(pi_file) and roles(cli, imported) == ["user"]

    tether_out = tmp_path / "tether.jsonl"
    pi_out = tmp_path / "back-to-pi.jsonl"
    assert cli.run("sessions", "export", imported, "-o", str(tether_out)).returncode == 0
    done = cli.run("sessions", "export", imported, "--format", "pi", "-o", str(pi_out))
    assert done.returncode == 0 and done.stdout.strip() == str(pi_out)
    header, entry = (json.loads(line) for line in pi_out.read_text().splitlines())
    assert (header["type"], header["version"], header["cwd"]) == ("session", 3, "/p")
    assert (entry["id"], entry["message"]["content"]) == ("a1", "from pi")

    with stored_sessions(cli) as sessions:
        sessions.delete(imported)
    again = cli.run("sessions", "import", str(tether_out))
    assert again.returncode == 0 and again.stdout.split()[0] == imported  # a tether export keeps its id
    missing = cli.run("sessions", "export", "nope", "--format", "pi")
    assert missing.returncode == 1 and missing.stderr.startswith("error: ")


def test_export_flag_and_the_export_command_use_the_users_theme(cli: CliEnv, tmp_path: Path) -> None:
    """The ``theme`` setting's file colours the page (``--export``, and RPC's ``export_html``)."""
    themes = cli.home / "config" / "themes"
    themes.mkdir(parents=True)
    colors = {"text": "#e0e6f0", "accent": "#4fa3ff", "userMessageBg": "#203040"}
    (themes / "ocean.json").write_text(json.dumps({"colors": colors, "export": {"pageBg": "#101820"}}))
    (cli.home / "config" / "settings.json").write_text(json.dumps({"theme": "ocean"}))
    first = cli.run("--mode", "json", "a question", script=cli.script("a", [text_reply("an answer")]))
    session_id = session_of(json_lines(first.stdout))
    out = tmp_path / "themed.html"
    done = cli.run("--export", session_id, str(out))
    assert (done.returncode, done.stderr) == (0, "")
    page = out.read_text()
    assert "--page-bg: #101820;" in page and "--text: #e0e6f0;" in page and "--accent: #4fa3ff;" in page
    asked = json.dumps({"id": "1", "type": "export_html", "outputPath": str(tmp_path / "rpc.html")})
    unused = cli.script("unused", [])  # the model is never asked
    rpc = cli.run("--mode", "rpc", "--session", session_id, stdin=asked + "\n", script=unused)
    assert rpc.returncode == 0, rpc.stderr

    def root(text: str) -> str:
        return text[text.index(":root") : text.index("}", text.index(":root"))]

    assert root((tmp_path / "rpc.html").read_text()) == root(page)  # (the page adds the run's model change)
    command = cli.run("sessions", "export", session_id, "--format", "html", "-o", str(tmp_path / "cmd.html"))
    assert (command.returncode, command.stderr) == (0, "")
    assert root((tmp_path / "cmd.html").read_text()) == root(page) and "an answer" in page
    missing = cli.run("sessions", "export", "nope", "--format", "html")
    assert missing.returncode == 1 and missing.stderr.startswith("tether: sessions export nope: ")
    (cli.home / "config" / "settings.json").write_text(json.dumps({"theme": "gone"}))
    done = cli.run("--export", session_id, str(tmp_path / "plain.html"))
    assert (
        done.returncode == 0
        and done.stderr == 'note: theme: no theme "gone" for the HTML page; it has the default colours\n'
    )
    assert "--page-bg: #ffffff;" in (tmp_path / "plain.html").read_text()


def test_export_flag_writes_html_from_a_file_or_a_stored_session(cli: CliEnv, tmp_path: Path) -> None:
    """``tether --export FILE [OUTPUT]`` as pi: a pi session file, a tether export, or an id."""
    pi_file = tmp_path / "talk.jsonl"
    pi_file.write_text(
        '{"type":"session","version":3,"id":"p","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/p"}\n'
        '{"type":"message","id":"a1","parentId":null,"timestamp":"2024-12-03T14:00:01.000Z",'
        '"message":{"role":"user","content":"hello <from> pi","timestamp":1}}\n'
    )
    done = cli.run("--export", str(pi_file))
    assert done.returncode == 0, done.stderr
    default = cli.project / "tether-session-talk.html"
    assert done.stdout == f"Exported to: {default.name}\n"
    assert "hello &lt;from&gt; pi" in default.read_text()
    with stored_sessions(cli) as sessions:
        assert sessions.list() == []  # reading the file stored nothing

    first = cli.run("--mode", "json", "stored question", script=cli.script("a", [text_reply("an answer")]))
    session_id = session_of(json_lines(first.stdout))
    out = tmp_path / "by-id.html"
    assert cli.run("--export", session_id, str(out)).returncode == 0
    assert "stored question" in out.read_text() and "an answer" in out.read_text()
    exported = tmp_path / "export.jsonl"
    assert cli.run("sessions", "export", session_id, "-o", str(exported)).returncode == 0
    again = tmp_path / "from-export.html"
    assert cli.run("--export", str(exported), str(again)).returncode == 0
    assert again.read_text() == out.read_text()

    for missing in ("no-such-id", str(tmp_path / "gone.jsonl")):
        done = cli.run("--export", missing)
        assert done.returncode == 1 and done.stderr.startswith(f"tether: --export {missing}: ")
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def delete_at_a_terminal(cli: CliEnv, session_id: str, answer: bytes) -> subprocess.CompletedProcess[str]:
    primary, secondary = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "tether.cli", "sessions", "delete", session_id],
            cwd=cli.project,
            env=cli.env(),
            stdin=secondary,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        os.write(primary, answer)
        out, err = process.communicate(timeout=60)
    finally:
        os.close(primary)
        os.close(secondary)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def test_sessions_delete_asks_unless_yes(cli: CliEnv) -> None:
    ids: list[str] = []
    for name in ("a", "b", "c"):
        done = cli.run("--mode", "json", f"question {name}", script=cli.script(name, [text_reply("x")]))
        ids.append(session_of(json_lines(done.stdout)))
    asked = cli.run("sessions", "delete", ids[0])  # stdin is no terminal: nobody can confirm
    assert asked.returncode == 2 and "--yes" in asked.stderr
    for answer, code in (b"n\n", 1), (b"y\n", 0):  # a terminal on stdin: asked, and answered
        done = delete_at_a_terminal(cli, ids[0], answer)
        assert done.returncode == code, done.stderr
        assert f"Delete session {ids[0]}? [y/N]" in done.stdout
    ids.pop(0)
    for flag in ("--yes", "-f"):
        done = cli.run("sessions", "delete", flag, ids.pop())
        assert done.returncode == 0, done.stderr
    with stored_sessions(cli) as sessions:
        assert sessions.list() == []
    gone = cli.run("sessions", "delete", "-y", "no-such-id")
    assert gone.returncode == 1 and gone.stderr.startswith("tether: ") and "no-such-id" in gone.stderr


def test_a_failed_or_empty_start_stores_no_session_and_continue_takes_one_with_content(cli: CliEnv) -> None:
    """No empty sessions: not from a run that fails before its prompt, not from an interactive
    start left at once (Ctrl-D); ``-c`` continues the newest session that has a message, even
    when an empty one (as older versions left behind) is newer."""
    failed = cli.run("-p", "hello", "--model", "nosuchprovider/x")
    assert failed.returncode == 1 and "nosuchprovider" in failed.stderr
    terminal = Terminal(
        [sys.executable, "-m", "tether.cli"],
        str(cli.project),
        cli.env(TETHER_SCRIPTED=str(cli.script("idle", [text_reply("unused")])), TERM="xterm-256color"),
    )
    try:
        terminal.wait_for("/help for commands")
        terminal.send("C-d")
        terminal.wait_until_dead()
    finally:
        terminal.close()
    with stored_sessions(cli) as sessions:
        assert sessions.list() == []

    first = cli.run("-p", "remember 42", script=cli.script("a", [text_reply("noted")]))
    assert first.returncode == 0, first.stderr
    with stored_sessions(cli) as sessions:
        (talked,) = sessions.list()
        sessions.create(cli.project).close()  # an empty session, newer
    again = cli.run("-c", "-p", "what number?", script=cli.script("b", [text_reply("42")]))
    assert again.returncode == 0, again.stderr
    assert roles(cli, talked.id) == ["user", "assistant", "user", "assistant"]
    listing = cli.run("sessions")
    assert talked.id in listing.stdout and listing.stdout.count("\n") == 2  # header and one row
