"""Issue 14 (classes 7 and 9) on ``tether sessions import``: a damaged or hostile session file is
one line naming the file and its line, never a traceback, and never a stored session that fails
each time it is opened.

Each file below is a pi session file (or a tether export) with one thing wrong, as a clumsy
editor, a truncated copy or an attacker would leave it. The command runs in a subprocess against
a real SQLite store; afterwards nothing was stored (``tether sessions --all`` lists no session).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from cli_support import CliEnv

pytestmark = pytest.mark.subprocess

HEADER = {"type": "session", "version": 3, "id": "p", "timestamp": "2024-12-03T14:00:00.000Z", "cwd": "/p"}


def _message(entry_id: str, parent: object, message: object) -> dict[str, object]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2024-12-03T14:00:01.000Z",
        "message": message,
    }


def _user(entry_id: str, parent: object, content: object = "hi") -> dict[str, object]:
    return _message(entry_id, parent, {"role": "user", "content": content, "timestamp": 1})


# name -> (the lines after the header, the line the error names, what it says)
DAMAGED: dict[str, tuple[list[str], int, str]] = {
    "a line nested 100k deep": (["[" * 100_000 + "]" * 100_000], 2, "nested too deeply to import"),
    "an object nested 100k deep": (
        ['{"a":' * 100_000 + "1" + "}" * 100_000],
        2,
        "nested too deeply to import",
    ),
    "a lone surrogate": (
        [
            '{"type":"message","id":"a","parentId":null,"timestamp":"2024-12-03T14:00:01.000Z",'
            '"message":{"role":"user","content":"\\ud800","timestamp":1}}'
        ],
        2,
        "cannot be stored",
    ),
    "a message that is not an object": (
        [json.dumps(_message("a", None, "text"))],
        2,
        "needs a message object",
    ),
    "a role that is not a string": (
        [json.dumps(_message("a", None, {"role": ["user"], "content": "x"}))],
        2,
        "message.role must be a string",
    ),
    "a parent that is no entry": ([json.dumps(_user("a", "zz"))], 2, "parentId 'zz', not an earlier entry"),
    "a parent that comes later (a cycle)": (
        [json.dumps(_user("a", "b")), json.dumps(_user("b", "a"))],
        2,
        "parentId 'b', not an earlier entry",
    ),
    "a parent that is an object": ([json.dumps(_user("a", {"id": "x"}))], 2, "not an earlier entry"),
    "a compaction without a text summary": (
        [
            json.dumps(_user("a", None)),
            json.dumps(
                {
                    "type": "compaction",
                    "id": "c",
                    "parentId": "a",
                    "timestamp": "2024-12-03T14:00:02.000Z",
                    "summary": 5,
                    "firstKeptEntryId": "a",
                }
            ),
        ],
        3,
        "compaction.summary must be a string, not a number",
    ),
    "a model change without its model": (
        [json.dumps({"type": "model_change", "id": "m", "parentId": None, "timestamp": "x"})],
        2,
        "a model_change entry needs 'provider'",
    ),
    "usage beyond 64 bits": (
        [
            json.dumps(_user("a", None)),
            '{"type":"message","id":"b","parentId":"a","timestamp":"2024-12-03T14:00:02.000Z","message":'
            '{"role":"assistant","content":[],"api":"x","provider":"x","model":"x","stopReason":"stop",'
            '"timestamp":2,"usage":{"input":1' + "0" * 30 + ',"output":0,"cacheRead":0,"cacheWrite":0,'
            '"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}}',
        ],
        3,
        "a number beyond 64 bits",
    ),
}


KEPT_AS_ROOT = {
    "a parent that is no entry",
    "a parent that comes later (a cycle)",
    "a parent that is an object",
}
"""Entries whose parent link is broken are kept, as roots (pi's context stops there too)."""


@pytest.mark.parametrize("name", list(DAMAGED))
def test_a_damaged_entry_is_skipped_and_reported_by_its_line(cli: CliEnv, tmp_path: Path, name: str) -> None:
    """One bad entry no longer costs the whole file: it is left out with one ``note:`` line
    naming the file and line, the entries after it still come in, and the session opens."""
    lines, line_number, reason = DAMAGED[name]
    damaged = tmp_path / "damaged.jsonl"
    after = _user("after", None, "still here")
    damaged.write_text("\n".join([json.dumps(HEADER), *lines, json.dumps(after)]) + "\n")
    done = cli.run("sessions", "import", str(damaged), timeout=120)
    assert done.returncode == 0, done.stderr
    note = done.stderr.strip()
    assert "\n" not in note and "Traceback" not in note
    assert note.startswith(f"note: damaged.jsonl:{line_number}: "), note
    assert reason in note
    assert note.endswith(": kept as a root") if name in KEPT_AS_ROOT else "skipped: " in note
    session_id = done.stdout.split()[0]
    back = tmp_path / "back.jsonl"
    shown = cli.run("sessions", "export", session_id, "--format", "pi", "-o", str(back))
    assert shown.returncode == 0, shown.stderr
    ids = [json.loads(line)["id"] for line in back.read_text().splitlines()[1:]]
    assert ids[-1] == "after"
    assert len(ids) == len(lines) + 1 - (name not in KEPT_AS_ROOT)


def test_children_of_a_skipped_entry_hang_under_its_parent(cli: CliEnv, tmp_path: Path) -> None:
    """A half-written line and a damaged entry in the middle of a conversation: the rest is
    imported, the conversation still one path (the skipped entry's child takes its place)."""
    damaged = tmp_path / "mid.jsonl"
    lines = [
        json.dumps(HEADER),
        json.dumps(_user("a", None, "one")),
        "{half a line",
        json.dumps(_message("b", "a", "not an object")),
        json.dumps(_user("c", "b", "two")),
        json.dumps(_user("a", "c", "a duplicate id")),
        json.dumps(_user("d", "a", "three")),
    ]
    damaged.write_text("\n".join(lines) + "\n")
    done = cli.run("sessions", "import", str(damaged))
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "note: mid.jsonl:3: skipped: not a JSON line",
        "note: mid.jsonl:4: skipped: a message entry needs a message object",
        "note: mid.jsonl:6: skipped: duplicate entry id 'a'",
    ]
    back = tmp_path / "back.jsonl"
    shown = cli.run("sessions", "export", done.stdout.split()[0], "--format", "pi", "-o", str(back))
    assert shown.returncode == 0, shown.stderr
    entries = [json.loads(line) for line in back.read_text().splitlines()[1:]]
    assert [(e["id"], e["parentId"]) for e in entries] == [("a", None), ("c", "a"), ("d", "a")]


def test_a_v1_entry_without_a_type_is_skipped_not_a_traceback(cli: CliEnv, tmp_path: Path) -> None:
    """pi's v1 files (no version) are migrated entry by entry; one without ``type`` raised
    KeyError in the migration."""
    v1 = tmp_path / "v1.jsonl"
    header = {k: v for k, v in HEADER.items() if k != "version"}
    v1.write_text("\n".join([json.dumps(header), '{"id": "x"}', json.dumps(_user("b", None))]) + "\n")
    done = cli.run("sessions", "import", str(v1))
    assert done.returncode == 0, done.stderr
    assert done.stderr == "note: v1.jsonl:2: skipped: an entry needs a string id and type\n"


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        ({**HEADER, "version": "three"}, "damaged.jsonl:1: the header's version must be a number"),
        ("[" * 100_000 + "]" * 100_000, "neither a pi session file nor a tether export"),
    ],
)
def test_a_damaged_header_is_one_line(cli: CliEnv, tmp_path: Path, header: object, reason: str) -> None:
    damaged = tmp_path / "damaged.jsonl"
    first = header if isinstance(header, str) else json.dumps(header)
    damaged.write_text(first + "\n" + json.dumps(_user("a", None)) + "\n")
    done = cli.run("sessions", "import", str(damaged))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"error: {damaged}: ") and reason in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_damaged_tether_export_is_one_line(cli: CliEnv, tmp_path: Path) -> None:
    """The same checks guard tether's own export format."""
    header = {"type": "session", "format": "tether.session", "version": 1, "id": "s", "cwd": "/p"}
    header |= {"created": 1, "updated": 1, "leafId": ["not", "an", "id"]}
    entry = {"type": "message", "id": "a", "parentId": None, "timestamp": 1}
    cases = {
        "deep": (header, "[" * 100_000 + "]" * 100_000, "export.jsonl:2: invalid JSON: nested too deeply"),
        "parent": (header, json.dumps({**entry, "parentId": [1]}), "not an earlier entry"),
        "label": (
            header,
            json.dumps({"type": "label", "id": "l", "parentId": None, "timestamp": 1, "targetId": 7}),
            "label.targetId must be a string, not a number",
        ),
        "leaf": (
            header,
            json.dumps({**entry, "message": {"role": "user", "content": "x", "timestamp": 1}}),
            "header leafId ['not', 'an', 'id'] is not an entry of the file",
        ),
        # ids name files (/export, lock files) and go out as SSE id lines: no path, no line break
        "session id": (
            {**header, "id": "../../../pwned", "leafId": None},
            json.dumps({**entry, "message": {"role": "user", "content": "x", "timestamp": 1}}),
            "export.jsonl:1: header.id '../../../pwned' is not a session id",
        ),
        "entry id": (
            {**header, "leafId": None},
            json.dumps({**entry, "id": "a\nevent: deleted", "message": {"role": "user", "content": "x"}}),
            "export.jsonl:2: entry.id 'a\\nevent: deleted' is not an entry id",
        ),
    }
    for name, (head, line, reason) in cases.items():
        export = tmp_path / "export.jsonl"
        export.write_text(json.dumps(head) + "\n" + line + "\n")
        done = cli.run("sessions", "import", str(export))
        assert done.returncode == 1, name
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, name
        assert reason in done.stderr, (name, done.stderr)
    assert cli.run("sessions", "--all").stdout == ""  # nothing was stored


def test_a_sound_file_still_imports_with_odd_but_valid_values(cli: CliEnv, tmp_path: Path) -> None:
    """What pi itself writes or tolerates goes in: a damaged line pi would skip, a timestamp
    beyond JavaScript's dates (read as unknown), a label without text."""
    sound = tmp_path / "sound.jsonl"
    lines = [
        json.dumps(HEADER),
        json.dumps(_user("a", None)),
        "{half a line",
        json.dumps({**_user("b", "a", "again"), "timestamp": 1e300}),
        json.dumps({"type": "label", "id": "l", "parentId": "b", "timestamp": "x", "targetId": "a"}),
    ]
    sound.write_text("\n".join(lines) + "\n")
    done = cli.run("sessions", "import", str(sound))
    assert done.returncode == 0, done.stderr
    session_id = done.stdout.split()[0]
    shown = cli.run("sessions", "export", session_id, "--format", "pi", "-o", str(tmp_path / "back.jsonl"))
    assert shown.returncode == 0, shown.stderr
    back = [json.loads(line) for line in (tmp_path / "back.jsonl").read_text().splitlines()]
    assert [e.get("id") for e in back[1:]] == ["a", "b", "l"]


def test_a_pipe_or_a_device_is_refused_unread(cli: CliEnv, tmp_path: Path) -> None:
    """A FIFO blocked the import forever (nothing writes to it); ``/dev/zero`` never ends."""
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    done = cli.run("sessions", "import", str(fifo), "/dev/zero", timeout=30)
    assert done.returncode == 1
    reason = "not a regular file (a pipe or a device cannot be imported)"
    assert done.stderr == f"error: {fifo}: {reason}\nerror: /dev/zero: {reason}\n"


def test_a_missing_file_or_a_folder_is_named_as_such(cli: CliEnv, tmp_path: Path) -> None:
    """``/import`` said a missing file was "not a regular file (a pipe or a device cannot be
    imported)", and ``--export`` called a missing file, a folder and a FIFO "not a session file"."""
    from tether.cli.session_files import import_session_file
    from tether.session import SessionManager

    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    reasons = {
        tmp_path / "missing.jsonl": "no such file",
        tmp_path: "a folder, not a session file",
        fifo: "not a regular file (a pipe or a device cannot be imported)",
    }
    with SessionManager.at(tmp_path / "sessions.db") as sessions:  # what /import calls
        for path, reason in reasons.items():
            with pytest.raises(ValueError, match=re.escape(reason)):
                import_session_file(sessions, path, [])
    for path, reason in reasons.items():
        done = cli.run("--export", str(path), str(tmp_path / "page.html"), timeout=30)
        assert (done.returncode, done.stderr) == (1, f"tether: --export {path}: {reason}\n")


def test_a_thinking_level_tether_does_not_know_leaves_the_runs_own(cli: CliEnv, tmp_path: Path) -> None:
    """A ``thinking_level_change`` to a level tether lacks (a newer pi's, a hand edit's) is kept
    in the file, and opening the session applies the run's level instead: it raised ValueError
    from the level's clamping, a traceback on every ``--session``, ``--continue`` and /resume."""
    odd = tmp_path / "odd.jsonl"
    level = {"type": "thinking_level_change", "id": "t", "parentId": None, "timestamp": "x"}
    lines = [HEADER, {**level, "thinkingLevel": "ultra"}, _user("a", "t")]
    odd.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    done = cli.run("sessions", "import", str(odd))
    assert done.returncode == 0, done.stderr
    script = cli.script("answer", [{"content": [{"type": "text", "chunks": ["answered"]}]}])
    ran = cli.run("--session", done.stdout.split()[0], "-p", "go on", script=script)
    assert ran.returncode == 0 and "Traceback" not in ran.stderr, ran.stderr
    assert ran.stdout == "answered\n"
