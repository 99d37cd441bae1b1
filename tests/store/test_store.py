"""The stores: writer lock and counters on every backend; SQLite's schema, migrations and
durability settings (PostgreSQL's are in test_session_postgres.py)."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from session_helpers import assistant, open_when_free, text, user
from tether.session import ReadOnlySessionError, SessionManager
from tether.session.session import now_ms
from tether.store import (
    SchemaVersionError,
    SessionError,
    SessionExistsError,
    SessionLockedError,
    SessionNotFoundError,
    SessionRecord,
    SQLiteStore,
    default_db_path,
)
from tether.store.database import is_postgres_url, open_store, sqlite_path
from tether.store.entries import ENTRY_FORMAT, EntryDict
from tether.store.ids import new_id
from tether.store.paths import redact
from tether.store.sqlite_schema import MIGRATIONS, SCHEMA_VERSION, migrate, schema_version


def test_default_path_follows_tether_home_and_env_override(tether_home: Path, tmp_path: Path) -> None:
    assert default_db_path() == tether_home / "data" / "sessions.db"
    assert default_db_path({"XDG_DATA_HOME": "relative", "HOME": "/h"}) == Path(
        "/h/.local/share/tether/sessions.db"
    )
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg")}
    assert default_db_path(env) == tmp_path / "xdg" / "tether" / "sessions.db"
    assert default_db_path({**env, "TETHER_SESSIONS_DB": "/x/y.db"}) == Path("/x/y.db")
    store = SQLiteStore()
    try:
        assert store.path == tether_home / "data" / "sessions.db" and store.path.exists()
    finally:
        store.close()


def test_database_is_wal_and_at_current_schema(db_path: Path) -> None:
    SQLiteStore(db_path).close()
    db = sqlite3.connect(db_path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert schema_version(db) == SCHEMA_VERSION
    db.close()


def test_counters_and_first_prompt_follow_appends(manager: SessionManager) -> None:
    s = manager.create("/proj")
    s.append_message(user("fix the parser please"))
    s.append_message(assistant(text("ok"), cost=0.25, tokens=100))
    s.append_message(user("and the lexer"))
    s.append_message(assistant(text("done"), cost=0.5, tokens=50))
    rec = manager.list("/proj")[0]
    assert rec.first_prompt == "fix the parser please"
    assert rec.message_count == 4 and rec.entry_count == 4
    assert rec.cost == pytest.approx(0.75)
    assert rec.input_tokens == 150


def test_second_writer_in_the_same_process_is_refused(manager: SessionManager) -> None:
    s = manager.create("/p")
    with pytest.raises(SessionLockedError, match=f"pid {os.getpid()}"):
        manager.open(s.id)
    ro = manager.open(s.id, readonly=True)
    with pytest.raises(ReadOnlySessionError):
        ro.append_message(user("x"))
    s.close()
    with manager.open(s.id) as again:
        again.append_message(user("now I write"))
    with pytest.raises(ReadOnlySessionError):
        s.append_message(user("closed handles cannot write"))


@pytest.mark.subprocess
def test_second_writer_in_another_process_gets_a_clear_error_until_the_first_dies(
    manager: SessionManager, store_location: str
) -> None:
    s = manager.create("/p")
    s.close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, time
                from tether.session import SessionManager
                s = SessionManager.at({store_location!r}).open({s.id!r})
                print("locked", flush=True)
                time.sleep(60)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(SessionLockedError, match=f"by pid {holder.pid} on {socket.gethostname()};"):
            manager.open(s.id)
        with pytest.raises(SessionLockedError):
            manager.delete(s.id)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # The lock died with its holder: the kernel drops a flock at once, PostgreSQL an advisory
    # lock as soon as the server sees the connection closed (a moment later).
    with open_when_free(manager, s.id) as s2:
        s2.append_message(user("mine now"))


def _new_row(cwd: str) -> SessionRecord:
    """A new session's row as ``create_session`` makes it."""
    now = now_ms()
    return SessionRecord(
        new_id(), cwd, None, now, now, None, ENTRY_FORMAT, None, None, None, 0, 0, 0.0, 0, 0, 0, 0
    )


def _message_entry(content: str) -> EntryDict:
    return {
        "type": "message",
        "id": new_id(),
        "parentId": None,
        "timestamp": now_ms(),
        "message": user(content),
    }


def test_a_started_session_is_stored_by_its_first_append_under_a_lease_no_one_else_gets(
    manager: SessionManager,
) -> None:
    """``acquire_new_writer`` (a deferred session's first message): the row goes with the first
    append, also when the writer thread commits several started sessions in one batch, and
    the lease holds from the start."""
    store = manager.store
    rows = [_new_row(f"/p{i}") for i in range(3)]
    leases = [store.acquire_new_writer(row) for row in rows]
    with pytest.raises(SessionError):  # not there yet (SQLite), or locked (PostgreSQL)
        manager.open(rows[0].id)
    first = _message_entry("the first message")
    record = store.append(leases[0], [first], first["id"], first["timestamp"])
    assert (record.id, record.cwd, record.created, record.entry_count) == (
        rows[0].id,
        "/p0",
        rows[0].created,
        1,
    )
    later = [_message_entry(f"queued {i}") for i in (1, 2)]
    queued = [
        store.append_later(lease, [e], e["id"], e["timestamp"])
        for lease, e in zip(leases[1:], later, strict=True)
    ]
    assert queued[-1].wait()
    assert [c.failure(lease) for c, lease in zip(queued, leases[1:], strict=True)] == [None, None]
    for row, entry in zip(rows, [first, *later], strict=True):
        stored = store.get_session(row.id)
        assert (stored.cwd, stored.leaf_id, stored.entry_count, stored.message_count) == (
            row.cwd,
            entry["id"],
            1,
            1,
        )
        with pytest.raises(SessionLockedError):
            manager.open(row.id)
    for lease in leases:
        lease.release()
    with manager.open(rows[1].id) as again:
        assert [m.get("content") for m in again.messages] == ["queued 1"]


def test_a_started_session_whose_id_is_taken_stores_nothing(db_path: Path) -> None:
    """On SQLite the row of a started session is inserted by its first append: an id that is
    taken fails that append (``SessionExistsError``) and leaves the session holding it as it was."""
    with SessionManager.at(db_path) as manager:
        held = manager.create("/mine")
        held.append_message(user("kept"))
        held.close()
        clash = _new_row("/theirs")
        lease = manager.store.acquire_new_writer(replace(clash, id=held.id))
        entry = _message_entry("lost")
        with pytest.raises(SessionExistsError):
            manager.store.append(lease, [entry], entry["id"], entry["timestamp"])
        lease.release()
        with manager.open(held.id, readonly=True) as again:
            assert again.record.cwd == "/mine" and [m.get("content") for m in again.messages] == ["kept"]


def test_unknown_session_is_a_clear_error(manager: SessionManager) -> None:
    with pytest.raises(SessionNotFoundError, match="no session 'nope'"):
        manager.open("nope")


# --- migrations -----------------------------------------------------------------------------------


def _v1_database(path: Path) -> None:
    """A database as the first schema wrote it, with a session and entries in old shapes."""
    db = sqlite3.connect(path, isolation_level=None)
    MIGRATIONS[0](db)
    db.execute("PRAGMA user_version = 1")
    db.execute(
        "INSERT INTO sessions (id, cwd, title, created, updated, leaf_id, version) VALUES"
        " ('S1', '/old', 'old one', 1, 2, 'E3', 1)"
    )
    entries = [
        {"type": "message", "id": "E1", "parentId": None, "timestamp": 1,
         "message": {"role": "user", "content": "hello from the past", "timestamp": 1, "futureKey": [1]}},
        {"type": "message", "id": "E2", "parentId": "E1", "timestamp": 2,
         "message": json.loads(json.dumps(assistant(text("hi"), cost=1.5, tokens=7)))},
        {"type": "hologram", "id": "E3", "parentId": "E2", "timestamp": 3, "beam": True},
    ]  # fmt: skip
    for e in entries:
        db.execute(
            "INSERT INTO entries (session_id, id, parent_id, type, created, payload) VALUES ('S1', ?, ?, ?, ?, ?)",
            (e["id"], e["parentId"], e["type"], e["timestamp"], json.dumps(e).encode()),
        )
    db.close()


def test_migration_keeps_old_data_and_backfills_counters(db_path: Path) -> None:
    _v1_database(db_path)
    with SessionManager.at(db_path) as m:
        rec = m.list()[0]
        assert (rec.id, rec.title, rec.cwd) == ("S1", "old one", "/old")
        assert rec.first_prompt == "hello from the past"
        assert rec.message_count == 2 and rec.entry_count == 3 and rec.cost == 1.5
        s = m.open("S1")
        # Unknown keys and unknown entry types written by others are kept, not fatal.
        assert [msg["role"] for msg in s.messages] == ["user", "assistant"]
        assert s.messages[0]["futureKey"] == [1]  # type: ignore[typeddict-item]
        assert s.entry("E3")["beam"] is True
        s.append_message(user("and from the present"))
        assert s.path()[-2]["type"] == "hologram"


def test_migrations_are_idempotent(db_path: Path) -> None:
    _v1_database(db_path)
    db = sqlite3.connect(db_path, isolation_level=None)
    assert migrate(db) == SCHEMA_VERSION
    assert migrate(db) == SCHEMA_VERSION
    MIGRATIONS[1](db)  # re-running a step whose columns exist changes nothing
    assert db.execute("SELECT message_count FROM sessions").fetchone()[0] == 2
    db.close()


def test_newer_schema_is_refused_with_a_clear_error(db_path: Path) -> None:
    SQLiteStore(db_path).close()
    db = sqlite3.connect(db_path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    with pytest.raises(SchemaVersionError, match="newer than this tether supports"):
        SQLiteStore(db_path)


def test_full_durability_sets_synchronous_full(db_path: Path) -> None:
    store = SQLiteStore(db_path, durability="full")
    try:
        assert store._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # pyright: ignore[reportPrivateUsage]
    finally:
        store.close()


def test_a_released_lease_cannot_write(manager: SessionManager) -> None:
    store = manager.store
    store.create_session("S", "/p", 1, version=1)
    lease = store.acquire_writer("S")
    lease.release()
    assert not lease.active
    entry = {"type": "label", "id": "E", "parentId": None, "timestamp": 1, "targetId": "x", "label": None}
    with pytest.raises(SessionError, match="writer lease of session 'S' was released"):
        store.append(lease, [entry], "E", 2)
    assert store.entries("S") == []


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("these are my notes, not a database " * 100)
    with pytest.raises(SessionError) as info:
        SQLiteStore(bad)
    assert str(info.value).startswith(f"{bad}: not an SQLite database (file is not a database); ")
    assert "choose another file with --database" in str(info.value)
    with pytest.raises(SessionError, match="is a directory, not a session database"):
        SQLiteStore(tmp_path)


def test_a_device_or_a_pipe_is_a_clear_error(tmp_path: Path) -> None:
    """``--database /dev/null`` said only "cannot rollback - no transaction is active": the
    migration's I/O error had rolled its transaction back, and the ROLLBACK after it failed."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path in (Path(os.devnull), fifo):
        with pytest.raises(SessionError) as info:
            SQLiteStore(path)
        assert str(info.value) == (
            f"{path}: is a device, pipe or socket, not a session database; choose a file with --database"
        )


def test_a_migrations_own_error_is_the_one_raised() -> None:
    db = sqlite3.connect(os.devnull, isolation_level=None)  # its writes fail, rolling back by themselves
    try:
        db.execute("PRAGMA journal_mode = WAL")
        with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
            migrate(db)
    finally:
        db.close()


def test_sqlites_in_memory_name_is_a_clear_error_not_a_stray_lock_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sqlite3`` reads ``:memory:`` as a database in memory, which would lose every session at
    exit while the lock files went to ``./:memory:.locks``."""
    monkeypatch.chdir(tmp_path)
    for location in (":memory:", "sqlite::memory:"):
        with pytest.raises(SessionError, match=r"^:memory:: sessions in memory would be gone"):
            SessionManager.at(location)
    assert list(tmp_path.iterdir()) == []


def test_a_dropped_handle_releases_its_lock(manager: SessionManager) -> None:
    session_id = manager.create("/p").id  # never closed, only dropped
    with manager.open(session_id) as s:
        s.append_message(user("the lock was free"))


# --- locations ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("location", "path"),
    [
        ("sqlite:///abs/sessions.db", "/abs/sessions.db"),
        ("sqlite:rel/sessions.db", "rel/sessions.db"),
        ("SQLITE:///with%20space.db", "/with space.db"),
        ("/plain/path.db", "/plain/path.db"),
        ("plain.db", "plain.db"),
    ],
)
def test_sqlite_locations_name_a_file(location: str, path: str) -> None:
    assert sqlite_path(location) == Path(path)
    assert not is_postgres_url(location)


def test_postgres_urls_and_bad_schemes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert is_postgres_url("postgresql://u@h/db") and is_postgres_url("postgres://h/db")
    with pytest.raises(
        SessionError, match=r"unsupported database URL scheme 'mysql' in mysql://u:\*\*\*@h/db"
    ):
        open_store("mysql://u:pw@h/db")
    assert redact("postgresql://u:pw@h:5/db?sslmode=require") == "postgresql://u:***@h:5/db?sslmode=require"
    assert redact("postgresql://h/db?user=u&password=pw&x=1") == "postgresql://h/db?user=u&password=***&x=1"
    monkeypatch.setenv("TETHER_DATABASE_URL", f"sqlite:///{tmp_path}/from-env.db")
    with SessionManager() as manager:
        manager.create("/p")
    assert (tmp_path / "from-env.db").exists()


def test_a_closed_store_says_so(manager: SessionManager) -> None:
    """Used after ``close``, the SQLite store raised sqlite3's own "Cannot operate on a closed
    database.", no ``SessionError`` and no file named."""
    manager.create("/p").close()
    manager.close()
    with pytest.raises(SessionError, match="closed"):
        manager.list()
    with pytest.raises(SessionError, match="closed"):
        manager.create("/p")
    manager.close()  # closing twice is fine
