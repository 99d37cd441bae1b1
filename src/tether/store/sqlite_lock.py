"""The SQLite store's per-session writer locks: one byte of one shared file on Linux, a file each elsewhere.

Why two schemes: a lock file per session (``<db>.locks/<id>.lock``, created, ``flock``-ed and
stamped with the holder's pid and host) cost a file creation per session, system CPU that no
profile of the interpreter shows: at 1,000 sessions (P6, 2 cores under load), 0.68 s of system
CPU against 0.24 s with range locks (8 alternating pairs, every pair lower), about 32 µs per
stored message, a tenth of what storing cost; the P6 storage figure went from 311-330 to 210-217
µs per message. Where the kernel has open-file-description
range locks (Linux ``F_OFD_SETLK``), every session of a database is instead one byte of one file,
``<db>.locks/.writers`` (a name no session id can take: ids never start with a dot), locked at an
offset derived from the session id; the file is created once and never written.

Range locks (``RANGE_LOCKS``):

- The offset is the first 63 bits of the id's BLAKE2b digest: anywhere in the positive ``off_t``
  range, where locks need no file data behind them. Two ids on one offset read as one session, so
  the second is refused as locked (never admitted twice: a collision errs on the safe side). With
  ``n`` sessions held at once, a new one collides with probability ``n / 2**63``: under 1e-13 for
  a million held, about one false "locked" per 10**13 session starts.
- An OFD lock belongs to an open file description, not to a process: every lock a process takes
  on one lock file goes through one shared descriptor (``_LockFile``, found by the file's device
  and inode, so stores opened on one database by different paths share it), so the kernel settles
  conflicts between processes, and the bytes this process holds (``_LockFile.held``) settle those
  between its own stores and handles: a second handle fails at once, as across processes. The
  descriptor is closed when its last lock is released: a program that opens many databases one
  after another keeps no descriptor per database, and one holding a thousand sessions keeps one,
  not a thousand (``ulimit -n`` no longer bounds the sessions open for writing).
- The kernel drops the locks when the last descriptor of that description closes, however the
  process ends.
- The holder: an OFD lock reports no pid (``F_OFD_GETLK`` says -1), so a refused writer finds
  it on the conflict path only, in ``/proc/<pid>/fdinfo`` (each descriptor's ``lock:`` lines,
  readable for the processes of the same user) and names it ``pid N on <this host>``; a holder it
  cannot see (another user, another PID namespace) is "another process". The search costs about
  5 ms of CPU with 170 processes to look through, paid by the refused writer only.

Elsewhere (no ``F_OFD_SETLK``: macOS, the BSDs; and in tests that set ``RANGE_LOCKS`` false to
keep this path tested on Linux), each session keeps its own lock file: an
exclusive, non-blocking ``flock`` on ``<db>.locks/<id>.lock``, which holds ``<pid> <host>`` for
the holder's name. Both schemes are local to one host.

Fork: a forked child inherits the lock descriptors, and with them the locks (both kinds belong
to the open file description), which it could release for its parent or keep alive after its
parent's death. So a child closes its copies at once (``os.register_at_fork``) and forgets the
parent's locks without unlocking them: the parent keeps its sessions, its death frees them
however long a child lives on, and the child takes sessions of its own (refused, naming the
parent, for those the parent holds).

Tethers older than schema 3 lock only the per-session files, which a range lock does not see:
``sqlite_schema``'s migration to 3 refuses while one of those files is locked (``held_old_lock``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import socket
import struct
import threading
import weakref
from pathlib import Path

from tether.store.errors import SessionDatabaseError, SessionLockedError

RANGE_LOCKS = hasattr(fcntl, "F_OFD_SETLK")
"""Whether this platform has open-file-description range locks (see the module docstring)."""
WRITERS_FILE = ".writers"
"""The range-locked file in ``<db>.locks``: a dot-name, which no session's own lock file has."""

_FLOCK = "hhqqi"
"""``struct flock``: type, whence, start, length, pid (Linux's layout, 64-bit ``off_t``)."""
_OFFSET_MASK = (1 << 63) - 1


class _LockFile:
    """This process's shared descriptor of one ``.writers`` file and the bytes it holds there."""

    __slots__ = ("closed", "fd", "held", "key")

    def __init__(self, fd: int, key: tuple[int, int]) -> None:
        self.fd = fd
        self.key = key
        self.held: set[int] = set()
        """The offsets this process holds, through any of its stores."""
        self.closed = False


_files: dict[tuple[int, int], _LockFile] = {}
"""This process's open ``.writers`` files, by device and inode."""
_flocks: weakref.WeakSet[FlockLock] = weakref.WeakSet()
"""This process's per-session lock files (``FlockLock``), for ``_forget_after_fork``."""
_mutex = threading.RLock()
"""Guards ``_files`` and every ``_LockFile``; re-entrant because a lease's ``__del__`` may release
it from a garbage collection that starts while this thread holds the mutex."""


class RangeLock:
    """One session's byte of the shared lock file (see the module docstring)."""

    __slots__ = ("_file", "_offset")

    def __init__(self, file: _LockFile, offset: int) -> None:
        self._file = file
        self._offset = offset

    def release(self) -> None:
        with _mutex:
            file = self._file
            if file.closed:
                return  # a forked child's copy (``_forget_after_fork``): the lock is its parent's
            with contextlib.suppress(OSError):
                _set_range(file.fd, fcntl.F_UNLCK, self._offset)
            file.held.discard(self._offset)
            _close_if_idle(file)


class FlockLock:
    """One session's own lock file, ``flock``-ed (see the module docstring)."""

    __slots__ = ("__weakref__", "fd")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        _flocks.add(self)

    def release(self) -> None:
        with _mutex:
            fd, self.fd = self.fd, -1
            if fd < 0:
                return  # a forked child's copy (``_forget_after_fork``): the lock is its parent's
            _flocks.discard(self)
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


WriterLock = RangeLock | FlockLock


def lock_session(locks_dir: Path, session_id: str, *, ranged: bool) -> WriterLock:
    """Become ``session_id``'s writer, or raise ``SessionLockedError`` naming the holder at once
    (``ValueError`` for an id that is no plain file name, on either scheme)."""
    if not session_id or "/" in session_id or session_id.startswith("."):
        raise ValueError(f"bad session id {session_id!r}")
    if not ranged:
        return _flock_session(locks_dir, session_id)
    offset = session_offset(session_id)
    with _mutex:
        while True:
            file = _writers_file(locks_dir)
            if offset in file.held:
                raise SessionLockedError(session_id, f"pid {os.getpid()} on {socket.gethostname()}")
            file.held.add(offset)  # first: a release meanwhile must not close the file under us
            if not file.closed:
                break
            file.held.discard(offset)  # a lease's __del__ closed it since ``_writers_file``
        try:
            _set_range(file.fd, fcntl.F_WRLCK, offset)
        except OSError as exc:
            file.held.discard(offset)
            _close_if_idle(file)
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise _lock_file_error(locks_dir / WRITERS_FILE, exc) from None
            key = file.key
        else:
            return RangeLock(file, offset)
    raise SessionLockedError(session_id, _range_holder(key, offset) or "another process")


def session_offset(session_id: str) -> int:
    """The session's byte in ``.writers``: 63 bits of its id's digest (see the module docstring)."""
    return int.from_bytes(hashlib.blake2b(session_id.encode(), digest_size=8).digest()) & _OFFSET_MASK


def _set_range(fd: int, kind: int, offset: int) -> None:
    """Lock (``F_WRLCK``, or ``OSError`` with EAGAIN at once if another holds it) or unlock
    (``F_UNLCK``) byte ``offset`` of ``fd``'s open file description."""
    fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack(_FLOCK, kind, os.SEEK_SET, offset, 1, 0))


def _writers_file(locks_dir: Path) -> _LockFile:
    """This process's ``_LockFile`` of ``locks_dir``'s ``.writers``, opened (and created) if need be."""
    path = locks_dir / WRITERS_FILE
    try:
        st = os.stat(path)
    except OSError:
        pass
    else:
        file = _files.get((st.st_dev, st.st_ino))
        if file is not None:
            return file
    try:
        locks_dir.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        st = os.fstat(fd)
    except OSError as exc:
        raise _lock_file_error(path, exc) from None
    key = (st.st_dev, st.st_ino)
    file = _files.get(key)
    if file is not None:  # it was created between the stat and the open
        os.close(fd)
        return file
    file = _files[key] = _LockFile(fd, key)
    return file


def _close_if_idle(file: _LockFile) -> None:
    if not file.held and not file.closed:
        file.closed = True
        _files.pop(file.key, None)
        os.close(file.fd)


def _forget_after_fork() -> None:
    """In a forked child: close the inherited lock descriptors without unlocking (the locks stay
    the parent's and die with it, not with a child that outlives it), and start with a fresh
    mutex (another thread may have held it)."""
    global _mutex
    _mutex = threading.RLock()
    for file in _files.values():
        file.closed = True
        with contextlib.suppress(OSError):
            os.close(file.fd)
    _files.clear()
    for lock in list(_flocks):
        with contextlib.suppress(OSError):
            os.close(lock.fd)
        lock.fd = -1
    _flocks.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


def _range_holder(key: tuple[int, int], offset: int) -> str | None:
    """``pid N on <host>`` of the process whose descriptor of the lock file ``key`` (device, inode)
    holds byte ``offset``, from ``/proc/<pid>/fdinfo``; None when no process we may look at does.
    Only on the conflict path: it reads every descriptor of every process we can see."""
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return None
    for pid in pids:
        folder = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(folder)
        except OSError:
            continue  # another user's, or gone
        for fd in fds:
            try:
                st = os.stat(f"{folder}/{fd}")
                if (st.st_dev, st.st_ino) != key:
                    continue
                info = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
            except OSError:
                continue
            for line in info.splitlines():
                # "lock:\t1: OFDLCK ADVISORY WRITE -1 <dev>:<ino> <start> <end or EOF>"; a line
                # shorter or odder than that is passed over, not raised on the refused writer
                words = line.split()
                if len(words) < 3 or words[0] != "lock:" or not words[-2].isdigit():
                    continue
                start, end = int(words[-2]), words[-1]
                if start <= offset and (end == "EOF" or (end.isdigit() and offset <= int(end))):
                    return f"pid {pid} on {socket.gethostname()}"
    return None


def _flock_session(locks_dir: Path, session_id: str) -> FlockLock:
    """The session's own lock file, ``flock``-ed and stamped with our pid and host."""
    path = session_lock_path(locks_dir, session_id)
    try:
        locks_dir.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise _lock_file_error(path, exc) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _read_holder(fd)
        os.close(fd)
        raise SessionLockedError(session_id, holder) from None
    except BaseException:
        os.close(fd)
        raise
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}".encode(), 0)
    except OSError as exc:  # a full disk: the lock holds, but say so now, not as "stdout is full"
        os.close(fd)
        raise _lock_file_error(path, exc) from None
    return FlockLock(fd)


def session_lock_path(locks_dir: Path, session_id: str) -> Path:
    """A session's own lock file (for a session id ``lock_session`` took)."""
    return locks_dir / f"{session_id}.lock"


def held_old_lock(locks_dir: Path) -> tuple[str, str | None] | None:
    """A session whose own lock file is ``flock``-ed now (its id and holder), or None: tried with a
    non-blocking lock on each, let go at once."""
    try:
        names = os.listdir(locks_dir)
    except OSError:
        return None  # no folder: no lock
    for name in names:
        if not name.endswith(".lock") or name.startswith("."):
            continue
        try:
            fd = os.open(locks_dir / name, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue  # gone meanwhile, or no plain file
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return name.removesuffix(".lock"), _read_holder(fd)
        finally:
            os.close(fd)  # also lets go of the probe's lock
    return None


def _read_holder(fd: int) -> str | None:
    """``pid 123 on host``, from a lock file's ``<pid> <host>`` (older tethers wrote the pid only)."""
    words = os.pread(fd, 320, 0).decode(errors="replace").split()
    if not words:
        return None
    return f"pid {words[0]}" + (f" on {words[1]}" if len(words) > 1 else "")


def _lock_file_error(path: Path, exc: OSError) -> SessionDatabaseError:
    """A lock file could not be made or written (it sits beside the database)."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return SessionDatabaseError(f"{path}: the disk holding the session database is full; free some space")
    return SessionDatabaseError(
        f"{path}: cannot write the session's lock file ({exc.strerror}); make {path.parent} writable, "
        "or use another store with --database (or --no-session to keep nothing)"
    )
