"""Issue 14.9 and 14.10: a session database tether cannot use, a broken ``models.json``, stdout on
a full device. Each is one line on stderr naming the file and what to do, exit status 1, never a
traceback, in every mode. Real processes, real files; a real tmpfs for the full and read-only
disks (skipped only where mounting is refused).
"""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import CliEnv, text_reply, tiny_tmpfs

pytestmark = pytest.mark.subprocess

DAMAGED = "the session database is damaged (database disk image is malformed); move it aside"


def one_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def damage_middle(db: Path) -> None:
    """Garbage over every page but the first (the schema) and the last: a disk gone bad."""
    data = bytearray(db.read_bytes())
    page = 4096
    noise = random.Random(14).randbytes(len(data) - 2 * page)
    data[page : len(data) - page] = noise
    db.write_bytes(bytes(data))


@pytest.fixture
def damaged(cli: CliEnv) -> Path:
    script = cli.script("fill", [text_reply("noted")])
    done = cli.run(stdin="x" * 200_000, script=script)  # overflow pages: a database of some size
    assert done.returncode == 0, done.stderr
    db = cli.home / "data" / "sessions.db"
    damage_middle(db)
    return db


@pytest.mark.parametrize(
    "args",
    [
        ("-p", "hi"),
        ("--mode", "json", "hi"),
        ("--continue", "-p", "hi"),
        ("sessions",),
        ("sessions", "--all"),
    ],
)
def test_a_damaged_database_is_one_line_in_every_mode(
    cli: CliEnv, damaged: Path, args: tuple[str, ...]
) -> None:
    done = cli.run(*args, script=cli.script("s", [text_reply("hello")]))
    assert done.returncode == 1
    line = one_line(done.stderr)
    assert line.startswith(f"tether: {damaged}: {DAMAGED}"), line
    assert "--database" in line  # the other remedy


def test_a_damaged_database_in_rpc_mode_is_one_line(cli: CliEnv, damaged: Path) -> None:
    command = '{"type": "get_state", "id": "1"}\n'
    done = cli.run("--mode", "rpc", stdin=command, script=cli.script("s", [text_reply("hello")]))
    assert done.returncode == 1
    assert one_line(done.stderr).startswith(f"tether: {damaged}: {DAMAGED}")


def test_sessions_in_a_read_only_folder_is_one_line(cli: CliEnv, tmp_path: Path) -> None:
    script = cli.script("s", [text_reply("hello")])

    def store_a_session(mount: Path) -> None:
        done = cli.run("-p", "hi", "--database", str(mount / "sessions.db"), script=script)
        assert done.returncode == 0, done.stderr

    with tiny_tmpfs(tmp_path / "ro", read_only_after=store_a_session) as mount:
        db = mount / "sessions.db"
        for args in (("sessions", "--database", str(db)), ("-p", "hi", "--database", str(db))):
            done = cli.run(*args, script=script)
            assert done.returncode == 1
            line = one_line(done.stderr)
            assert line.startswith(f"tether: {db}: cannot open the session database for writing"), line
            assert "make it and its folder writable" in line


def test_a_full_disk_says_so_not_disk_io_error(cli: CliEnv, tmp_path: Path) -> None:
    script = cli.script("s", [text_reply("hello")] * 3)
    with tiny_tmpfs(tmp_path / "full") as mount:
        db = mount / "sessions.db"
        done = cli.run("-p", "hi", "--database", str(db), script=script)
        assert done.returncode == 0, done.stderr
        with (mount / "filler").open("wb") as filler:
            try:
                while True:
                    filler.write(b"\0" * 65536)
                    filler.flush()
            except OSError:
                pass  # the disk is full
        done = cli.run("-p", "y" * 50_000, "--database", str(db), script=script)
        assert done.returncode == 1
        line = one_line(done.stderr)
        assert line == f"tether: {db}: the disk holding the session database is full; free some space"


def to_full_device(
    cli: CliEnv, args: tuple[str, ...], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``tether ARGS`` (the scripted model answering "hello") with its stdout on ``/dev/full``."""
    script = cli.script("s", [text_reply("hello")])
    with open("/dev/full", "w") as full:
        return subprocess.run(
            [sys.executable, "-m", "tether.cli", *args],
            cwd=cli.project,
            env=cli.env(TETHER_SCRIPTED=str(script)),
            input=stdin,
            stdin=subprocess.DEVNULL if stdin is None else None,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )


@pytest.mark.parametrize(
    "args", [("-p", "hi", "--no-session"), ("--mode", "json", "hi", "--no-session"), ("--version",)]
)
def test_stdout_on_a_full_device_is_one_line(cli: CliEnv, args: tuple[str, ...]) -> None:
    done = to_full_device(cli, args)
    assert done.returncode == 1
    assert one_line(done.stderr) == (
        "tether: cannot write the output: No space left on device; "
        "free space on its device or send it elsewhere"
    )


def test_rpc_frames_on_a_full_device_is_one_line(cli: CliEnv) -> None:
    done = to_full_device(cli, ("--mode", "rpc", "--no-session"), '{"type": "get_state", "id": "1"}\n')
    assert done.returncode == 1
    assert one_line(done.stderr) == (
        "tether: cannot write the RPC frames to standard output: No space left on device"
    )


@pytest.mark.parametrize("args", [("models",), ("models", "--all"), ("-p", "hi", "--model", "openai/gpt-4o")])
def test_a_provider_with_a_mistake_is_one_note_naming_it(cli: CliEnv, args: tuple[str, ...]) -> None:
    """The provider is left out with one line naming file, entry and field; the rest works
    (docs/models.md): the list is printed, and a run with another provider's model goes on to
    its own problem (here: no key)."""
    config = cli.home / "config"
    config.mkdir()
    models = config / "models.json"
    models.write_text(json.dumps({"providers": {"mine": {"baseUrl": 3, "api": "openai-completions"}}}))
    # a usable model of another provider whether or not this machine has the embedded one
    key = {"ANTHROPIC_API_KEY": "sk-test"} if args[0] == "models" else {}
    done = cli.run(*args, env=key)
    assert "Traceback" not in done.stderr
    note, *rest = done.stderr.strip().splitlines()
    assert note == (
        f"note: {models}: providers.mine.baseUrl: expected a string (got 3) (provider 'mine' left out)"
    )
    if args[0] == "models":
        assert done.returncode == 0 and rest == [] and "model" in done.stdout
    else:
        assert done.returncode == 1 and rest == [
            "error: No API key for provider 'openai': set OPENAI_API_KEY in the environment."
        ]


def test_an_unknown_model_points_to_tether_models_once(cli: CliEnv) -> None:
    done = cli.run("-p", "hi", "--model", "zzzz/qqqq", "--no-session")
    assert done.returncode == 1
    assert one_line(done.stderr).count("tether models") == 1


def test_a_missing_key_names_the_variable_in_cli_words(cli: CliEnv) -> None:
    done = cli.run("-p", "hi", "--model", "openai/gpt-4o", "--no-session")
    assert done.returncode == 1
    assert "set OPENAI_API_KEY in the environment" in done.stderr
    assert "api_key" not in done.stderr  # the library's parameter means nothing at a shell


def test_a_settings_file_that_is_a_directory_is_one_line(cli: CliEnv) -> None:
    (cli.home / "config" / "settings.json").mkdir(parents=True)
    done = cli.run("-p", "hi", "--no-session")
    assert done.returncode == 1
    assert one_line(done.stderr) == (
        f"tether: {cli.home / 'config' / 'settings.json'}: is a directory, not a settings file; "
        "remove it or make it a JSON file"
    )


def _a_session_whose_prompt_is_no_json(cli: CliEnv) -> tuple[str, str]:
    """A stored session ("hi", "hello") whose first message's row is made ``{ba`` as a hand edit
    could: its id and that entry's."""
    done = cli.run("-p", "hi", script=cli.script("s", [text_reply("hello")]))
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(cli.home / "data" / "sessions.db") as db:
        session_id, entry_id = db.execute(
            "SELECT session_id, id FROM entries WHERE type = 'message' ORDER BY seq LIMIT 1"
        ).fetchone()
        db.execute("UPDATE entries SET payload = x'7b6261' WHERE id = ?", (entry_id,))
    db.close()
    return session_id, entry_id


def test_an_entry_whose_row_is_no_json_is_one_line_naming_it(cli: CliEnv) -> None:
    """A row changed outside tether (a hand edit in sqlite3, a bad block inside a record) whose
    payload is no JSON: jiter's ValueError ended the run with a traceback."""
    _, entry_id = _a_session_whose_prompt_is_no_json(cli)
    done = cli.run("-p", "more", "--continue")
    assert done.returncode == 1
    assert one_line(done.stderr).endswith(
        f"entry '{entry_id}': payload is not JSON (key must be a string at line 1 column 2)"
    )


def test_a_transcript_scrubbed_in_sqlite3_still_opens_and_exports(cli: CliEnv) -> None:
    """``UPDATE entries SET payload = replace(payload, ...)``, a user's way to take a pasted key
    out of a transcript, stores every row as TEXT: reading them raised a TypeError (a traceback)
    for each session, and the export wrote none."""
    done = cli.run("-p", "my key is sk-secret-1", script=cli.script("s", [text_reply("noted")]))
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(cli.home / "data" / "sessions.db") as db:
        db.execute("UPDATE entries SET payload = replace(payload, 'sk-secret-1', 'REDACTED')")
        assert db.execute("SELECT DISTINCT typeof(payload) FROM entries").fetchall() == [("text",)]
        (session_id,) = db.execute("SELECT id FROM sessions").fetchone()
    db.close()
    done = cli.run("sessions", "export", session_id, "-o", "s.jsonl")
    assert done.returncode == 0, done.stderr
    exported = (cli.project / "s.jsonl").read_text()
    assert "REDACTED" in exported and "sk-secret-1" not in exported
    done = cli.run("-p", "again", "--continue", script=cli.script("t", [text_reply("still here")]))
    assert (done.returncode, done.stdout) == (0, "still here\n"), done.stderr


def test_following_a_session_skips_an_entry_whose_row_is_no_json(cli: CliEnv) -> None:
    """``tether sessions follow`` printed history until the damaged row, then ended with a
    JSONDecodeError traceback; the row is one line on stderr now and the entries after it come."""
    session_id, entry_id = _a_session_whose_prompt_is_no_json(cli)
    follower = subprocess.Popen(
        [sys.executable, "-m", "tether.cli", "sessions", "follow", session_id],
        cwd=cli.project,
        env=cli.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert follower.stdout is not None
    lines: list[str] = []
    for line in iter(follower.stdout.readline, ""):  # ends at EOF if the follower dies
        lines.append(line)
        if "assistant: hello" in line:
            break
    assert cli.run("sessions", "delete", session_id, "--yes").returncode == 0  # ends the follower
    _, err = follower.communicate(timeout=30)
    assert "Traceback" not in err and any("assistant: hello" in line for line in lines), err
    assert f"tether: entry '{entry_id}': payload is not JSON (" in err and "; skipped\n" in err


@pytest.mark.parametrize(
    "args",
    [("--export", "{id}", "s.html"), ("sessions", "export", "{id}", "--format", "html", "-o", "s.html")],
)
def test_the_html_export_leaves_out_an_entry_whose_row_is_no_json(cli: CliEnv, args: tuple[str, ...]) -> None:
    """As the JSONL and pi exports do: the row is one line and the rest of the session is
    written. The page's export opened the session, and ended at the row with that line, no page
    written."""
    session_id, entry_id = _a_session_whose_prompt_is_no_json(cli)
    done = cli.run(*(arg.format(id=session_id) for arg in args))
    assert done.returncode == 0, done.stderr
    assert one_line(done.stderr).startswith(f"tether: entry '{entry_id}': payload is not JSON (")
    assert done.stderr.endswith("; skipped\n")
    page = (cli.project / "s.html").read_text()
    assert "hello" in page and entry_id not in page


@pytest.mark.parametrize("kind", ["tether", "pi"])
def test_an_export_leaves_out_an_entry_whose_row_is_no_json(cli: CliEnv, kind: str) -> None:
    """Copied as it was, the damaged row made an export that import refused at its line, and the
    entries after it with it; it is left out with one line, as ``sessions follow`` says it. The
    pi format stopped at the row (the one line, nothing written); it leaves it out the same way."""
    session_id, entry_id = _a_session_whose_prompt_is_no_json(cli)
    done = cli.run("sessions", "export", session_id, "--format", kind, "-o", "s.jsonl")
    assert done.returncode == 0 and done.stdout == "s.jsonl\n", done.stderr
    assert one_line(done.stderr).startswith(f"tether: entry '{entry_id}': payload is not JSON (")
    assert done.stderr.endswith("; skipped\n")
    assert cli.run("sessions", "delete", session_id, "--yes").returncode == 0
    done = cli.run("sessions", "import", "s.jsonl")
    assert done.returncode == 0, done.stderr
    exported = (cli.project / "s.jsonl").read_text()
    assert '"hello"' in exported and entry_id not in exported.splitlines()[1]
