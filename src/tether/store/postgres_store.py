"""PostgreSQL session store: one database for many processes on many hosts (psycopg 3).

Connections: a ``psycopg_pool`` pool serves reads and writes, each a single statement in
autocommit mode (its own transaction, one round trip), so threads of one process share a few
connections. One more connection per store, the *lock connection*, holds the writer locks.
Writes (appends, leaf moves, deletes, the writer thread's batches) keep one of the pool's
connections out for themselves, the *write connection*, and use it whenever no other thread is
writing on it (a pooled one otherwise), through one cursor kept for them. Each saved about a
quarter of an append's client CPU (P11, paired): the pool hands its connections out in turn, so
each append woke the server process that had been idle the longest; and a new cursor looks up
and makes a dumper for each of the append's 20 parameters and a loader for each of its 18
columns, which a kept one does once.

One writer per session: ``acquire_writer`` takes a session-level advisory lock (key: a 64-bit
hash of schema and session id) on the lock connection. The server drops it when that connection
ends however the holder ended: at once when a process dies (its socket closes), after the TCP
keepalive set below when a whole host vanishes. A second writer anywhere fails at once with
``SessionLockedError`` naming the holder's pid and host, which each writer records on the
session row. In one process, a second handle is refused by the store's own table (advisory locks
nest within a connection, so the server would grant it).

Fencing: taking the lock also writes a fresh random ``writer_token`` on the session row, and
every write of the lease (append, leaf move, delete) checks, in the same statement, that the row
still holds that token *and* that the session's lock is held (``postgres_append.LOCK_HELD``): a
write never lands while the lock is free. When the lock connection died while the process lives
on (a server restart, a network cut), its lock went with it and the write matches no row; the
writer then reconnects, takes the lock again and, if the row still holds its
token, writes (``_take_back``), as often as a restart comes between taking the lock back and
that write: a run rides out the restarts and its paid answer is stored. Only if another writer
took the session meanwhile, or this process cannot take its lock back, does the write fail with
``SessionError``, saying which.

Orphaned leases: a lock freed by a dead connection leaves its token on the row (a clean release
clears it). A new writer that finds one refuses while the holder may still be alive and about to
take it back: a holder on this host whose process is alive (another store of this process: while
its lease is held), or on another host within ``LEASE_GRACE_SECONDS`` of the server's start.

Outages: a statement that fails because the server is unreachable is tried again on a new
connection, with backoff, for up to ``outage_seconds`` (a restart, a failover) before it fails;
one warning is logged when the database goes away, one line when it is back. So is taking a
lease, or taking one back, on a lock connection made again (``_on_locks``).

Appends: one statement (``postgres_append``) inserts the entries (``json``, see ``postgres_schema``; client-assigned
ids; ``ON CONFLICT DO NOTHING``) and moves leaf and counters, so it commits all or nothing. A
statement that fails on a lost connection is retried on another; if the first attempt had
committed, the retry inserts nothing and its counters add nothing (they count only when the
entries were new), so a retry can neither duplicate an entry nor double a counter.

Appends during a run (``append_later``) go to a thread of the store's own (``writer.BatchWriter``),
which commits what has queued up meanwhile in one transaction: a statement per session, sent
together in one round trip (``executemany``, pipelined). On the event loop's thread each append
would wait for the server, holding up every other session in the process: 1,000 sessions' runs
against a local server took 26-29 s instead of 2.3-3 s on SQLite, the loop stalled for 5-7 s at
a time (``bench/p6_stored_runs.py``; 4-5 s with the writer thread).

Following: each append (and leaf move) sends ``NOTIFY "tether.<session id>"`` from the same
statement (``pg_notify`` in its ``RETURNING``), which ``watch`` listens to, from any host, on the
store's one listening connection (``postgres_listen``: a watch per followed session shares it): one
round trip an append, and no notification without its commit. (PostgreSQL serialises the commits
of notifying transactions on one lock, so under many concurrent writers each commit waits for the
previous one's flush; the batch writer commits many sessions' appends in one transaction, which
keeps those commits few.)

Which failures are an outage and how each is said: ``postgres_errors``.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import secrets
import socket
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, LiteralString, TypeVar

import psycopg
from psycopg.abc import Buffer
from psycopg.adapt import Loader
from psycopg.conninfo import make_conninfo
from psycopg.pq import Format, TransactionStatus
from psycopg_pool import ConnectionPool, PoolTimeout

from tether.store.entries import EntryDict
from tether.store.errors import SessionDatabaseUnreachableError
from tether.store.outage import Patience
from tether.store.paths import redact
from tether.store.postgres_append import (
    APPEND,
    APPEND_ONE,
    ENTRY_COLUMNS,
    LOCK_HELD,
    NOTIFY_PREFIX,
    RECORD_COLUMNS,
    append_one,
    append_params,
)
from tether.store.postgres_errors import OUTAGE_LOG, describe, message, unreachable
from tether.store.postgres_listen import ListenWatch, SharedListener
from tether.store.postgres_relock import holds_token, lock_again, pid_alive
from tether.store.postgres_schema import lock_key, migrate
from tether.store.store import (
    SessionError,
    SessionExistsError,
    SessionLockedError,
    SessionNotFoundError,
    SessionRecord,
    StoredEntry,
    WriterLease,
    create_as,
)
from tether.store.writer import Append, BatchWriter, Commit, by_session

Connection = psycopg.Connection[tuple[Any, ...]]
Cursor = psycopg.Cursor[tuple[Any, ...]]
T = TypeVar("T")

CONNECT_TIMEOUT = 10
OUTAGE_SECONDS = 60.0
"""How long a statement keeps trying while the server is unreachable (a restart, a failover)
before it fails: long enough for a restart, bounded so that nothing waits forever."""
LEASE_GRACE_SECONDS = 30.0
"""After a server start, how long an orphaned lease of another host stays its holder's (see the
module docstring): the holder takes it back at its next write, within its retry delay."""
LOCK_CONNECTION_SETTINGS = (
    # The lock connection sits idle for as long as a session is open: no idle timeout may end it,
    # and the server probes it so the locks of a host that vanished free up in about a minute.
    "SET idle_session_timeout = 0; SET idle_in_transaction_session_timeout = 0; "
    "SET tcp_keepalives_idle = 30; SET tcp_keepalives_interval = 10; SET tcp_keepalives_count = 3"
)

_LIVE_TOKENS: set[str] = set()
"""The writer tokens held by the stores of this process (for ``_holder_alive``)."""


class _JsonBytes(Loader):
    """A json value as the bytes of its text, parsed later (lazily) by the entry tree."""

    format = Format.BINARY

    def load(self, data: Buffer) -> bytes:
        return bytes(data)


def _configure(db: Connection) -> None:
    db.adapters.register_loader("json", _JsonBytes)


BackendId = tuple[int, Any]
"""A server backend, for good: its pid and its start time (a pid alone is reused)."""


class AdvisoryLease:
    """A session-level advisory lock on the store's lock connection, plus the fencing token."""

    def __init__(
        self, store: PostgresStore, session_id: str, key: int, token: str, db: Connection, backend: BackendId
    ) -> None:
        self._store = store
        self._session_id = session_id
        self.key = key
        self.token = token
        self.db = db
        self.backend = backend
        """The lock connection's backend the lock was taken on: when it is no longer the store's
        current one, the lock died with it and is taken back (``_relock``)."""
        self.released = False
        self.lost = False
        """Another writer took the session over: no write of this lease can succeed again."""

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def active(self) -> bool:
        # A dead lock connection does not end the lease: its next write takes it back if it can.
        return not self.released and not self.lost

    def owned_by(self, store: PostgresStore) -> bool:
        return self._store is store and not self.released

    def release(self) -> None:
        self._store.release_writer(self, wait=True)

    def __del__(self) -> None:
        # A session handle dropped without close() must not keep its session locked; the
        # collector may run this inside the store's own critical section, so it never blocks.
        with contextlib.suppress(Exception):
            self._store.release_writer(self, wait=False)


KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3}
"""A dead peer noticed in about 25 s (10 s idle, then 3 probes 5 s apart)."""


class PostgresStore:
    """``SessionStore`` on a PostgreSQL database (see the module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        min_connections: int = 1,
        max_connections: int = 8,
        outage_seconds: float = OUTAGE_SECONDS,
        patient: bool = False,
    ) -> None:
        self.url = url
        self.where = redact(url)
        self.outage_seconds = outage_seconds
        self._patience = Patience(self.where, outage_seconds, describe)
        self._lock_backend: BackendId = (0, None)
        self._host = socket.gethostname()
        self._lock_mutex = threading.Lock()
        # Weak: a lease dropped with its session handle must be collected, and then unlock (__del__).
        self._held: weakref.WeakValueDictionary[str, AdvisoryLease] = weakref.WeakValueDictionary()
        self._unlock_later: list[AdvisoryLease] = []
        self._writer: BatchWriter | None = None
        self._write_cursor: Cursor | None = None
        """The write connection's cursor (see the module docstring); under ``_write_mutex``."""
        self._write_mutex = threading.Lock()
        # The opening reports a bad URL or password as it is (an unreachable server too, unless
        # ``patient``: see ``open_store``); a patient one waits out a server that goes away at any
        # step of it (a crash between connecting and migrating), not only while connecting.
        try:
            self._lock_db, self.schema = (
                self._patience.run(self._open, unreachable) if patient else self._open()
            )
        except psycopg.Error as err:
            raise SessionError(f"cannot open the session database {self.where}: {message(err)}") from None
        try:
            self._pool: ConnectionPool[Connection] = ConnectionPool(
                url,
                min_size=min_connections,
                max_size=max_connections,
                kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT},
                configure=_configure,
                open=True,
                name="tether-sessions",
            )
            OUTAGE_LOG.install(self.where)
            self._listener = SharedListener(self.reconnect, self.where, outage_seconds)
        except psycopg.Error as err:
            self._lock_db.close()
            raise SessionError(f"cannot open the session database {self.where}: {message(err)}") from None
        except BaseException:
            self._lock_db.close()
            raise

    # -- sessions --------------------------------------------------------------------------------

    def create_session(
        self,
        session_id: str,
        cwd: str,
        created: int,
        *,
        parent_session_id: str | None = None,
        parent_entry_id: str | None = None,
        title: str | None = None,
        version: int,
    ) -> SessionRecord:
        attempt = itertools.count()
        mine = (cwd, created, parent_session_id, parent_entry_id)

        def work(db: Connection) -> SessionRecord:
            retried = next(attempt) > 0
            row = db.execute(
                f"""INSERT INTO tether_sessions (id, cwd, title, created, updated, version,
                    parent_session_id, parent_entry_id) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
                    ON CONFLICT (id) DO NOTHING RETURNING {RECORD_COLUMNS}""",
                (session_id, cwd, title, created, created, version, parent_session_id, parent_entry_id),
            ).fetchone()
            if row is not None:
                return SessionRecord(*row)
            existing = _get(db, session_id)
            # A retry after a commit whose answer was lost finds the row it wrote itself.
            if retried and (existing.cwd, existing.created, *_parent(existing)) == mine:
                return existing
            raise SessionExistsError(session_id)

        return self._run(work)

    def get_session(self, session_id: str) -> SessionRecord:
        return self._run(lambda db: _get(db, session_id))

    def acquire_new_writer(self, record: SessionRecord) -> AdvisoryLease:
        """The row now, then the lease: a lease is a token in the row (see ``_try_lock``). A start
        again after a lease that failed finds the row it made itself (same folder, time, parent)."""
        try:
            create_as(self, record)
        except SessionExistsError:
            existing = self.get_session(record.id)
            if (existing.cwd, existing.created, *_parent(existing)) != (
                record.cwd,
                record.created,
                *_parent(record),
            ):
                raise
        return self.acquire_writer(record.id)

    def list_sessions(self, cwd: str | None = None, limit: int | None = None) -> list[SessionRecord]:
        query = f"SELECT {RECORD_COLUMNS} FROM tether_sessions"
        params: list[object] = []
        if cwd is not None:
            query += " WHERE cwd = %s"
            params.append(cwd)
        # Within one millisecond, the session with the newest entry counts as the newer one.
        query += (
            " ORDER BY updated DESC, (SELECT max(seq) FROM tether_entries"
            " WHERE tether_entries.session_id = tether_sessions.id) DESC NULLS LAST, id DESC"
        )
        if limit is not None:
            query += " LIMIT %s"
            params.append(limit)
        return self._run(lambda db: [SessionRecord(*row) for row in db.execute(query, params)])

    def workspaces(self, limit: int) -> list[str]:
        query = "SELECT cwd FROM tether_sessions GROUP BY cwd ORDER BY max(updated) DESC LIMIT %s"
        return self._run(lambda db: [row[0] for row in db.execute(query, (limit,))])

    def delete_session(self, lease: WriterLease) -> None:
        held = self._check(lease)

        def work(cursor: Cursor) -> int:
            return cursor.execute(
                f"DELETE FROM tether_sessions WHERE id = %s AND writer_token = %s AND {LOCK_HELD}",
                (held.session_id, held.token, held.key),
            ).rowcount

        if not self._fenced(held, work):
            raise self._lost(held)

    # -- writer lock -----------------------------------------------------------------------------

    def acquire_writer(self, session_id: str) -> AdvisoryLease:
        with self._lock_mutex:
            self._unlock_pending()
            if session_id in self._held:
                raise SessionLockedError(session_id, f"pid {os.getpid()} on {self._host}")
            lease = self._on_locks(lambda: self._try_lock(session_id))
            self._held[session_id] = lease
            _LIVE_TOKENS.add(lease.token)
            return lease

    def release_writer(self, lease: AdvisoryLease, *, wait: bool) -> None:
        """Unlock; with ``wait=False`` (the collector), defer to the next lock call if busy."""
        if lease.released:
            return
        lease.released = True
        _LIVE_TOKENS.discard(lease.token)
        if self._held.get(lease.session_id) is lease:
            del self._held[lease.session_id]
        if not self._lock_mutex.acquire(blocking=wait):
            self._unlock_later.append(lease)
            return
        try:
            self._unlock(lease)
            self._unlock_pending()
        finally:
            self._lock_mutex.release()

    # -- entries ---------------------------------------------------------------------------------

    def append(
        self, lease: WriterLease, entries: Sequence[EntryDict], leaf_id: str, updated: int
    ) -> SessionRecord:
        held = self._check(lease)
        fence = (held.session_id, held.token, held.key)
        if len(entries) == 1:  # plain parameters: a fraction of the arrays' CPU (postgres_append)
            statement, params = APPEND_ONE, append_one(*fence, entries[0], leaf_id, updated)
        else:
            statement, params = APPEND, append_params(*fence, entries, leaf_id, updated)

        def work(cursor: Cursor) -> tuple[Any, ...] | None:
            return cursor.execute(statement, params).fetchone()

        row = self._fenced(held, work)
        if row is None:
            raise self._lost(held)
        return SessionRecord(*row[:-1])  # the last column: pg_notify's

    def append_later(
        self, lease: WriterLease, entries: Sequence[EntryDict], leaf_id: str, updated: int
    ) -> Commit:
        """``append`` by the store's writer thread, in one transaction with the appends queued
        with it (see the module docstring); the ``Commit`` returned is done once that transaction
        ended."""
        self._check(lease)
        if self._writer is None:
            self._writer = BatchWriter(self._append_batch, self._append_one, "tether-postgres")
        return self._writer.submit(lease, entries, leaf_id, updated)

    def _append_batch(self, batch: Sequence[Append]) -> None:
        """Every append of ``batch`` in one transaction, one ``APPEND`` per session (its appends'
        entries in order, counters summed, the last one's leaf, its notification), all sent at
        once. A session whose lease was lost matches no row: the whole batch is rolled back and
        the writer tries each append alone, so only that one fails (or takes its lease back)."""
        for append in batch:
            self._check(append.lease)
        groups = by_session(batch)
        params: list[dict[str, Any]] = []
        for group in groups:
            held = self._check(group.lease)
            fence = (held.session_id, held.token, held.key)  # several sessions': ``encode_entry``'s many
            params.append(
                append_params(*fence, group.entries, group.leaf_id, group.updated, many=len(groups) > 1)
            )

        def work(cursor: Cursor) -> None:
            with cursor.connection.transaction():
                cursor.executemany(APPEND, params, returning=True)
                while True:
                    if cursor.fetchone() is None:
                        raise _FencedOff
                    if not cursor.nextset():
                        break

        self._write(work)

    def _append_one(self, append: Append) -> None:
        self.append(*append)

    def set_leaf(self, lease: WriterLease, leaf_id: str | None, updated: int) -> SessionRecord:
        held = self._check(lease)
        channel = NOTIFY_PREFIX + held.session_id

        def work(cursor: Cursor) -> tuple[Any, ...] | None:
            # A follower's view moves with the leaf (a branch), as on an append.
            return cursor.execute(
                f"""UPDATE tether_sessions SET leaf_id = %s, updated = greatest(updated, %s)
                    WHERE id = %s AND writer_token = %s AND {LOCK_HELD}
                    RETURNING {RECORD_COLUMNS}, pg_notify(%s, '')""",
                (leaf_id, updated, held.session_id, held.token, held.key, channel),
            ).fetchone()

        row = self._fenced(held, work)
        if row is None:
            raise self._lost(held)
        return SessionRecord(*row[:-1])

    def entries(self, session_id: str) -> list[StoredEntry]:
        return self._entries(
            f"SELECT {ENTRY_COLUMNS} FROM tether_entries WHERE session_id = %s ORDER BY seq", (session_id,)
        )

    def entries_after(self, session_id: str, entry_id: str | None) -> list[StoredEntry]:
        if entry_id is None:
            return self.entries(session_id)
        return self._entries(
            f"""SELECT {ENTRY_COLUMNS} FROM tether_entries WHERE session_id = %s AND seq >
                (SELECT seq FROM tether_entries WHERE session_id = %s AND id = %s) ORDER BY seq""",
            (session_id, session_id, entry_id),
        )

    def newest_entry_id(self, session_id: str) -> str | None:
        row = self._run(
            lambda db: db.execute(
                "SELECT max(id) FROM tether_entries WHERE session_id = %s", (session_id,)
            ).fetchone()
        )
        return None if row is None else row[0]

    def watch(self, session_id: str) -> ListenWatch:
        self.get_session(session_id)
        return self._listener.watch(NOTIFY_PREFIX + session_id)

    def check_present(self) -> None:
        """Nothing to check: a server's database cannot be deleted under an open connection
        without the next query failing (``SessionDatabaseUnreachableError``)."""

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()  # what is queued is committed first
        self._listener.close()
        with self._lock_mutex:
            for lease in list(self._held.values()):
                lease.released = True
                _LIVE_TOKENS.discard(lease.token)
                self._unlock(lease)
            self._held.clear()
            self._unlock_later.clear()
            self._lock_db.close()
        with self._write_mutex:
            if self._write_cursor is not None:
                self._pool.putconn(self._write_cursor.connection)
                self._write_cursor = None
        self._pool.close()

    # -- internals -------------------------------------------------------------------------------

    def connect(self) -> Connection:
        """A new connection of its own (autocommit); ``SessionError`` saying why if impossible
        (``SessionDatabaseUnreachableError`` if the server may yet answer: ``unreachable``).
        TCP keepalives: the lock and listening connections sit idle for long stretches, and a host
        that vanishes without closing them would otherwise leave them waiting for good."""
        try:
            return psycopg.connect(
                make_conninfo(self.url, **KEEPALIVES), autocommit=True, connect_timeout=CONNECT_TIMEOUT
            )
        except psycopg.Error as err:
            kind = SessionDatabaseUnreachableError if unreachable(err) else SessionError
            raise kind(f"cannot open the session database {self.where}: {message(err)}") from None

    def reconnect(self) -> Connection:
        """``connect``, tried again while the server is unreachable (up to ``outage_seconds``)."""
        return self._patience.run(self.connect, unreachable)

    def _open(self) -> tuple[Connection, str]:
        """One attempt at opening: the lock connection, its schema, migrated. A psycopg error is
        left as it is, for the caller's patience to tell an outage from a mistake."""
        db = self._connect_locks()
        try:
            row = db.execute("SELECT current_schema()").fetchone()
            if row is None or row[0] is None:
                raise SessionError(
                    f"session database {self.where}: no schema to create tables in (search_path)"
                )
            migrate(db, row[0])
        except BaseException:
            db.close()
            raise
        return db, row[0]

    def _connect_locks(self) -> Connection:
        """A new lock connection; a psycopg error is left as it is (see ``_open``)."""
        db = self.connect()
        try:
            db.execute(LOCK_CONNECTION_SETTINGS)
            row = db.execute(
                "SELECT pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()"
            ).fetchone()
        except BaseException:
            db.close()
            raise
        assert row is not None
        self._lock_backend = (row[0], row[1])
        return db

    def _on_locks(self, work: Callable[[], T]) -> T:
        """``work()`` on the lock connection, made again first when it is lost (and again each
        time it is lost, while the server is unreachable: up to ``outage_seconds``, as a write).
        Not just once: a restart can come just after the connection is made again, and ``work``
        then finds it dead too. A ``SessionError`` naming the database if it fails. Caller holds
        the lock mutex."""

        def attempt() -> T:
            if self._lock_db.closed:
                self._reconnect_locks()
            return work()

        return self._patiently(attempt)

    def _reconnect_locks(self) -> None:
        """A new lock connection (the old one is dead), then every held lease taken back on it
        (those another writer took meanwhile are marked lost). One attempt: ``_on_locks`` rides
        out an outage. Caller holds the lock mutex."""
        self._lock_db.close()
        self._lock_db = self._connect_locks()
        for lease in list(self._held.values()):
            with contextlib.suppress(psycopg.Error):
                self._relock(lease)

    def _relock(self, lease: AdvisoryLease) -> bool:
        """Take ``lease``'s lock again on the current lock connection; True if it is held again
        (the row still holds its token), else it is lost. Caller holds the lock mutex."""
        db = self._lock_db
        if lease.backend == self._lock_backend:
            return True
        if not lock_again(db, lease.key, lease.session_id, lease.token):
            lease.lost = True
            return False
        kept = db.execute(
            "UPDATE tether_sessions SET writer_host = %s, writer_pid = %s WHERE id = %s AND writer_token = %s",
            (self._host, os.getpid(), lease.session_id, lease.token),
        ).rowcount
        if not kept:
            db.execute("SELECT pg_advisory_unlock(%s)", (lease.key,))
            lease.lost = True
            return False
        lease.db, lease.backend = db, self._lock_backend
        return True

    def _take_back(self, lease: AdvisoryLease) -> bool:
        """After a fenced write matched no row: True if the lease is held now, its lock on the live
        lock connection (taken back if it had died with its connection) and its token on the row
        (``_fenced`` writes again while this says so), False if the lease is lost; a
        ``SessionError`` naming the database if the server stays away (``_on_locks``)."""
        with self._lock_mutex:
            if lease.released or lease.lost:
                return False
            if lease.backend == self._lock_backend and not self._lock_db.closed:
                try:  # is the lock connection we think holds the lease alive?
                    # It is, so the lock is held (another thread took it back after this write's
                    # fence found it gone); the token may be gone (deleted, taken over).
                    return holds_token(self._lock_db, lease.session_id, lease.token)
                except psycopg.Error:
                    pass
            if lease.backend == self._lock_backend:
                self._lock_db.close()  # it held the lease and failed: a new one takes it back
            return self._on_locks(lambda: self._relock(lease))

    def _fenced(self, lease: AdvisoryLease, work: Callable[[Cursor], T]) -> T:
        """A fenced write; when it matched nothing, again each time the lease is taken back (a
        falsy result: the lease is lost). Not just once: a restart between a take-back and the
        write after it (a worker's first write after a blip, just as an outage began) leaves
        that write, ridden out, with its lock gone again; giving up called the lease taken over,
        by this very process. Each further round follows a restart the take-back waited out."""
        result = self._write(work)
        while not result and self._take_back(lease):
            result = self._write(work)
        return result

    def _run(self, work: Callable[[Connection], T]) -> T:
        """``work`` on a pooled connection; again on another while the server is unreachable."""

        def attempt() -> T:
            with self._pool.connection(timeout=CONNECT_TIMEOUT) as db:
                return work(db)

        return self._patiently(attempt)

    def _write(self, work: Callable[[Cursor], T]) -> T:
        """``work`` with the write connection's cursor, or a pooled connection's while another
        thread writes on it; again on a new one while the server is unreachable."""
        if not self._write_mutex.acquire(blocking=False):

            def pooled(db: Connection) -> T:
                with db.cursor() as cursor:
                    return work(cursor)

            return self._run(pooled)

        def attempt() -> T:
            cursor = self._write_cursor
            if cursor is None:
                cursor = self._write_cursor = self._pool.getconn(timeout=CONNECT_TIMEOUT).cursor()
            try:
                return work(cursor)
            except BaseException:
                # Lost, or left in a transaction: the pool rolls it back or replaces it.
                db = cursor.connection
                if db.broken or db.closed or db.pgconn.transaction_status != TransactionStatus.IDLE:
                    self._write_cursor = None
                    self._pool.putconn(db)
                raise

        try:
            return self._patiently(attempt)
        finally:
            self._write_mutex.release()

    def _patiently(self, attempt: Callable[[], T]) -> T:
        """``attempt()``, again while the server is unreachable; a ``SessionError`` if it fails."""
        try:
            result = self._patience.run(attempt, unreachable)
        except (psycopg.Error, PoolTimeout) as err:
            raise SessionError(f"session database {self.where}: {message(err)}") from None
        OUTAGE_LOG.recovered()  # the pool's next connection error is a new outage's first line
        return result

    def _entries(self, query: LiteralString, params: tuple[str, ...]) -> list[StoredEntry]:
        def work(db: Connection) -> list[StoredEntry]:
            with db.cursor(binary=True) as cursor:
                return list(map(StoredEntry._make, cursor.execute(query, params)))

        return self._run(work)

    def _try_lock(self, session_id: str) -> AdvisoryLease:
        """One attempt on the lock connection (see ``_on_locks``); caller holds the mutex."""
        db = self._lock_db
        key = lock_key("session", self.schema, session_id)
        row = db.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
        holder = db.execute(
            """SELECT writer_token, writer_pid, writer_host,
                      extract(epoch FROM now() - pg_postmaster_start_time())::float8
               FROM tether_sessions WHERE id = %s""",
            (session_id,),
        ).fetchone()
        locked = row is None or not row[0]
        if holder is None:
            if not locked:
                db.execute("SELECT pg_advisory_unlock(%s)", (key,))
            raise SessionNotFoundError(session_id)  # or locked by its deleter
        token, pid, host, uptime = holder
        if locked or (token is not None and self._holder_alive(token, pid, host, uptime)):
            if not locked:
                db.execute("SELECT pg_advisory_unlock(%s)", (key,))
            raise SessionLockedError(session_id, f"pid {pid} on {host}" if pid else None)
        token = secrets.token_hex(16)
        taken = db.execute(
            "UPDATE tether_sessions SET writer_token = %s, writer_host = %s, writer_pid = %s WHERE id = %s",
            (token, self._host, os.getpid(), session_id),
        ).rowcount
        if not taken:
            db.execute("SELECT pg_advisory_unlock(%s)", (key,))
            raise SessionNotFoundError(session_id)
        return AdvisoryLease(self, session_id, key, token, db, self._lock_backend)

    def _holder_alive(self, token: str, pid: int | None, host: str | None, uptime: float) -> bool:
        """Whether the holder of an orphaned lease (its lock gone with its connection) may still
        be alive and about to take it back (see the module docstring)."""
        if host == self._host and pid is not None:
            if pid == os.getpid():
                return token in _LIVE_TOKENS
            return pid_alive(pid)
        return uptime < LEASE_GRACE_SECONDS

    def _unlock(self, lease: AdvisoryLease) -> None:
        """Clear the lease's token (a clean release leaves no orphan) and unlock."""
        if lease.db is self._lock_db and not lease.db.closed and lease.backend == self._lock_backend:
            with contextlib.suppress(psycopg.Error):
                lease.db.execute(
                    "UPDATE tether_sessions SET writer_token = NULL WHERE id = %s AND writer_token = %s",
                    (lease.session_id, lease.token),
                )
                lease.db.execute("SELECT pg_advisory_unlock(%s)", (lease.key,))

    def _unlock_pending(self) -> None:
        while self._unlock_later:
            self._unlock(self._unlock_later.pop())

    def _check(self, lease: WriterLease) -> AdvisoryLease:
        if not (isinstance(lease, AdvisoryLease) and lease.owned_by(self)):
            raise SessionError(
                f"the writer lease of session {lease.session_id!r} was released or belongs to another store"
            )
        return lease

    def _lost(self, lease: AdvisoryLease) -> SessionError:
        """Why a fenced write matched no row: the session is gone, another writer took it over
        (its token on the row), or this process could not take its lease back (the lease's token
        still there; the row's pid cannot tell: a take-back writes it too)."""
        lease.lost = True
        row = self._run(
            lambda db: db.execute(
                "SELECT writer_token, writer_pid, writer_host FROM tether_sessions WHERE id = %s",
                (lease.session_id,),
            ).fetchone()
        )
        if row is None:
            return SessionNotFoundError(lease.session_id)
        token, pid, host = row
        if token == lease.token:
            return SessionError(
                f"session {lease.session_id!r}: this process could not take its writer lease back "
                "after losing its database connection; reopen it"
            )
        return SessionError(
            f"session {lease.session_id!r} was taken over by pid {pid} on {host} after this "
            "process lost its database connection; reopen it"
        )


class _FencedOff(Exception):
    """A batched append matched no session row (deleted, or its writer lost the lease)."""


def _get(db: Connection, session_id: str) -> SessionRecord:
    row = db.execute(f"SELECT {RECORD_COLUMNS} FROM tether_sessions WHERE id = %s", (session_id,)).fetchone()
    if row is None:
        raise SessionNotFoundError(session_id)
    return SessionRecord(*row)


def _parent(record: SessionRecord) -> tuple[str | None, str | None]:
    return record.parent_session_id, record.parent_entry_id
