"""Files tether reads on every start that were read with a plain ``read_bytes``: a FIFO in their
place blocked the start for good (opening one for reading waits for a writer), a link to
``/dev/zero`` read until memory ran out, a sparse 1 GB file was read whole. Each is now refused
unread (``tether.own_files``), said in one line naming the file, and the run goes on where the
file is not needed for it.

``tether -p`` runs in a subprocess with a scripted model; the test's timeout is the hang.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import CliEnv, json_lines, text_reply
from tmux_support import Terminal, started

pytestmark = pytest.mark.subprocess


def _plant(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "a FIFO":
        os.mkfifo(path)
    elif kind == "/dev/zero":
        path.symlink_to("/dev/zero")
    else:  # sparse: costs no disk
        with path.open("wb") as file:
            file.write(b"[")
            file.truncate(1 << 30)


KINDS = ["a FIFO", "/dev/zero", "a sparse 1 GB file"]


@pytest.mark.parametrize("kind", KINDS)
def test_models_json_that_is_no_file_is_one_line_not_a_hang(cli: CliEnv, kind: str) -> None:
    """``models.json`` is read for any model lookup; it stays a whole-file error (docs/models.md),
    now said at once instead of never."""
    models = cli.home / "config" / "models.json"
    _plant(models, kind)
    done = cli.run("-p", "hi", "--no-session", "--model", "openai/gpt-4o-mini", timeout=30)
    assert "Traceback" not in done.stderr
    assert done.returncode == 1
    assert done.stderr.startswith(f"tether: {models}: cannot read: "), done.stderr


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "name",
    ["config/trusted-folders.json", "data/extension-entry-points.json", "data/model-spec-entry-points.json"],
)
def test_a_list_tether_keeps_that_is_no_file_does_not_stop_the_run(cli: CliEnv, name: str, kind: str) -> None:
    """The trusted-folders list (read when the project has a ``.tether`` folder) and the caches of
    installed entry points (read on every start) are read without blocking; the run goes on
    without them (no project trusted; entry points searched again)."""
    _plant(cli.home / name, kind)
    (cli.project / ".tether" / "prompts").mkdir(parents=True)
    done = cli.run("-p", "hi", "--no-session", script=cli.script("s", [text_reply("fine")]), timeout=30)
    assert "Traceback" not in done.stderr
    assert (done.returncode, done.stdout) == (0, "fine\n"), done.stderr


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt install tmux)")
@pytest.mark.parametrize("kind", ["a FIFO", "/dev/zero"])
def test_a_prompt_history_that_is_no_file_is_a_warning_not_a_hang(cli: CliEnv, kind: str) -> None:
    """The input box's history file is read whole in a thread: a link to /dev/zero took memory
    until none was left (2 GB in ten seconds), and a FIFO kept the thread, so the process did not
    end when the user quit. The history is kept in memory for the run now, said in the header."""
    history = cli.home / "data" / "prompt-history"
    _plant(history, kind)
    env = cli.env(TETHER_SCRIPTED=str(cli.script("s", [text_reply("fine")])), TERM="xterm-256color")
    terminal = Terminal([sys.executable, "-m", "tether.cli"], str(cli.project), env)
    try:
        screen = terminal.wait_for(started)
        assert f"{history}: not a regular file (a pipe, socket or device)" in screen.replace("\n", "")
        terminal.send("C-d")
        terminal.wait_until_dead()
    finally:
        terminal.close()


def _closed(cli: CliEnv, redirect: str, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """The command started by a shell with one of its standard descriptors closed (``<&-``...)."""
    command = " ".join(shlex.quote(a) for a in (sys.executable, "-m", "tether.cli", *args))
    env = cli.env(TETHER_SCRIPTED=str(cli.script("s", [text_reply("fine")])))
    return subprocess.run(
        ["sh", "-c", f"exec {command} {redirect}"],
        cwd=cli.project,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_closed_stdin_is_an_empty_one(cli: CliEnv) -> None:
    """``tether -p hi <&-`` (cron, a daemon's child) ended in a traceback: ``sys.stdin`` is
    ``None`` then. A closed stdin now reads as an empty one."""
    done = _closed(cli, "<&-", "-p", "hi")
    assert "Traceback" not in done.stderr
    assert (done.returncode, done.stdout) == (0, "fine\n"), done.stderr


def test_a_closed_stderr_neither_fails_the_run_nor_lends_its_number_to_a_file(cli: CliEnv) -> None:
    """With fd 2 closed, the next file opened (the session database) took number 2, so whatever
    went to stderr (notes, a child's errors, JSON mode's fd 1 pointed at stderr) went into it;
    and every note raised, ending the run with status 1. Now fd 2 is /dev/null."""
    printed = _closed(cli, "2>&-", "-p", "hi")
    assert (printed.returncode, printed.stdout) == (0, "fine\n")
    done = _closed(cli, "2>&-", "--mode", "json", "hi")
    assert done.returncode == 0
    events = json_lines(done.stdout)
    assert events[0]["type"] == "session" and events[-1]["type"] == "agent_settled"
    store = sqlite3.connect(cli.home / "data" / "sessions.db")
    try:
        assert store.execute("pragma integrity_check").fetchone() == ("ok",)
    finally:
        store.close()
    again = cli.run("-p", "--continue", "again", script=cli.script("s2", [text_reply("still fine")]))
    assert (again.returncode, again.stdout) == (0, "still fine\n"), again.stderr


@pytest.mark.parametrize("via", ["stdin", "argument"])
def test_a_prompt_that_is_not_utf8_is_stored_and_streamed_with_replacement_characters(
    cli: CliEnv, via: str
) -> None:
    """Bytes that are not UTF-8 in piped text or an argument reached the store and the JSON
    encoder as lone surrogates: the stored run failed ("could not store session") and JSON mode
    lost every event with the prompt in it. They become U+FFFD, as in pi."""
    script = cli.script("s", [text_reply("fine")])
    prompt = b"caf\xe9 \xff\xfe ok"
    command = [sys.executable, "-m", "tether.cli", "--mode", "json"]
    stdin = b""
    if via == "stdin":
        stdin = prompt
    else:
        command.append(os.fsdecode(prompt))
    done = subprocess.run(
        command,
        cwd=cli.project,
        env=cli.env(TETHER_SCRIPTED=str(script)),
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, b""), done.stderr.decode(errors="replace")
    [user] = [e["message"] for e in json_lines(done.stdout.decode()) if e["type"] == "message_end"][:1]
    assert user["content"] == "caf\ufffd \ufffd\ufffd ok"
    again = cli.run("-p", "--continue", "again", script=cli.script("s2", [text_reply("still fine")]))
    assert (again.returncode, again.stdout) == (0, "still fine\n"), again.stderr


def test_credentials_in_a_base_url_stay_out_of_errors_streams_and_the_store(cli: CliEnv) -> None:
    """A base URL carrying a credential (``http://user:pw@proxy``, ``?key=...``) was echoed whole
    by "Cannot reach ...": on stderr, in JSON mode's events and in the stored reply."""
    config = cli.home / "config"
    config.mkdir()
    provider = {
        "baseUrl": "http://me:SECRETPW@127.0.0.1:1/v1?api_key=SECRETQ",
        "api": "openai-completions",
        "models": [{"id": "m"}],
    }
    (config / "models.json").write_text(json.dumps({"providers": {"mine": provider}}))
    done = cli.run("--mode", "json", "hi", "--model", "mine/m", timeout=60)
    assert "Cannot reach http://***@127.0.0.1:1/v1?api_key=***" in done.stderr, done.stderr
    assert "SECRET" not in done.stdout + done.stderr
    with sqlite3.connect(cli.home / "data" / "sessions.db") as store:
        stored = "".join(str(row) for row in store.execute("select payload from entries"))
    assert "Cannot reach" in stored and "SECRET" not in stored


@pytest.mark.parametrize(
    "args",
    [
        ("-p", "look at @~nosuchuser-tether/x.txt"),
        ("-p", "hi", "--append-system-prompt", "~nosuchuser-tether/x.md"),
        ("-p", "hi", "--name", "x"),
    ],
)
def test_a_path_naming_no_known_user_is_a_path_not_a_traceback(cli: CliEnv, args: tuple[str, ...]) -> None:
    """``~nosuchuser/...`` (an @mention, a flag's file, TETHER_HOME) made ``Path.expanduser``
    raise RuntimeError: a traceback and status 1. It is the name it spells now."""
    env = {"TETHER_HOME": "~nosuchuser-tether/home"} if args[-1] == "x" else {}
    done = cli.run(*args, script=cli.script("s", [text_reply("fine")]), env=env)
    assert "Traceback" not in done.stderr
    assert (done.returncode, done.stdout) == (0, "fine\n"), done.stderr


@pytest.mark.parametrize("kind", ["a FIFO", "/dev/null"])
def test_a_workspace_that_is_no_folder_is_one_usage_line(cli: CliEnv, kind: str) -> None:
    """``--cwd`` named a FIFO or a device: click's check refuses a regular file only, so the run
    started there, its session stored with that folder and every tool failing in it."""
    where = cli.project / "pipe" if kind == "a FIFO" else Path("/dev/null")
    if kind == "a FIFO":
        os.mkfifo(where)
    done = cli.run("-p", "hi", "--cwd", str(where), script=cli.script("s", [text_reply("fine")]))
    assert (done.returncode, done.stdout) == (2, "")
    assert (
        done.stderr.splitlines()[-1]
        == f"Error: Invalid value for '--cwd': {str(where)!r} is not a directory."
    )
    assert not (cli.home / "data" / "sessions.db").exists()


def test_exporting_a_path_naming_no_known_user_is_one_line(cli: CliEnv) -> None:
    done = cli.run("--export", "~nosuchuser-tether/x.jsonl")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr == "tether: --export ~nosuchuser-tether/x.jsonl: no such file\n"


def test_a_skills_folder_linking_to_the_root_is_not_walked(cli: CliEnv) -> None:
    """A repository's ``.pi/skills`` is searched on every start, trusted or not, links followed
    six folders deep: a link to ``/`` walked the machine (``/proc`` included) for minutes. A
    folder that links out of the project is left out with a note; a skill inside still loads."""
    skills = cli.project / ".pi" / "skills"
    (skills / "fine").mkdir(parents=True)
    (skills / "fine" / "SKILL.md").write_text("---\nname: fine\ndescription: a fine one\n---\nbody\n")
    (skills / "root").symlink_to("/")
    script = cli.script("s", [text_reply("fine")])
    done = cli.run("--mode", "json", "--no-session", "hi", script=script, timeout=30)
    assert done.returncode == 0, done.stderr
    assert f"note: {skills / 'root'}: links out of " in done.stderr, done.stderr
    assert "cannot list" not in done.stderr
    (skills / "root").unlink()
    (skills / "fine").rename(cli.project / "fine")
    skills.rmdir()
    skills.symlink_to("/")  # the skills folder itself
    done = cli.run("-p", "--no-session", "hi", script=script, timeout=30)
    assert (done.returncode, done.stdout) == (0, "fine\n"), done.stderr
    assert (
        done.stderr
        == f"note: {skills}: links out of {cli.project}, {cli.home / 'config'}; not searched for skills\n"
    )


def test_a_users_skills_folder_is_searched_within_a_bound(cli: CliEnv, tmp_path: Path) -> None:
    """The user's own skills may link anywhere (a dotfiles repository), but the search stops after
    ``MAX_FOLDERS`` folders with a note instead of walking a tree without end."""
    from tether.session.skills import MAX_FOLDERS

    tree = tmp_path / "tree"
    for i in range(MAX_FOLDERS + 10):
        (tree / f"f{i:05d}").mkdir(parents=True)
    skills = cli.home / "config" / "skills"
    skills.mkdir(parents=True)
    (skills / "many").symlink_to(tree)
    done = cli.run("-p", "hi", "--no-session", script=cli.script("s", [text_reply("fine")]), timeout=60)
    assert (done.returncode, done.stdout) == (0, "fine\n"), done.stderr
    assert f"searched {MAX_FOLDERS} folders" in done.stderr, done.stderr


def test_a_filled_standard_stream_is_inherited_by_the_commands_tether_runs() -> None:
    """``os.open`` gives a close-on-exec descriptor: the /dev/null put in place of a closed fd 2
    was closed again in every command tether started (a shell tool's stderr)."""
    child = "import os; os.fstat(2); print('open')"
    code = (
        "import subprocess, sys\n"
        "from tether.cli.stdout import fill_closed_standard_streams\n"
        "fill_closed_standard_streams()\n"
        f"print(subprocess.run([sys.executable, '-c', {child!r}], stdout=subprocess.PIPE, text=True).stdout)"
    )
    done = subprocess.run(
        ["sh", "-c", f"exec {shlex.quote(sys.executable)} -c {shlex.quote(code)} 2>&-"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.strip() == "open"
