"""Which placeholders this process holds, written down where a later tether finds them.

A placeholder (``tether.tools.sandbox_protect``) is removed when the command holding it ends. A
tether killed meanwhile (SIGKILL, the OOM killer) leaves it: an empty read-only ``.git``,
``.tether`` or ``.mcp.json`` in the project, which the next command there takes over, but which
a project tether never runs in again keeps for good (``sweep`` looks at the home folder only).
So each process lists the placeholders it holds in a file of its own in the data folder's
``placeholders/`` (hidden from confined commands with the rest of the data folder), locked
(``flock``) for the process's life: the kernel lets the lock go however the process ends. The
first command of any later tether takes the lists whose lock it gets at once (a live tether's
is skipped, never waited for), at most ``SWEPT_MAX`` a start, removes what they name that still
bears a placeholder's marks and that no running command holds (``_remove``), and deletes them.

The list names what is held now, rewritten whole at each change, with the number of holders of
each placeholder in this process (two commands at once can hold the same one): it does not
grow for a worker's whole life, and it is empty when the process holds nothing. A path is
listed before its placeholder is made and dropped after it is removed, so a kill in between
leaves it listed; a path listed that is no placeholder is left alone by the sweep. Nothing is
opened until a placeholder is held (a run with no confined command has no list), and nothing
runs at exit: the lock ends with the process, and its list is the next start's to delete.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

FOLDER = "placeholders"
"""In the data folder (``tether.ai.paths.data_dir``)."""
SWEPT_MAX = 64
"""The lists a start looks at: a bounded cost, whatever a crashing loop left; the rest wait for
the next start."""


class Ledger:
    """This process's list (one per process: ``LEDGER``)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._holders: dict[str, int] = {}
        self._fd: int | None = None
        self._size = 0
        """The list's length in the file: a longer one is written over it without a cut (an
        ``ftruncate`` costs more than the write, and most changes add a path)."""
        self._pid = 0
        """The process whose list ``_fd`` is: a forked child makes its own."""

    def add(self, path: Path) -> None:
        """``path`` is about to be held (made, or taken over) by a command of this process."""
        with self._guard:
            self._holders[str(path)] = self._holders.get(str(path), 0) + 1
            self._write()

    def drop(self, paths: list[Path]) -> None:
        """The commands holding ``paths`` let them go (removed, or left to another holder)."""
        with self._guard:
            for path in map(str, paths):
                left = self._holders.pop(path, 0) - 1
                if left > 0:
                    self._holders[path] = left
            self._write()

    def _write(self) -> None:
        """Write the list over the old one: first the bytes, then the end cut (when shorter),
        so that a kill in between leaves a longer list (an old path is harmless), never a
        shorter one. Best effort: without a data folder to write in, placeholders still work."""
        fd = self._open()
        if fd is None:
            return
        data = b"".join(os.fsencode(path) + b"\0" for path in self._holders)
        with contextlib.suppress(OSError):
            os.pwrite(fd, data, 0)
            if len(data) < self._size:
                os.ftruncate(fd, len(data))
            self._size = len(data)

    def _open(self) -> int | None:
        if self._fd is not None and self._pid == os.getpid():
            return self._fd
        from tether.ai.paths import data_dir
        from tether.own_files import make_own_folder

        folder = data_dir() / FOLDER
        try:
            make_own_folder(folder)
        except OSError:
            return None
        for _ in range(5):
            try:
                path = folder / f"{os.getpid()}-{os.urandom(4).hex()}"
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            except OSError:
                return None
            # a sweep may take it between the open and the lock: it is then gone, make another
            if _locked(fd) and _same(fd, path):
                self._fd, self._pid, self._size = fd, os.getpid(), 0
                return fd
            os.close(fd)
        return None


LEDGER = Ledger()


def sweep_lists(remove: Callable[[Path], None]) -> None:
    """Delete the lists of processes that are gone (at most ``SWEPT_MAX``), calling ``remove``
    with each path they name first."""
    from tether.ai.paths import data_dir

    folder = data_dir() / FOLDER
    try:
        entries = os.scandir(folder)
    except OSError:
        return
    with entries:
        for entry in itertools.islice(entries, SWEPT_MAX):
            try:
                fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if not (_locked(fd) and _same(fd, Path(entry.path)) and stat.S_ISREG(os.fstat(fd).st_mode)):
                    continue  # its process lives (or another sweep has it)
                for path in _read(fd).split(b"\0"):
                    if path.startswith(b"/"):
                        remove(Path(os.fsdecode(path)))
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
            finally:
                os.close(fd)


def _locked(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _same(fd: int, path: Path) -> bool:
    """Whether ``path`` is still the file open at ``fd`` (not deleted by a sweep meanwhile)."""
    try:
        there, mine = os.stat(path, follow_symlinks=False), os.fstat(fd)
    except OSError:
        return False
    return (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino)


def _read(fd: int) -> bytes:
    """The whole list (it names what one process held at once: a few dozen paths)."""
    parts: list[bytes] = []
    while part := os.read(fd, 1 << 16):
        parts.append(part)
    return b"".join(parts)
