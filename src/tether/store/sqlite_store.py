"""SQLite session store: one WAL database file, one writer per session through a kernel lock.

Durability: WAL with ``synchronous=NORMAL`` by default. Every commit is in the WAL before
``append`` returns, so a crash of the process (SIGKILL included) never loses a committed append
and never leaves a partial one; only a power loss or kernel crash can roll back the last few
commits (never corrupt). ``durability="full"`` fsyncs each commit for that case, at about a
millisecond per append.

One writer per session: SQLite locks the whole file, not a session, and only for the length of
a transaction, so the per-session writer lock is a kernel lock beside the database
(``sqlite_lock``): on Linux one byte per session of one shared file, ``<db>.locks/.writers``
(an open-file-description range lock), elsewhere an exclusive ``flock`` on
``<db>.locks/<session id>.lock``. The kernel drops it when the holder exits however it exits,
so no stale lease outlives a crashed process, and a second writer (another process, or a second
handle in this one) fails at once with ``SessionLockedError`` naming the holder's pid and host.
POSIX only, like the fcntl module, and one host only: file locks over a network filesystem are
not to be trusted (the PostgreSQL store serves several hosts).

Following: SQLite has no notifications, so ``watch`` polls ``PRAGMA data_version`` on a
connection of its own, which changes whenever another connection commits.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import Literal

from tether.own_files import create_own_file
from tether.store import sqlite_lock
from tether.store.entries import EntryDict, encode_entry
from tether.store.paths import default_db_path
from tether.store.sqlite_lock import WriterLock, lock_session, session_lock_path
from tether.store.sqlite_schema import migrate
from tether.store.store import (
    SessionDatabaseError,
    SessionError,
    SessionExistsError,
    SessionNotFoundError,
    SessionRecord,
    StoredEntry,
    WriterLease,
    count_entries,
)
from tether.store.writer import Append, BatchWriter, Commit, by_session

Durability = Literal["normal", "full"]
MMAP_BYTES = 256 * 1024 * 1024
WATCH_POLL_SECONDS = 0.05
"""How often a watch reads ``data_version``: a follower sees an append within this, at the cost
of one tiny query per poll."""

_RECORD_COLUMNS = (
    "id, cwd, title, created, updated, leaf_id, version, parent_session_id, parent_entry_id, "
    "first_prompt, entry_count, message_count, cost, input_tokens, output_tokens, "
    "cache_read_tokens, cache_write_tokens"
)
_ENTRY_COLUMNS = "id, parent_id, type, created, CAST(payload AS BLOB)"
"""An entry as read: its payload as bytes even when a hand edit in sqlite3 made it text (``SET
payload = replace(payload, 'sk-…', '…')`` turns every row it touches to TEXT), which the JSON
reader and the export's writer refused with a TypeError, a traceback for every session touched."""


_INSERT_ENTRY = (
    "INSERT INTO entries (session_id, id, parent_id, type, created, payload) VALUES (?, ?, ?, ?, ?, ?)"
)
_UPDATE_COUNTERS = """UPDATE sessions SET leaf_id = ?, updated = max(updated, ?),
    title = coalesce(?, title), first_prompt = coalesce(first_prompt, ?),
    entry_count = entry_count + ?, message_count = message_count + ?,
    cost = cost + ?, input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,
    cache_read_tokens = cache_read_tokens + ?, cache_write_tokens = cache_write_tokens + ?
    WHERE id = ?"""

ROWS_PER_STATEMENT = 256
"""At most this many rows in one batched insert or update (``_append_batch``): fewer statements
for a batch, and few distinct statement texts (the chunk sizes are powers of two) for the
connection to prepare and keep."""
_ENTRY_WIDTH, _COUNTER_WIDTH, _SESSION_WIDTH = 6, 12, 8
"""Parameters a row of ``_INSERT_ENTRY``, ``_UPDATE_COUNTERS`` and ``_INSERT_SESSION``."""


class FileLease:
    """A session's writer lock (``sqlite_lock``), held until released or dropped."""

    def __init__(self, store: SQLiteStore, session_id: str, lock: WriterLock) -> None:
        self._store = store
        self._session_id = session_id
        self._lock: WriterLock | None = lock
        self.unborn: SessionRecord | None = None
        """The session's row, for a session started by ``acquire_new_writer`` whose first write has
        not committed yet: that write inserts it (read and changed under the store's mutex)."""

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def active(self) -> bool:
        return self._lock is not None

    def owned_by(self, store: SQLiteStore) -> bool:
        return self._store is store and self._lock is not None

    def __del__(self) -> None:
        # A session handle dropped without close() must not keep its session locked until exit.
        with contextlib.suppress(Exception):  # at shutdown the kernel drops the lock anyway
            self.release()

    def release(self) -> None:
        if self._lock is not None:
            lock, self._lock = self._lock, None
            lock.release()


class PollingWatch:
    """Wakes when the database file changes, by polling ``PRAGMA data_version`` (single host).

    A connection of its own: ``data_version`` counts commits by *other* connections, so the
    store's connection would not see the appends of its own process.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        try:
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA busy_timeout = 10000")
        except sqlite3.Error as err:
            raise database_error(path, err) from None
        self._version = self._data_version()

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            version = self._data_version()
            if version != self._version:
                self._version = version
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            time.sleep(min(WATCH_POLL_SECONDS, remaining))

    def close(self) -> None:
        self._db.close()

    def _data_version(self) -> int:
        try:
            return int(self._db.execute("PRAGMA data_version").fetchone()[0])
        except sqlite3.Error as err:
            raise database_error(self._path, err) from None


class SQLiteStore:
    """``SessionStore`` on one SQLite file (created, with its folder, on first use)."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, durability: Durability = "normal"):
        self.path = Path(path) if path is not None else default_db_path()
        self._locks_dir = self.path.with_name(self.path.name + ".locks")
        self._ranged = sqlite_lock.RANGE_LOCKS
        """Which writer locks (``sqlite_lock``), read from the module when the store is made, so
        tests can take the lock-file-per-session path on Linux too (never mixed on one database:
        two schemes would not see each other's locks)."""
        self._mutex = threading.Lock()
        self._writer: BatchWriter | None = None
        self._closed = False
        self._told_missing = False
        self._moved_through: int | None = None
        """The descriptor ``check_present`` found on the file once it was moved: read again at
        each later check (an ``fstat``), not the whole ``/proc/self/fd`` listed each run."""
        if str(path) == ":memory:":
            raise SessionDatabaseError(
                ":memory:: sessions in memory would be gone when the process ends, and their lock"
                " files would land in the working folder; choose a file with --database (or run"
                " with --no-session)"
            )
        if self.path.is_dir():
            raise SessionDatabaseError(
                f"{self.path}: is a directory, not a session database; choose a file with --database"
            )
        exists = self.path.exists()
        if exists and not self.path.is_file():  # /dev/null: SQLite's error said nothing of it
            raise SessionDatabaseError(
                f"{self.path}: is a device, pipe or socket, not a session database; choose a file with --database"
            )
        try:
            if not exists:  # SQLite gives the -wal and -shm files the database's mode
                create_own_file(self.path)
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA busy_timeout = 10000")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute(f"PRAGMA synchronous = {'FULL' if durability == 'full' else 'NORMAL'}")
            self._db.execute("PRAGMA foreign_keys = ON")
            # Reading through a memory map skips a copy per page: about a quarter off opening a
            # 50 MB session.
            self._db.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
            migrate(self._db)
            opened = os.stat(self.path)
            self._file = (opened.st_dev, opened.st_ino)
            """The file opened, to know it again (``check_present``)."""
        except sqlite3.Error as err:
            raise database_error(self.path, err) from None
        except OSError as err:
            raise SessionDatabaseError(
                f"{self.path}: cannot create the session database's folder ({err.strerror or err}); "
                'choose another place with --database or the "database" setting'
            ) from None

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
        with self._guarded():
            self._insert_sessions(
                [(session_id, cwd, title, created, created, version, parent_session_id, parent_entry_id)]
            )
            return self._get(session_id)

    def get_session(self, session_id: str) -> SessionRecord:
        with self._guarded():
            return self._get(session_id)

    def list_sessions(self, cwd: str | None = None, limit: int | None = None) -> list[SessionRecord]:
        sql = f"SELECT {_RECORD_COLUMNS} FROM sessions"
        params: list[object] = []
        if cwd is not None:
            sql += " WHERE cwd = ?"
            params.append(cwd)
        # Within one millisecond, the session with the newest entry counts as the newer one.
        sql += (
            " ORDER BY updated DESC,"
            " (SELECT max(seq) FROM entries WHERE entries.session_id = sessions.id) DESC, id DESC"
        )
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        with self._guarded():
            return [SessionRecord(*row) for row in self._db.execute(sql, params)]

    def workspaces(self, limit: int) -> list[str]:
        sql = "SELECT cwd FROM sessions GROUP BY cwd ORDER BY max(updated) DESC LIMIT ?"
        with self._guarded():
            return [row[0] for row in self._db.execute(sql, (limit,))]

    def delete_session(self, lease: WriterLease) -> None:
        self._check(lease)
        with self._guarded(), self._transaction():
            self._db.execute("DELETE FROM entries WHERE session_id = ?", (lease.session_id,))
            self._db.execute("DELETE FROM sessions WHERE id = ?", (lease.session_id,))
        if not self._ranged:  # a byte of the shared file leaves nothing behind
            with contextlib.suppress(OSError):
                session_lock_path(self._locks_dir, lease.session_id).unlink()

    # -- writer lock -----------------------------------------------------------------------------

    def acquire_writer(self, session_id: str) -> FileLease:
        self.get_session(session_id)
        return self._lock(session_id)

    def acquire_new_writer(self, record: SessionRecord) -> FileLease:
        """The lease of a session not in the store yet; its row is inserted by the first write
        under the lease, in that write's transaction (``FileLease.unborn``). Nobody can hold the
        lock of a session whose row no one can read yet, so the row is not looked for, and the
        session's start costs no statement and no commit of its own on the caller's thread (at
        1,000 sessions a service stores, the row's insert, commit and re-read were ~4% of
        storing's CPU, all on the event loop). A crash before that write leaves nothing behind;
        after it, the row and its first entries are there together."""
        lease = self._lock(record.id)
        lease.unborn = record
        return lease

    def _lock(self, session_id: str) -> FileLease:
        """Take the session's writer lock (see the module docstring)."""
        return FileLease(self, session_id, lock_session(self._locks_dir, session_id, ranged=self._ranged))

    # -- entries ---------------------------------------------------------------------------------

    def append(
        self, lease: WriterLease, entries: Sequence[EntryDict], leaf_id: str, updated: int
    ) -> SessionRecord:
        self._check(lease)
        with self._guarded():
            with self._transaction():
                born = self._create_unborn([lease])
                record = self._insert(lease.session_id, entries, leaf_id, updated)
            _born(born)
            return record

    def append_later(
        self, lease: WriterLease, entries: Sequence[EntryDict], leaf_id: str, updated: int
    ) -> Commit:
        """``append`` by the store's writer thread, in one transaction with the appends queued
        with it (``writer.BatchWriter``); the ``Commit`` returned is done once that transaction
        ended."""
        self._check(lease)
        if self._writer is None:
            self._writer = BatchWriter(
                self._append_batch, self._append_one, f"tether-sqlite {self.path.name}"
            )
        return self._writer.submit(lease, entries, leaf_id, updated)

    def _append_batch(self, batch: Sequence[Append]) -> None:
        """Every append of ``batch`` in one transaction: its entries inserted in order, then each
        session's row updated once (its appends' counters summed, the last one's leaf): the
        update, with the two indexes on ``updated``, was most of an append's cost, and a run's
        tool call and its result usually reach the same batch.

        Many rows go in one statement (``_execute_rows``) rather than a statement execution per row:
        ``sqlite3`` lets go of the interpreter lock for every execution and must then win it
        back from the event loop's thread, a handover that cost both threads more than the
        writes did (P6, 1,000 sessions: 60,000 context switches for 14,000 entries, 33,000 in
        chunks; the process's CPU 13% less, interleaved with the old code).
        """
        for append in batch:
            self._check(append.lease)
        groups = by_session(batch)
        many = len(groups) > 1  # a service's batch: the fast encoder (``encode_entry``)
        # Each statement's parameters built flat, as they are bound, not as rows to flatten.
        entries: list[object] = []
        for append in batch:
            session_id = append.lease.session_id
            for e in append.entries:
                entries += (
                    session_id,
                    e["id"],
                    e.get("parentId"),
                    e["type"],
                    e["timestamp"],
                    # A bytearray, bound as the same BLOB: ``bytes`` (like ``None``) first goes
                    # through sqlite3's adapter lookup, two failed attribute lookups and an
                    # AttributeError formatted and dropped (~2.5k instructions an entry).
                    bytearray(encode_entry(e, many=many)),
                )
        counters: list[object] = []
        for g in groups:
            counters += _counter_values(g.lease.session_id, g.entries, g.leaf_id, g.updated)
        # A session deleted meanwhile fails the insert (its entries' foreign key), so every
        # session updated below has its row.
        with self._guarded():
            with self._transaction():
                born = self._create_unborn([g.lease for g in groups])
                self._execute_rows(_insert_entries, entries, _ENTRY_WIDTH)
                self._execute_rows(_update_counters, counters, _COUNTER_WIDTH)
            _born(born)

    def _execute_rows(self, sql: Callable[[int], str], params: list[object], width: int) -> None:
        """Execute ``sql(rows)`` over ``params``, ``width`` values a row: ``ROWS_PER_STATEMENT``
        rows a statement (or fewer, if SQLite allows fewer parameters), the rest in power-of-two
        pieces."""
        rows = len(params) // width
        most, limit = (
            ROWS_PER_STATEMENT,
            max(self._db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // width, 1),
        )
        if most > limit:
            most = 1 << (limit.bit_length() - 1)
        start = 0
        while start < rows:
            size = min(most, 1 << ((rows - start).bit_length() - 1))
            self._db.execute(sql(size), params[start * width : (start + size) * width])
            start += size

    def _append_one(self, append: Append) -> None:
        self.append(*append)

    def _insert(
        self, session_id: str, entries: Sequence[EntryDict], leaf_id: str, updated: int
    ) -> SessionRecord:
        """The entries, the new leaf and the counters; inside the caller's transaction."""
        self._db.executemany(_INSERT_ENTRY, _entry_rows(session_id, entries))
        row = self._db.execute(
            f"{_UPDATE_COUNTERS} RETURNING {_RECORD_COLUMNS}",
            _counter_values(session_id, entries, leaf_id, updated),
        ).fetchone()
        if row is None:
            raise SessionNotFoundError(session_id)
        return SessionRecord(*row)

    def set_leaf(self, lease: WriterLease, leaf_id: str | None, updated: int) -> SessionRecord:
        self._check(lease)
        with self._guarded():
            with self._transaction():
                born = self._create_unborn([lease])
                row = self._db.execute(
                    f"UPDATE sessions SET leaf_id = ?, updated = max(updated, ?) WHERE id = ?"
                    f" RETURNING {_RECORD_COLUMNS}",
                    (leaf_id, updated, lease.session_id),
                ).fetchone()
            _born(born)
        if row is None:
            raise SessionNotFoundError(lease.session_id)
        return SessionRecord(*row)

    def entries(self, session_id: str) -> list[StoredEntry]:
        with self._guarded():
            rows = self._db.execute(
                f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
        return list(map(StoredEntry._make, rows))

    def entries_after(self, session_id: str, entry_id: str | None) -> list[StoredEntry]:
        if entry_id is None:
            return self.entries(session_id)
        with self._guarded():
            rows = self._db.execute(
                f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE session_id = ?"
                " AND seq > (SELECT seq FROM entries WHERE session_id = ? AND id = ?) ORDER BY seq",
                (session_id, session_id, entry_id),
            ).fetchall()
        return list(map(StoredEntry._make, rows))

    def watch(self, session_id: str) -> PollingWatch:
        self.get_session(session_id)
        return PollingWatch(self.path)

    def newest_entry_id(self, session_id: str) -> str | None:
        with self._guarded():
            row = self._db.execute(
                "SELECT max(id) FROM entries WHERE session_id = ?", (session_id,)
            ).fetchone()
        return None if row is None else row[0]

    def check_present(self) -> None:
        """``SessionStore.check_present``: the path still names the file opened (its device and
        inode); or that file has another name now (moved, renamed), and is checkpointed so that
        it holds what was written: SQLite writes on into the ``-wal`` under the old name and, the
        file moved, no longer folds it in at close, so the moved file alone lacked every write
        since the last checkpoint (the schema too, for a new one), and the next tether to open
        the old name dropped that ``-wal``. Otherwise the file was deleted or replaced, and SQLite
        goes on writing to the unlinked file without a word: ``SessionDatabaseError``. A
        checkpoint that could not copy every page (another connection reading an older state of
        the old name's ``-wal``) left the moved file short: ``SessionDatabaseError`` too, and the
        next check (the close's) tries again."""
        try:
            now = os.stat(self.path)
            if (now.st_dev, now.st_ino) == self._file:
                return
        except OSError:  # gone: moved or deleted
            pass
        found = _links(self._file, self._moved_through)
        if found is not None and found[1]:
            self._moved_through = found[0]
            with self._guarded():
                busy, log, copied = self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            if busy or log != copied:
                raise SessionDatabaseError(
                    f"{self.path}: the session database was moved while tether had it open, and "
                    f"only {copied} of the {log} pages written since could be copied into it "
                    "(another program is reading it); end that program, and tether copies the "
                    "rest when it closes"
                )
            return
        self._told_missing = True
        raise SessionDatabaseError(
            f"{self.path}: the session database was deleted or replaced while tether had it "
            "open; what tether stored since then is lost with it (keep the file in place, or "
            "move it, while tether runs)"
        )

    def close(self) -> None:
        """Commit what is queued and close; ``check_present`` first, unless it has already said
        the file is gone (a run's end did), so a deleted database is never closed in silence."""
        if self._closed:
            return
        if self._writer is not None:
            self._writer.close()  # what is queued is committed first
        try:
            if not self._told_missing:
                self.check_present()
        finally:
            with self._guarded():
                self._db.close()
            self._closed = True

    # -- internals -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _guarded(self) -> Generator[None]:
        """The connection to this thread, and SQLite's failures as one ``SessionError`` line."""
        with self._mutex:
            if self._closed:  # not sqlite3's "Cannot operate on a closed database."
                raise SessionError(f"{self.path}: this session store is closed; open it again to go on")
            try:
                yield
            except (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError):
                raise  # a duplicate id or a bug of ours: the caller's business, not the file's
            except sqlite3.Error as err:
                raise database_error(self.path, err) from None

    def _insert_sessions(self, rows: list[tuple[object, ...]]) -> None:
        """New sessions' rows (id, cwd, title, created, updated, version, parent session, parent
        entry); ``SessionExistsError`` for an id taken (several at once raise ``IntegrityError``:
        the batch writer then writes each append alone, which names it)."""
        try:
            self._execute_rows(_insert_sessions, [value for row in rows for value in row], _SESSION_WIDTH)
        except sqlite3.IntegrityError:
            if len(rows) > 1:
                raise
            raise SessionExistsError(str(rows[0][0])) from None

    def _create_unborn(self, leases: Sequence[WriterLease]) -> list[FileLease]:
        """Insert the rows of the sessions among ``leases`` that ``acquire_new_writer`` started and no
        write has created yet; inside the caller's transaction and mutex. Returns their leases,
        for ``_born`` once the transaction committed."""
        unborn = [lease for lease in leases if isinstance(lease, FileLease) and lease.unborn is not None]
        self._insert_sessions([_session_row(lease.unborn) for lease in unborn if lease.unborn is not None])
        return unborn

    def _get(self, session_id: str) -> SessionRecord:
        row = self._db.execute(
            f"SELECT {_RECORD_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        if row is None:
            raise SessionNotFoundError(session_id)
        return SessionRecord(*row)

    def _check(self, lease: WriterLease) -> None:
        if not (isinstance(lease, FileLease) and lease.owned_by(self)):
            raise SessionError(
                f"the writer lease of session {lease.session_id!r} was released or belongs to another store"
            )

    @contextlib.contextmanager
    def _transaction(self) -> Generator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")


@functools.cache
def _insert_entries(rows: int) -> str:
    """``_INSERT_ENTRY`` for ``rows`` rows at once."""
    return _INSERT_ENTRY + ", (?, ?, ?, ?, ?, ?)" * (rows - 1)


_INSERT_SESSION = """INSERT INTO sessions (id, cwd, title, created, updated, version, parent_session_id,
    parent_entry_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"""


@functools.cache
def _insert_sessions(rows: int) -> str:
    """``_INSERT_SESSION`` for ``rows`` sessions at once."""
    return _INSERT_SESSION + ", (?, ?, ?, ?, ?, ?, ?, ?)" * (rows - 1)


def _session_row(record: SessionRecord) -> tuple[object, ...]:
    """``_INSERT_SESSION``'s parameters for a new session's row."""
    return (
        record.id,
        record.cwd,
        record.title,
        record.created,
        record.updated,
        record.version,
        record.parent_session_id,
        record.parent_entry_id,
    )


def _born(leases: list[FileLease]) -> None:
    """The rows of ``leases``' sessions are committed: later writes only update them."""
    for lease in leases:
        lease.unborn = None


@functools.cache
def _update_counters(rows: int) -> str:
    """``_UPDATE_COUNTERS`` for ``rows`` sessions at once (``_counter_values`` rows, one per session).
    Not used for one session: ``UPDATE ... FROM`` materialises its rows first, and a single append
    through it took twice as long (180 against 90 µs)."""
    values = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"] * rows)
    return f"""UPDATE sessions SET leaf_id = u.column1, updated = max(updated, u.column2),
    title = coalesce(u.column3, title), first_prompt = coalesce(first_prompt, u.column4),
    entry_count = entry_count + u.column5, message_count = message_count + u.column6,
    cost = cost + u.column7, input_tokens = input_tokens + u.column8,
    output_tokens = output_tokens + u.column9, cache_read_tokens = cache_read_tokens + u.column10,
    cache_write_tokens = cache_write_tokens + u.column11
    FROM (VALUES {values}) AS u WHERE sessions.id = u.column12"""


def _entry_rows(
    session_id: str, entries: Sequence[EntryDict], *, many: bool = False
) -> list[tuple[object, ...]]:
    """``_INSERT_ENTRY``'s parameters for ``entries`` (``many``: see ``encode_entry``)."""
    return [
        (session_id, e["id"], e.get("parentId"), e["type"], e["timestamp"], encode_entry(e, many=many))
        for e in entries
    ]


def _counter_values(
    session_id: str, entries: Sequence[EntryDict], leaf_id: str, updated: int
) -> tuple[object, ...]:
    """``_UPDATE_COUNTERS``'s parameters for appending ``entries``."""
    c = count_entries(entries)
    return (
        leaf_id,
        updated,
        c.title,
        c.first_prompt,
        c.entries,
        c.messages,
        c.cost,
        c.input_tokens,
        c.output_tokens,
        c.cache_read_tokens,
        c.cache_write_tokens,
        session_id,
    )


_SQLITE_PERM, _SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY = 3, 5, 6, 8
_SQLITE_IOERR, _SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_CANTOPEN, _SQLITE_NOTADB = 10, 11, 13, 14, 26
_LOW_SPACE = 1 << 20
"""Free bytes under which an I/O error is reported as a full disk (SQLite says "disk I/O error"
when a write into the WAL's memory map fails for want of space)."""


def _links(file: tuple[int, int], known: int | None = None) -> tuple[int, int] | None:
    """A descriptor of this process open on the file (device, inode) and how many names the
    file has, read through it (SQLite's own: opening another and closing it would drop SQLite's
    POSIX locks on the file); ``known`` first, if still open on it. ``None`` where the
    descriptors cannot be listed (no ``/proc/self/fd`` nor ``/dev/fd``), or none is open on it."""
    if known is not None:
        try:
            info = os.fstat(known)
        except OSError:
            pass
        else:
            if (info.st_dev, info.st_ino) == file:
                return known, info.st_nlink
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            descriptors = os.listdir(folder)
        except OSError:
            continue
        for name in descriptors:
            try:
                info = os.fstat(int(name))
            except (OSError, ValueError):
                continue
            if (info.st_dev, info.st_ino) == file:
                return int(name), info.st_nlink
        return None
    return None


def database_error(path: Path, err: sqlite3.Error) -> SessionDatabaseError:
    """SQLite's failure as one line naming the file, what is wrong with it and what to do."""
    code = getattr(err, "sqlite_errorcode", 0) & 0xFF
    if code == _SQLITE_NOTADB:  # perhaps a file of the user's, given by mistake: nothing to "repair"
        return SessionDatabaseError(
            f"{path}: not an SQLite database ({err}); if your sessions were there, move it aside and "
            "tether starts a new one, otherwise choose another file with --database"
        )
    if code == _SQLITE_CORRUPT:
        return SessionDatabaseError(
            f"{path}: the session database is damaged ({err}); move it aside and tether starts a new "
            f"one (`sqlite3 {path} .recover` may save what is left), or use another with --database"
        )
    if code == _SQLITE_FULL or (code == _SQLITE_IOERR and _free_bytes(path) < _LOW_SPACE):
        return SessionDatabaseError(f"{path}: the disk holding the session database is full; free some space")
    if code in (_SQLITE_READONLY, _SQLITE_CANTOPEN, _SQLITE_PERM):
        return SessionDatabaseError(
            f"{path}: cannot open the session database for writing ({err}); make it and its folder writable, "
            "or use another with --database (or --no-session to keep nothing)"
        )
    if code in (_SQLITE_BUSY, _SQLITE_LOCKED):
        return SessionDatabaseError(
            f"{path}: the session database stayed locked by another process ({err}); try again"
        )
    return SessionDatabaseError(f"{path}: session database error: {err}")


def _free_bytes(path: Path) -> int:
    try:
        stat = os.statvfs(path.parent)
    except OSError:
        return _LOW_SPACE  # cannot tell: do not claim the disk is full
    return stat.f_bavail * stat.f_frsize
