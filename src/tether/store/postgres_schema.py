"""PostgreSQL schema of the session store and its versioned migrations.

Tables carry a ``tether_`` prefix so the store can share a database (and its ``search_path``)
with an application's own tables. ``tether_migrations`` records each applied version. Pending
migrations run in one transaction that first takes a transaction-level advisory lock, so when
several processes start together against a new database exactly one of them migrates and the
others wait for it, then find nothing to do. PostgreSQL's DDL is transactional: a migration
that fails leaves nothing behind. A database migrated by a newer tether is refused, as for
SQLite.

History:
1. ``tether_sessions`` (identity, cwd, title, times, leaf, format version, fork parent, listing
   counters, current writer) and ``tether_entries`` (append-only, keyed by session and
   sequence, the entry as ``json``).

Why ``json`` and not ``jsonb``: both are queried with the same operators (``payload->'message'
->>'role'``), but ``jsonb`` has to be turned back into text on every read, which made opening a
10,000-message session 3.5 times slower than on SQLite (``json`` is stored as the text it was
given: about 1.5 times); and ``jsonb`` would reorder keys, rewrite numbers (``1e300`` as 301
digits) and refuse a NUL character, where ``json`` gives back the exact bytes tether wrote.
``docs/sessions.md`` shows how to add a ``jsonb`` index for heavy querying.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import psycopg

from tether.store.store import SchemaVersionError

Migration = Callable[[psycopg.Connection[tuple[object, ...]]], None]


def _v1(db: psycopg.Connection[tuple[object, ...]]) -> None:
    db.execute(
        """CREATE TABLE tether_sessions (
            id text PRIMARY KEY,
            cwd text NOT NULL,
            title text,
            created bigint NOT NULL,
            updated bigint NOT NULL,
            leaf_id text,
            version integer NOT NULL,
            parent_session_id text,
            parent_entry_id text,
            first_prompt text,
            entry_count bigint NOT NULL DEFAULT 0,
            message_count bigint NOT NULL DEFAULT 0,
            cost double precision NOT NULL DEFAULT 0,
            input_tokens bigint NOT NULL DEFAULT 0,
            output_tokens bigint NOT NULL DEFAULT 0,
            cache_read_tokens bigint NOT NULL DEFAULT 0,
            cache_write_tokens bigint NOT NULL DEFAULT 0,
            writer_token text,
            writer_host text,
            writer_pid integer
        )"""
    )
    db.execute("CREATE INDEX tether_sessions_by_updated ON tether_sessions (updated DESC)")
    db.execute("CREATE INDEX tether_sessions_by_cwd ON tether_sessions (cwd, updated DESC)")
    db.execute(
        """CREATE TABLE tether_entries (
            session_id text NOT NULL REFERENCES tether_sessions (id) ON DELETE CASCADE,
            seq bigint GENERATED ALWAYS AS IDENTITY,
            id text NOT NULL,
            parent_id text,
            type text NOT NULL,
            created bigint NOT NULL,
            payload json NOT NULL,
            PRIMARY KEY (session_id, seq),
            UNIQUE (session_id, id)
        )"""
    )
    # lz4 compresses transcript JSON nearly as well as the default pglz, in a third of the time
    # (the append of a large tool result), and decompresses faster (the open of a long session).
    try:
        with db.transaction():
            db.execute("ALTER TABLE tether_entries ALTER COLUMN payload SET COMPRESSION lz4")
    except psycopg.errors.FeatureNotSupported:
        pass  # a server built without lz4 keeps pglz


MIGRATIONS: tuple[Migration, ...] = (_v1,)
SCHEMA_VERSION = len(MIGRATIONS)


def lock_key(*parts: str) -> int:
    """A signed 64-bit advisory lock key for ``parts`` (namespaced: ``tether`` comes first)."""
    digest = hashlib.blake2b("\0".join(("tether", *parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def schema_version(db: psycopg.Connection[tuple[object, ...]]) -> int:
    """The applied version, 0 for a database without tether's tables."""
    row = db.execute("SELECT to_regclass('tether_migrations') IS NOT NULL").fetchone()
    if row is None or not row[0]:
        return 0
    row = db.execute("SELECT coalesce(max(version), 0) FROM tether_migrations").fetchone()
    return int(str(row[0])) if row is not None else 0


def migrate(db: psycopg.Connection[tuple[object, ...]], schema: str, target: int = SCHEMA_VERSION) -> int:
    """Bring the database up to ``target`` (``db`` in autocommit mode); returns the version reached.

    ``schema`` (the ``current_schema()`` the tables live in) scopes the lock, so stores in two
    schemas of one database do not wait for each other.
    """
    current = schema_version(db)
    _refuse_newer(current)
    if current >= target:
        return current
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key("migrate", schema),))
        db.execute(
            """CREATE TABLE IF NOT EXISTS tether_migrations (
                version integer PRIMARY KEY,
                applied timestamptz NOT NULL DEFAULT now()
            )"""
        )
        current = schema_version(db)  # another process may have migrated while we waited
        _refuse_newer(current)
        while current < target:
            MIGRATIONS[current](db)
            current += 1
            db.execute("INSERT INTO tether_migrations (version) VALUES (%s)", (current,))
    return current


def _refuse_newer(current: int) -> None:
    if current > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"session database schema version {current} is newer than this tether supports "
            f"({SCHEMA_VERSION}); upgrade tether"
        )
