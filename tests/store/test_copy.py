"""Copying sessions between stores: SQLite → PostgreSQL → SQLite keeps ids, trees, leaves, times,
titles, fork links and counters; a second run changes nothing; a grown source is caught up; a
target that went its own way is left alone; and the same through ``tether sessions copy``, whose
store comes from ``--database``, ``TETHER_DATABASE_URL`` or the ``database`` setting."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jiter

from narrowing import content_of
from session_helpers import MODEL, assistant, call, result, text, user
from tether.session import SessionManager
from tether.store import SessionStore
from tether.store.copy import copy_sessions


def _rich_sessions(manager: SessionManager) -> list[str]:
    s = manager.create("/p", model=MODEL, system_prompt="sys", title="first")
    q = s.append_message(user("héllo ✓ \u2028 and a NUL \x00", futureKey={"x": [1.5, 2]}))
    s.append_message(assistant(call("c1", path="a.txt"), cost=0.125, tokens=40))
    s.append_message(result("c1", "contents\n\ttabbed"))
    s.append_message(assistant(text("done"), cost=0.25, tokens=10))
    s.label(q, "start")
    s.branch(q)
    s.append_message(assistant(text("alternative")))
    s.append_compaction("summary so far", None, 1234)
    s.rename("renamed")
    s.append_custom("acme:blob", {"nested": [None, True, 0.1]})
    s.close()
    fork = manager.fork(s.id, q)
    fork.append_message(assistant(text("in the fork")))
    fork.close()
    empty = manager.create("/q")
    empty.close()
    return [s.id, fork.id, empty.id]


def _snapshot(store: SessionStore) -> dict[str, object]:
    """Everything a copy must keep, per session: the row and each entry (id, parent, type, value)."""
    return {
        r.id: (
            r,
            [(e.id, e.parent_id, e.type, e.created, jiter.from_json(e.payload)) for e in store.entries(r.id)],
        )
        for r in store.list_sessions()
    }


def test_sqlite_to_postgres_and_back_keeps_everything(tmp_path: Path, postgres_url: str) -> None:
    with SessionManager.at(tmp_path / "a.db") as source:
        ids = _rich_sessions(source)
        original = _snapshot(source.store)
        with SessionManager.at(postgres_url) as middle, SessionManager.at(tmp_path / "b.db") as back:
            report = copy_sessions(source.store, middle.store)
            assert (report.sessions, report.skipped) == (3, [])
            assert report.entries == sum(len(entries) for _, entries in original.values())  # type: ignore[misc]
            assert _snapshot(middle.store) == original
            assert copy_sessions(middle.store, back.store).entries == report.entries
            assert _snapshot(back.store) == original
            # Opened from the copy, a session is the same session.
            for session_id in ids:
                assert (
                    back.open(session_id, readonly=True).messages
                    == source.open(session_id, readonly=True).messages
                )

            again = copy_sessions(source.store, middle.store)
            assert (again.sessions, again.entries, again.skipped) == (3, 0, [])
            assert _snapshot(middle.store) == original


def test_a_grown_source_is_caught_up_and_a_diverged_target_left_alone(
    tmp_path: Path, postgres_url: str
) -> None:
    with SessionManager.at(tmp_path / "a.db") as source, SessionManager.at(postgres_url) as target:
        grows = source.create("/p")
        grows.append_message(user("one"))
        diverges = source.create("/p")
        diverges.append_message(user("one"))
        assert copy_sessions(source.store, target.store).entries == 2
        grows.append_message(user("two"))
        grows.close()
        with target.open(diverges.id) as elsewhere:
            elsewhere.append_message(user("written in the target"))
        report = copy_sessions(source.store, target.store)
        assert (report.sessions, report.entries) == (1, 1)
        assert report.skipped == [(diverges.id, "the target's copy has entries the source lacks")]
        assert [content_of(m) for m in target.open(grows.id, readonly=True).messages] == ["one", "two"]
        assert [content_of(m) for m in target.open(diverges.id, readonly=True).messages] == [
            "one",
            "written in the target",
        ]


def test_the_copy_command(tmp_path: Path, postgres_url: str) -> None:
    with SessionManager.at(tmp_path / "a.db") as source:
        ids = _rich_sessions(source)
    command = [sys.executable, "-m", "tether.cli", "sessions", "--database", str(tmp_path / "a.db"), "copy"]
    env = {**os.environ, "TETHER_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [*command, ids[0], "--to", postgres_url], capture_output=True, text=True, env=env, check=False
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"copied 1 sessions (11 new entries) to {postgres_url}\n"
    with SessionManager.at(postgres_url) as target:
        assert [r.id for r in target.list()] == [ids[0]]
    # The store to list: from the environment, else from the "database" setting.
    listing = [sys.executable, "-m", "tether.cli", "sessions", "--all"]
    from_env = subprocess.run(
        listing, capture_output=True, text=True, env={**env, "TETHER_DATABASE_URL": postgres_url}, check=False
    )
    assert ids[0] in from_env.stdout and ids[1] not in from_env.stdout
    (tmp_path / "home" / "config").mkdir(parents=True)
    (tmp_path / "home" / "config" / "settings.json").write_text(json.dumps({"database": postgres_url}))
    from_settings = subprocess.run(listing, capture_output=True, text=True, env=env, check=False)
    assert from_settings.stdout == from_env.stdout
    refused = subprocess.run(
        [*command, "--to", "mysql://x/y"], capture_output=True, text=True, env=env, check=False
    )
    assert refused.returncode == 1
    assert refused.stderr.startswith("tether: unsupported database URL scheme 'mysql'")
