"""Opening the file ``Workspace.resolve`` checked, and no other.

``resolve`` follows links to a real path and checks that path; the tool then opens it by name. In
between, a command running in the same batch of tool calls (``bash`` runs confined, without a
question, beside ``read`` and ``write``) can turn a name into a link: ``ln -sfn ~/.ssh/id_ed25519
f`` in a loop while ``read f`` is called read the key the sandbox hides, and the same against
``write`` wrote ``~/.bashrc``. So the file is opened relative to a descriptor of its folder that is
checked to be the folder resolved (its ``/proc/self/fd`` link), with ``O_NOFOLLOW`` on its own
name: whatever a link says at that moment, what is opened is the path that was checked.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from tether.own_files import opened_path

_CHANGED = "it changed into a link or moved while it was opened; not followed"


def open_resolved(real: Path, flags: int) -> int:
    """A descriptor of ``real`` (a path ``Workspace.resolve`` returned) opened with ``flags``
    (``O_CREAT`` creates it, never through a link); raises ``OSError`` when the path is no longer
    what was resolved, or is not a regular file."""
    folder = os.open(real.parent, getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        where = opened_path(folder)
        if where is not None and where != real.parent:
            raise OSError(errno.ELOOP, _CHANGED)
        fd = os.open(real.name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666, dir_fd=folder)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a link where a file was resolved
            raise OSError(errno.ELOOP, _CHANGED) from None
        raise
    finally:
        os.close(folder)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file (a pipe, socket or device)")
    return fd  # O_NONBLOCK (a FIFO put there must not block the open) does nothing to a file


def open_folder(real: Path) -> int:
    """A descriptor of the folder ``real`` (a path ``Workspace.resolve`` returned) to list, checked
    as ``open_resolved`` checks a file's folder; raises ``OSError`` when it is no longer the folder
    resolved (``ls`` listed by name, and a folder swapped for a link to one the sandbox hides was
    listed)."""
    try:
        fd = os.open(real, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:  # a link: ELOOP, or ENOTDIR with O_DIRECTORY
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(real):
            raise OSError(errno.ELOOP, _CHANGED) from None
        raise
    where = opened_path(fd)
    if where is not None and where != real:
        os.close(fd)
        raise OSError(errno.ELOOP, _CHANGED)
    return fd


def make_parents(real: Path) -> None:
    """Create the missing folders above ``real`` (a path ``Workspace.resolve`` returned), one at
    a time, each in a descriptor of the folder above it checked as ``open_resolved`` checks, never
    through a link: ``Path.mkdir(parents=True)`` followed a link put where a missing folder was
    resolved, and created folders outside the workspace before the checked open refused the file."""
    missing: list[str] = []
    existing = real.parent
    while not existing.is_dir():
        missing.append(existing.name)
        existing = existing.parent
    if not missing:
        return
    folder = os.open(existing, getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        where = opened_path(folder)
        if where is not None and where != existing:
            raise OSError(errno.ELOOP, _CHANGED)
        for name in reversed(missing):
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, dir_fd=folder)
            try:
                inner = os.open(
                    name,
                    getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                    dir_fd=folder,
                )
            except OSError as exc:  # a link: ELOOP, or ENOTDIR with O_PATH (the link itself is opened)
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and stat.S_ISLNK(
                    os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
                ):
                    raise OSError(errno.ELOOP, _CHANGED) from None
                raise
            os.close(folder)
            folder = inner
    finally:
        os.close(folder)


def read_resolved(real: Path) -> bytes:
    """The bytes of the file at ``real`` (see ``open_resolved``)."""
    with open(open_resolved(real, os.O_RDONLY), "rb", buffering=0) as handle:
        return handle.readall()


def write_resolved(real: Path, data: bytes) -> None:
    """Replace the content of the file at ``real`` with ``data``, creating it if need be (see
    ``open_resolved``: it is truncated only once it is known to be the file resolved)."""
    with os.fdopen(open_resolved(real, os.O_WRONLY | os.O_CREAT), "wb") as handle:
        handle.truncate(0)
        handle.write(data)
