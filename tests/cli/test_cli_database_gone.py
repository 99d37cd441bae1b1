"""The session database deleted, replaced or moved while a run writes to it (here by the run's own
``bash`` tool). SQLite goes on writing to the file it opened: deleted, that file is gone at exit
with everything written since, which the run and the close reported as stored. Real processes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from cli_support import CliEnv, text_reply, tool_reply

pytestmark = pytest.mark.subprocess


def _run_doing(cli: CliEnv, command: str) -> tuple[int, str, str]:
    script = cli.script("s", [tool_reply("bash", {"command": command}), text_reply("done")])
    db = cli.home / "data" / "sessions.db"
    args = ("-p", "tidy up", "-y", "--sandbox", "off", "--database", str(db))
    done = cli.run(*args, script=script, env=cli.env(DB=str(db)))
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("command", ['rm "$DB"', 'cp "$DB" "$DB.new" && mv "$DB.new" "$DB"'])
def test_a_database_deleted_or_replaced_during_a_run_is_one_line(cli: CliEnv, command: str) -> None:
    code, out, err = _run_doing(cli, command)
    assert "Traceback" not in err
    db = cli.home / "data" / "sessions.db"
    assert code == 1, (out, err)
    assert err.endswith(  # once: the close does not say it again
        f"\ntether: {db}: the session database was deleted or replaced while tether had it open; "
        "what tether stored since then is lost with it (keep the file in place, or move it, "
        "while tether runs)\n"
    )
    assert err.count("tether:") == 1, err


def test_a_database_moved_during_a_run_keeps_what_it_stores(cli: CliEnv) -> None:
    """Renamed, the file keeps its name elsewhere and everything written to it: no failure."""
    code, out, err = _run_doing(cli, 'mv "$DB" "$DB.moved"')
    assert (code, out, err) == (0, "done\n", "[tool] bash\n")
    moved = cli.home / "data" / "sessions.db.moved"
    with sqlite3.connect(moved) as db:
        (count,) = db.execute("SELECT count(*) FROM entries WHERE type = 'message'").fetchone()
    db.close()
    assert count == 4  # the prompt, the tool call, its result, the answer
    assert not Path(cli.home / "data" / "sessions.db").exists()
