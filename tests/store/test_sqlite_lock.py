"""The SQLite store's writer locks (``tether.store.sqlite_lock``) on both schemes: Linux's range
locks on one shared file, and a lock file per session, which other platforms use and which
the ``ranged`` fixture keeps tested here; and the schema step that keeps older tethers, which
lock per-session files only, from writing a session a newer one writes."""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from session_helpers import LOCK_RELEASE_TIMEOUT
from tether.store import SessionLockedError, SQLiteStore, sqlite_lock
from tether.store.sqlite_lock import RANGE_LOCKS, WRITERS_FILE
from tether.store.sqlite_schema import SCHEMA_VERSION, migrate, schema_version
from tether.store.store import SessionDatabaseError


@pytest.fixture(
    params=[
        pytest.param(True, id="ranged", marks=pytest.mark.skipif(not RANGE_LOCKS, reason="no F_OFD_SETLK")),
        pytest.param(False, id="file-per-session"),
    ]
)
def ranged(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """The scheme every store of the test takes (``SQLiteStore`` reads ``RANGE_LOCKS`` when made)."""
    monkeypatch.setattr(sqlite_lock, "RANGE_LOCKS", request.param)
    return request.param


def _locks(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".locks")


def _take_when_free(store: SQLiteStore, session_id: str) -> None:
    """Take the session once its dead holder's lock is gone (the kernel drops it at once)."""
    deadline = time.monotonic() + LOCK_RELEASE_TIMEOUT
    while True:
        try:
            store.acquire_writer(session_id).release()
            return
        except SessionLockedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def test_a_second_writer_in_this_process_is_refused_through_any_store_of_the_database(
    db_path: Path, tmp_path: Path, ranged: bool
) -> None:
    """Two stores on one database, the second by another path (a symlinked folder): each refuses
    a session the other holds, naming this process, and takes it once released."""
    (tmp_path / "link").symlink_to(tmp_path)
    first = SQLiteStore(db_path)
    second = SQLiteStore(tmp_path / "link" / db_path.name)
    try:
        first.create_session("S", "/p", 1, version=1)
        lease = first.acquire_writer("S")
        me = f"by pid {os.getpid()} on {socket.gethostname()};"
        for store in (second, first):
            with pytest.raises(SessionLockedError, match=me):
                store.acquire_writer("S")
        lease.release()
        again = second.acquire_writer("S")
        with pytest.raises(SessionLockedError, match=me):
            first.acquire_writer("S")
        again.release()
    finally:
        first.close()
        second.close()


@pytest.mark.subprocess
def test_a_writer_in_another_process_is_named_and_its_death_frees_the_session(
    db_path: Path, ranged: bool
) -> None:
    store, holder = _held_by_a_child(db_path, ranged, 'print("locked", flush=True)')
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(SessionLockedError, match=f"by pid {holder.pid} on {socket.gethostname()};"):
            store.acquire_writer("S")
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    _take_when_free(store, "S")
    store.close()


@pytest.mark.subprocess
def test_a_forked_child_neither_frees_nor_keeps_its_parents_sessions(db_path: Path, ranged: bool) -> None:
    """The child's release of its copy of the parent's lease leaves the parent's lock, the child is
    refused the session naming its parent, and the parent's death frees the session while the
    child lives on (the child held the lock descriptor too: it would have kept the lock)."""
    store, parent = _held_by_a_child(
        db_path,
        ranged,
        """
        read, write = os.pipe()
        child = os.fork()
        if child == 0:
            lease.release()
            try:
                SQLiteStore(path).acquire_writer("S")
                os.write(write, b"the child took it")
            except SessionLockedError as exc:
                os.write(write, str(exc).encode())
            time.sleep(60)
            os._exit(0)
        print(child, os.read(read, 1000).decode(), flush=True)
        """,
    )
    child = 0
    try:
        assert parent.stdout is not None
        child_pid, said = parent.stdout.readline().split(" ", 1)
        child = int(child_pid)
        assert f"by pid {parent.pid} on {socket.gethostname()};" in said
        with pytest.raises(SessionLockedError):
            store.acquire_writer("S")
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    try:
        os.kill(child, 0)  # alive, holding whatever descriptors it kept
        _take_when_free(store, "S")
    finally:
        os.kill(child, signal.SIGKILL)
    store.close()


def _held_by_a_child(db_path: Path, ranged: bool, then: str) -> tuple[SQLiteStore, subprocess.Popen[str]]:
    """A store with session S, and a Python process that takes S's lease (``lease``), runs
    ``then`` and sleeps."""
    store = SQLiteStore(db_path)
    store.create_session("S", "/p", 1, version=1)
    code = (
        "import os, time\nfrom tether.store import SessionLockedError, SQLiteStore, sqlite_lock\n"
        f"path = {str(db_path)!r}\nsqlite_lock.RANGE_LOCKS = {ranged}\n"
        "lease = SQLiteStore(path).acquire_writer('S')\n"
        f"{textwrap.dedent(then).strip()}\ntime.sleep(60)\n"
    )
    return store, subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def test_a_lock_folder_removed_meanwhile_is_made_again(db_path: Path, ranged: bool) -> None:
    store = SQLiteStore(db_path)
    try:
        store.create_session("A", "/p", 1, version=1)
        store.create_session("B", "/p", 1, version=1)
        store.acquire_writer("A").release()
        locks = _locks(db_path)
        for file in locks.iterdir():
            file.unlink()
        locks.rmdir()
        lease = store.acquire_writer("B")
        if ranged:
            assert [file.name for file in locks.iterdir()] == [WRITERS_FILE]
        else:
            assert (locks / "B.lock").read_text().split()[0] == str(os.getpid())
        lease.release()
    finally:
        store.close()


@pytest.mark.skipif(not RANGE_LOCKS, reason="no F_OFD_SETLK")
def test_range_locks_hold_many_sessions_on_one_descriptor_and_one_file(db_path: Path) -> None:
    """A file and a descriptor per session cost a file creation each (P6) and bounded the sessions
    open for writing by ``ulimit -n``; the last release closes the one descriptor."""
    store = SQLiteStore(db_path)
    try:
        for i in range(50):
            store.create_session(f"S{i}", "/p", 1, version=1)
        before = len(os.listdir("/proc/self/fd"))
        leases = [store.acquire_writer(f"S{i}") for i in range(50)]
        assert len(os.listdir("/proc/self/fd")) == before + 1
        assert [file.name for file in _locks(db_path).iterdir()] == [WRITERS_FILE]
        for lease in leases:
            lease.release()
        assert len(os.listdir("/proc/self/fd")) == before
    finally:
        store.close()


@pytest.mark.skipif(not RANGE_LOCKS, reason="no F_OFD_SETLK")
def test_two_sessions_on_one_byte_are_refused_not_both_admitted(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A digest collision (1 in 2**63 per pair held at once) reads as the session being locked."""

    def one_byte(session_id: str) -> int:
        return 12345

    monkeypatch.setattr(sqlite_lock, "session_offset", one_byte)
    store = SQLiteStore(db_path)
    try:
        store.create_session("A", "/p", 1, version=1)
        store.create_session("B", "/p", 1, version=1)
        lease = store.acquire_writer("A")
        with pytest.raises(SessionLockedError, match="'B'"):
            store.acquire_writer("B")
        lease.release()
        store.acquire_writer("B").release()
    finally:
        store.close()


def test_a_deleted_session_leaves_no_lock_behind(db_path: Path, ranged: bool) -> None:
    store = SQLiteStore(db_path)
    try:
        store.create_session("S", "/p", 1, version=1)
        store.create_session("T", "/p", 1, version=1)
        kept = store.acquire_writer("T")
        lease = store.acquire_writer("S")
        store.delete_session(lease)
        lease.release()
        assert sorted(file.name for file in _locks(db_path).iterdir()) == [
            WRITERS_FILE if ranged else "T.lock"
        ]
        store.create_session("S", "/p", 2, version=1)
        store.acquire_writer("S").release()
        kept.release()
    finally:
        store.close()


def test_the_schema_step_to_range_locks_waits_for_older_tethers_writing(db_path: Path) -> None:
    """An older tether (schema 2) locks a session through its own file, which range locks do not
    see: while one holds such a lock, a newer tether refuses to move the database on (older ones
    then refuse it); a stale lock file, held by no one, does not stop it."""
    db = sqlite3.connect(db_path, isolation_level=None)
    migrate(db, target=2)
    locks = _locks(db_path)
    locks.mkdir()
    (locks / "GONE.lock").write_text("4000 oldhost")
    fd = os.open(locks / "S.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, b"4242 oldhost")
        with pytest.raises(
            SessionDatabaseError,
            match=r"session 'S' is open for writing by an older tether \(pid 4242 on oldhost\); close it",
        ):
            SQLiteStore(db_path)
        assert schema_version(db) == 2
    finally:
        os.close(fd)
    SQLiteStore(db_path).close()
    assert schema_version(db) == SCHEMA_VERSION == 3
    db.close()


@pytest.mark.skipif(not RANGE_LOCKS, reason="no F_OFD_SETLK")
def test_a_short_or_odd_fdinfo_lock_line_is_passed_over_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refused writer's search for the holder reads ``/proc/<pid>/fdinfo`` lines the kernel
    writes; one shorter than it expects (a bare ``lock:``) or ending in no number raised
    IndexError or ValueError in place of naming the holder."""
    locks = tmp_path / "db.locks"
    lease = sqlite_lock.lock_session(locks, "S", ranged=True)
    try:
        st = os.stat(locks / WRITERS_FILE)
        real_read = Path.read_text

        def odd_lines_first(path: Path) -> str:
            text = real_read(path)
            odd = "lock:\nlock:\t9: OFDLCK ADVISORY WRITE -1 00:00:0 1 then\n"
            return odd + text if str(path).startswith("/proc/") else text

        monkeypatch.setattr(type(Path()), "read_text", odd_lines_first)
        holder = sqlite_lock._range_holder((st.st_dev, st.st_ino), sqlite_lock.session_offset("S"))  # pyright: ignore[reportPrivateUsage]
        assert holder == f"pid {os.getpid()} on {socket.gethostname()}"
    finally:
        lease.release()


def test_the_database_tether_makes_is_its_owners_alone(tmp_path: Path, ranged: bool) -> None:
    """The transcripts keep what the user pasted (keys, tokens): the folders, database, -wal,
    -shm, lock folder and lock files tether makes are 0700 and 0600 (they were 0755 and 0644);
    a folder or database the user made keeps its mode."""
    old_umask = os.umask(0o022)
    try:
        db = tmp_path / "data" / "tether" / "sessions.db"
        store = SQLiteStore(db)
        store.create_session("S", "/p", 1, version=1)
        lease = store.acquire_writer("S")
        modes = {str(p.relative_to(tmp_path)): oct(p.stat().st_mode & 0o777) for p in tmp_path.rglob("*")}
        lease.release()
        store.close()
        theirs = tmp_path / "theirs"
        theirs.mkdir()
        (theirs / "shared.db").touch()
        (theirs / "shared.db").chmod(0o664)  # a database shared with a group on purpose
        SQLiteStore(theirs / "shared.db").close()
        kept = oct(theirs.stat().st_mode & 0o777), oct((theirs / "shared.db").stat().st_mode & 0o777)
    finally:
        os.umask(old_umask)
    lock = "data/tether/sessions.db.locks/" + (WRITERS_FILE if ranged else "S.lock")
    expected = {"data": "0o700", "data/tether": "0o700", "data/tether/sessions.db.locks": "0o700"}
    for name in ("sessions.db", "sessions.db-wal", "sessions.db-shm"):
        expected[f"data/tether/{name}"] = "0o600"
    assert modes == expected | {lock: "0o600"}
    assert kept == ("0o755", "0o664")
