"""SQLite schema of the session store and its migrations.

The schema version is SQLite's ``user_version``. Each migration runs in its own ``BEGIN
IMMEDIATE`` transaction and re-reads the version inside it, so two processes opening an old
database at once migrate it exactly once; each step is also written to be a no-op when its
effect is already there (``IF NOT EXISTS``, column checks), so a half-known state cannot break
it. Migrations only add: old rows are kept and, where a new column is derived, backfilled.

History:
1. sessions (identity, cwd, title, times, leaf, format version, fork parent) and entries
   (append-only, JSON payload).
2. listing counters on sessions (first prompt, entry/message counts, cost, tokens), backfilled
   from the entries, so ``list`` never scans entries.
3. no change to the tables: the writer locks moved (on Linux) from a lock file per session to
   bytes of one shared file (``sqlite_lock``), which older tethers do not see; the version keeps
   them out (they refuse a newer schema), and the step refuses while one of their per-session
   locks is held (an older tether writing a session now). What it cannot stop: an older tether
   that opened the database before the step and runs on can still take a session afterwards
   through its lock file while a newer one writes it through the shared file.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tether.store.sqlite_lock import held_old_lock
from tether.store.store import SchemaVersionError, SessionDatabaseError, count_entries

Migration = Callable[[sqlite3.Connection], None]


def _v1(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE IF NOT EXISTS sessions (
            id TEXT PRIMARY KEY,
            cwd TEXT NOT NULL,
            title TEXT,
            created INTEGER NOT NULL,
            updated INTEGER NOT NULL,
            leaf_id TEXT,
            version INTEGER NOT NULL,
            parent_session_id TEXT,
            parent_entry_id TEXT
        )"""
    )
    db.execute("CREATE INDEX IF NOT EXISTS sessions_by_updated ON sessions (updated DESC)")
    db.execute("CREATE INDEX IF NOT EXISTS sessions_by_cwd ON sessions (cwd, updated DESC)")
    db.execute(
        """CREATE TABLE IF NOT EXISTS entries (
            seq INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
            id TEXT NOT NULL,
            parent_id TEXT,
            type TEXT NOT NULL,
            created INTEGER NOT NULL,
            payload BLOB NOT NULL,
            UNIQUE (session_id, id)
        )"""
    )
    # Rows with one session_id are kept in rowid (= append) order inside this index.
    db.execute("CREATE INDEX IF NOT EXISTS entries_by_session ON entries (session_id)")


_COUNTER_COLUMNS = {
    "first_prompt": "TEXT",
    "entry_count": "INTEGER NOT NULL DEFAULT 0",
    "message_count": "INTEGER NOT NULL DEFAULT 0",
    "cost": "REAL NOT NULL DEFAULT 0",
    "input_tokens": "INTEGER NOT NULL DEFAULT 0",
    "output_tokens": "INTEGER NOT NULL DEFAULT 0",
    "cache_read_tokens": "INTEGER NOT NULL DEFAULT 0",
    "cache_write_tokens": "INTEGER NOT NULL DEFAULT 0",
}


def _v2(db: sqlite3.Connection) -> None:
    present = {row[1] for row in db.execute("PRAGMA table_info(sessions)")}
    for name, decl in _COUNTER_COLUMNS.items():
        if name not in present:
            db.execute(f"ALTER TABLE sessions ADD COLUMN {name} {decl}")
    session_ids = [row[0] for row in db.execute("SELECT id FROM sessions")]
    for session_id in session_ids:
        payloads = db.execute("SELECT payload FROM entries WHERE session_id = ? ORDER BY seq", (session_id,))
        entries: list[dict[str, Any]] = []
        for (payload,) in payloads:
            value = json.loads(payload)
            if isinstance(value, dict):
                entries.append(value)  # pyright: ignore[reportUnknownArgumentType]
        c = count_entries(entries)
        db.execute(
            """UPDATE sessions SET first_prompt = ?, entry_count = ?, message_count = ?, cost = ?,
               input_tokens = ?, output_tokens = ?, cache_read_tokens = ?, cache_write_tokens = ?
               WHERE id = ?""",
            (
                c.first_prompt,
                c.entries,
                c.messages,
                c.cost,
                c.input_tokens,
                c.output_tokens,
                c.cache_read_tokens,
                c.cache_write_tokens,
                session_id,
            ),
        )


def _v3(db: sqlite3.Connection) -> None:
    """Refuse while an older tether holds a session's own lock file (see the history above)."""
    path = next((row[2] for row in db.execute("PRAGMA database_list") if row[1] == "main"), "")
    if not path:
        return  # a database in memory has no lock folder
    held = held_old_lock(Path(path + ".locks"))
    if held is not None:
        session_id, holder = held
        raise SessionDatabaseError(
            f"{path}: session {session_id!r} is open for writing by an older tether"
            f"{f' ({holder})' if holder else ''}; close it there before this tether upgrades the"
            " session database (older tethers' writer locks are not seen by newer ones)"
        )


MIGRATIONS: tuple[Migration, ...] = (_v1, _v2, _v3)
SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def migrate(db: sqlite3.Connection, target: int = SCHEMA_VERSION) -> int:
    """Bring ``db`` (autocommit connection) up to ``target``; returns the version reached."""
    current = schema_version(db)
    if current > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"session database schema version {current} is newer than this tether supports "
            f"({SCHEMA_VERSION}); upgrade tether"
        )
    while current < target:
        db.execute("BEGIN IMMEDIATE")
        try:
            current = schema_version(db)  # another process may have migrated meanwhile
            if current < target:
                MIGRATIONS[current](db)
                current += 1
                db.execute(f"PRAGMA user_version = {current}")
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # an I/O error rolls back by itself: a ROLLBACK then hid the error
                db.execute("ROLLBACK")
            raise
    return current
