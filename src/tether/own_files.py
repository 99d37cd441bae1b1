"""Files tether reads on its own: context files, skills, prompt templates, a project's settings and
``.mcp.json``; and how it writes its own (``write_own_file``).

Nobody named these files: tether finds them by where they are, often in folders a cloned
repository controls, and their text goes to the provider and into the session store. So they
follow the same policy as the ``read`` tool (``tether.tools.workspace``) rather than "whatever
the name points at":

- the file's real path (symbolic links followed) lies inside one of the allowed folders (the
  project, the user's config folder), so ``CLAUDE.md -> ~/.aws/credentials`` is refused;
- it is a regular file: not a FIFO (opening one for reading blocks until a writer comes), a
  device, a socket, nor anything under ``/proc``, ``/sys`` or ``/dev``, whose files claim a size
  of 0 and hold, for ``/proc/self/environ``, every API key of this process;
- it is at most ``MAX_FILE_BYTES`` (a sparse 1 GB file costs nothing to make);
- it is none of the ``hidden`` paths the caller names (credentials, tether's own files with
  keys), even inside an allowed folder: the project may be the home folder, and the user's
  config folder holds ``models.json`` beside the user's skills.

The checks are made on the opened descriptor (its ``/proc/self/fd`` link and ``fstat``), so a
link swapped between the check and the read does not get through; the open itself never blocks
(``O_NONBLOCK``) and never makes a terminal ours (``O_NOCTTY``).

A leaf beside ``tether.errors``, not part of a layer, because readers and writers on both sides of
the layers use it: ``session`` (context files, skills, settings, exports), ``ai`` (``auth.json``)
and ``mcp`` (``.mcp.json``, OAuth tokens).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from tether.errors import UserError

MAX_FILE_BYTES = 1 << 20
"""Context, skill and prompt files larger than this are refused unread: real ones are a few KB,
and 1 MB is some 250k tokens, more than a context window."""

_SPECIAL_TREES = (Path("/proc"), Path("/sys"), Path("/dev"))
_SPECIAL = "not a regular file (a pipe, socket or device)"


class RefusedFile(UserError, ValueError):
    """A file tether would read on its own is not one it may read; the message says why."""


class FileTooLargeError(RefusedFile):
    """The file is larger than the limit."""


def present(path: Path) -> bool:
    """Whether there is something at ``path`` for the reader to read or refuse: anything but a
    folder, so a FIFO, a device or a link to nothing (its target moved, a loop) is found and
    reported by ``read_own_file`` rather than passed over in silence. One ``lstat`` when there is
    nothing."""
    try:
        return os.path.lexists(path) and not path.is_dir()
    except OSError:
        return False


def read_own_file(
    path: Path, roots: Sequence[Path] | None, limit: int = MAX_FILE_BYTES, hidden: Sequence[Path] = ()
) -> bytes:
    """The bytes of ``path`` under the policy above.

    Args:
        path: The file, as found.
        roots: Folders its real path must lie in; ``None``: anywhere (the user's own files, such
            as their global ``AGENTS.md``, which may well link into a dotfiles repository). The
            special-file and size checks apply either way.
        limit: The largest size read.
        hidden: Paths (files or folders) never read, wherever the file lies.

    Raises ``RefusedFile`` (one line, naming the reason but never the content) or ``OSError``
    (missing, unreadable)."""
    _check_real(Path(os.path.realpath(path)), roots, hidden)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        opened = opened_path(fd)
        if opened is not None:
            _check_real(
                opened, roots, hidden
            )  # the file actually opened, whatever the link said a moment ago
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RefusedFile("not a regular file (a pipe, socket or device)")
        if info.st_size > limit:
            raise FileTooLargeError(f"larger than {_size(limit)}, not read")
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 16, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:  # grew since fstat
            raise FileTooLargeError(f"larger than {_size(limit)}, not read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _check_real(real: Path, roots: Sequence[Path] | None, hidden: Sequence[Path]) -> None:
    if any(real == tree or real.is_relative_to(tree) for tree in _SPECIAL_TREES):
        raise RefusedFile(f"resolves to {real}, a system file (/proc, /sys, /dev), not read")
    for secret in (Path(os.path.realpath(h)) for h in hidden):
        if real == secret or real.is_relative_to(secret):
            raise RefusedFile(f"resolves to {real}, which holds credentials or tether's keys; not read")
    if roots is None:
        return
    real_roots = [Path(os.path.realpath(root)) for root in roots]
    if not any(real == root or real.is_relative_to(root) for root in real_roots):
        where = ", ".join(str(root) for root in real_roots)
        raise RefusedFile(f"resolves through a symbolic link to {real}, outside {where}; not read")


def opened_path(fd: int) -> Path | None:
    """Where the descriptor really points (Linux); ``None`` where ``/proc`` cannot tell."""
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    return Path(target) if target.startswith("/") else None


def _size(limit: int) -> str:
    return f"{limit // (1 << 20)} MB" if limit >= 1 << 20 else f"{limit} bytes"


def make_own_folder(path: Path) -> None:
    """``mkdir -p path``, each folder it makes private (0700, what the XDG base directory spec asks
    of a folder made on demand): the data folder holds the session database, whose transcripts
    keep whatever the user pasted (keys, tokens); pi 1.6 makes ``~/.pi/agent/sessions`` 0755 and
    only its ``auth.json`` 0600. A folder already there keeps its mode: the user chose it."""
    if path.is_dir():
        return
    if path.parent != path:
        make_own_folder(path.parent)
    path.mkdir(mode=0o700, exist_ok=True)  # made meanwhile by another process: theirs


def create_own_file(path: Path) -> None:
    """A new, empty file at ``path`` (an empty file is a valid SQLite database) readable by its
    owner alone (0600), in a folder made 0700 if it has to be made (``make_own_folder``): tether's
    databases keep what the user pasted (keys, tokens) and were 0644 in a 0755 folder. A file
    already there keeps its mode: the user chose it (a database shared with a group on purpose).
    Raises ``OSError`` if the folder cannot be made; a file that cannot be made is left to the
    caller's open to explain (made meanwhile by another process: theirs)."""
    make_own_folder(path.parent)
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))


def write_own_file(path: Path, chunks: Iterable[bytes], *, through_link: bool = False) -> None:
    """Write ``chunks`` to ``path`` whole or not at all: into a new temporary file beside it, then
    renamed over it. The temporary file is created under a name of its own (``mkstemp``: exclusive,
    no link followed), never opened by a fixed or pid-based name: a link planted at ``path.tmp``
    once sent an export into the file it pointed to, and a fixed name unlinked first let two
    tethers writing at once rename each other's half-written file. A link at ``path`` is replaced,
    not written through. The file is the user's alone (0600, ``mkstemp``'s mode): it may hold a
    key, a token or what the user pasted into a transcript. A pipe, socket or device at ``path``
    (``--export s.jsonl /dev/null``, ``-o /dev/stdout``, a FIFO), or a link to one, is refused:
    renamed over, it was replaced by a regular file, which for root is ``/dev/null`` gone for
    every process. ``through_link`` (a file the user named: an export): a link at ``path`` is
    written through instead (``_write_through``). Failure raises ``OSError`` naming ``path``."""
    import tempfile  # only when writing: not loaded by a run that writes nothing

    try:
        special = not stat.S_ISREG(mode := os.stat(path).st_mode) and not stat.S_ISDIR(mode)
    except OSError:  # nothing there (or a link to nothing): the file is made
        special = False
    if special:
        raise OSError(f"cannot write {path}: {_SPECIAL}")
    if through_link and os.path.islink(path):
        return _write_through(path, chunks)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise OSError(f"cannot write {path}: {err.strerror or err}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
        os.replace(tmp, path)
    except BaseException as err:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise OSError(f"cannot write {path}: {err.strerror or err}") from None
        raise


def _write_through(path: Path, chunks: Iterable[bytes]) -> None:
    """Write ``chunks`` into the file the link at ``path`` points to, in place, as ``cp``, ``>``
    and pi do: an export named through a link (``latest.jsonl -> runs/monday.jsonl``) is meant
    for its target, and renamed over, the link was lost. The file written is the descriptor the
    kernel opened through the link, checked with ``fstat`` to be a regular file: the path is not
    resolved again after that open, so a link swapped meanwhile cannot send the bytes elsewhere.
    Written in place (the file keeps its mode and other links), so a failure midway leaves part
    of it, as ``cp`` does. A link to nothing is refused, as ``cp`` refuses it: its author, not
    the user, chose where the new file would be made."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        why = err.strerror or str(err)
        if err.errno == errno.ENOENT:  # the link is there (``islink``): its target is not
            why = "a link to nothing; not written through"
            with contextlib.suppress(OSError):  # read only to name it: the open judged already
                why = f"it links to {os.readlink(path)}, which does not exist; not written through"
        elif err.errno == errno.ENXIO:  # a FIFO nobody reads, a socket
            why = _SPECIAL
        raise OSError(f"cannot write {path}: {why}") from None
    with os.fdopen(fd, "wb") as out:
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EINVAL, _SPECIAL)
            out.truncate(0)
            for chunk in chunks:
                out.write(chunk)
            out.flush()
        except OSError as err:
            raise OSError(f"cannot write {path}: {err.strerror or err}") from None
