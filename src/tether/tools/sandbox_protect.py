"""The workspace's own control files, read-only inside the sandbox (``workspace-write``).

A writable workspace holds files that do not stay in the workspace: the next tether start reads
``.tether/`` (settings that widen what the model may do, extensions run in tether's own process,
skills and prompts) and ``.mcp.json`` (servers it starts), the user's own ``git`` runs what
``.git/`` says (hooks; ``core.fsmonitor``, ``core.hooksPath`` and aliases in its config; a
``commondir`` or a ``.git`` file naming another repository's folder, whose config then counts),
and pi and Claude Code read ``.pi/`` and ``.claude/`` (extensions, hooks, permissions), as tether
reads their skills and prompts and ``.agents/``. A confined command that could write them would
leave the sandbox at the next start or the next ``git status``. Codex keeps ``.git`` and its own
folder read-only in writable roots for this reason; so do we, for each writable root.

Two cases need more than a read-only mount of what exists:

- **a path that does not exist yet**: a bind mount needs something to mount on, and one created
  inside the sandbox lands in the real workspace. So tether makes a *placeholder* first (an empty
  folder, or an empty file for ``.mcp.json`` and a file's name, ``_file_name``; mode read-only,
  modified at the epoch: the marks that tell it from the user's own), mounts it read-only, and
  removes it when the command ends.
  Every tether process holds a shared ``flock`` on a placeholder while its command runs; only the
  last one out (an exclusive lock granted) removes it, so a command still running in another
  process never loses its mount (removing a mount point detaches it in every namespace). A
  placeholder left by a tether that was killed is taken over and removed by the next command,
  and by the first command of any later tether: those in the home folder, and those the killed
  one listed in its ledger, wherever they are (``sweep``, ``sandbox_ledger``).
- **a symbolic link** (``.tether -> config/tether``): its target is what tether would read, so
  the target is protected (resolved), and a missing target's first missing folder gets the
  placeholder.

A link is also what a reader finds next time, so it must stay: ``rm .tether; mkdir .tether``
(or ``~/.ssh -> dotfiles/ssh`` in a home workspace) would put a folder the command wrote where
the link was. A mount cannot be made on a link (it lands on the target), and only a mount point
or a read-only folder refuses an ``unlink``; so the folder holding such a link, a protected
entry or one on the way to a kept path inside a root, is mounted read-only, and its other
entries (but links, which it holds already) are bound back onto themselves, writable: nothing
in that folder can be removed, renamed or made beside them, what they hold stays writable.

Only each writable root's own entries are protected, not a ``.git`` or ``.tether`` deeper in the
tree (a nested repository): finding those would walk the workspace before every command.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from tether.tools.sandbox_ledger import LEDGER

PROTECTED_NAMES = (".tether", ".mcp.json", ".git", ".pi", ".claude", ".agents")
"""Entries of each writable root that stay read-only to confined commands (``docs/sandbox.md``
says what reads each)."""
FILE_NAMES = frozenset({".mcp.json"})
"""Protected names that are files: their placeholder is an empty file, so a write fails with
"Read-only file system" (the sandbox hint's cue) rather than "Is a directory"."""

WHAT_READS = {
    ".tether": "tether reads for settings, extensions, skills and prompts",
    ".mcp.json": "tether and other agents read for MCP servers to start",
    ".git": "git reads for hooks and configuration",
    ".pi": "pi reads for settings and extensions",
    ".claude": "Claude Code reads for settings, hooks and commands",
    ".agents": "agents read for skills",
}
"""Why each name is protected, for the approval question of a file tool's write."""

STARTUP_PATHS = {
    ".profile": "login shells run",
    ".bash_profile": "bash runs at login",
    ".bash_login": "bash runs at login",
    ".bash_logout": "bash runs at logout",
    ".bashrc": "bash runs at start",
    ".bash_aliases": "bash runs at start (from ~/.bashrc)",
    ".bashrc.d": "bash runs at start (from ~/.bashrc)",
    ".zshenv": "zsh runs at start",
    ".zprofile": "zsh runs at login",
    ".zshrc": "zsh runs at start",
    ".zlogin": "zsh runs at login",
    ".config/fish": "fish runs at start",
    ".gitconfig": "git reads for aliases, hooks and helpers to run",
    ".config/git": "git reads for aliases, hooks and helpers to run",
    ".local/bin": "login shells put first on PATH",
    ".local/lib": "Python runs at every start (user site-packages: .pth files, usercustomize.py)",
    ".pam_environment": "the login reads for the session's environment",
    ".xprofile": "the desktop session runs at login",
    ".xsessionrc": "the desktop session runs at login",
    ".xsession": "the desktop session runs at login",
    ".xinitrc": "startx runs",
    ".Xresources": "the desktop session loads at login",
    ".config/autostart": "the desktop session starts",
    ".config/plasma-workspace": "KDE Plasma runs at login and logout",
    ".local/share/applications": "the desktop runs to open files and applications",
    ".config/systemd": "the systemd user manager starts",
    ".local/share/systemd": "the systemd user manager starts",
    ".config/environment.d": "the systemd user manager reads for the session's environment",
    ".config/pip/pip.conf": "pip reads for where to install packages from",
    ".pip/pip.conf": "pip reads for where to install packages from",
    ".config/uv/uv.toml": "uv reads for where to install packages from",
    ".yarnrc.yml": "yarn reads for the program to run and where to fetch packages from",
    ".yarnrc": "yarn reads for the program to run and where to fetch packages from",
}
"""Relative to the home folder: what runs unconfined later (the user's next shell, login, git
call, desktop session or package install), kept read-only when a writable root holds it (tether
run in the home folder), and what reads each, for the approval question of a file tool's write."""
STARTUP_FOLDERS = frozenset(
    {
        ".bashrc.d",
        ".config/fish",
        ".config/git",
        ".local/bin",
        ".local/lib",
        ".config/autostart",
        ".config/plasma-workspace",
        ".local/share/applications",
        ".config/systemd",
        ".local/share/systemd",
        ".config/environment.d",
    }
)
PLACEHOLDER_FILES = frozenset(STARTUP_PATHS) - STARTUP_FOLDERS
"""Start-up paths that are files: a missing one's placeholder is an empty file, not a folder: a
folder ``~/.bashrc`` or ``~/.gitconfig`` would make bash complain and git stop while a command
runs (an empty file is what a reader takes for no file, but for ``~/.bash_profile``: a login
shell started meanwhile reads it instead of ``~/.profile``)."""
_PLACEHOLDER_FILE_NAMES = frozenset(Path(name).name for name in PLACEHOLDER_FILES)

PACKAGE = Path(__file__).parent.parent
"""The ``tether`` package's folder, found from this file: ``import tether`` here would make the
tools depend on every floor above them (the package's ``__init__`` imports them all)."""


def installation() -> tuple[Path, ...]:
    """tether's own installation, as named: the environment it runs in (``sys.prefix``: a venv,
    ``uv tool install``'s or pipx's), the Python that environment is made from
    (``sys.base_prefix``: ``uv``'s own Python lives in the home folder) and the ``tether``
    package when it lies elsewhere (run from a checkout through ``PYTHONPATH``). A writable
    workspace holding one (tether run in the home folder, or from the project's own ``.venv``)
    would let a confined command add a ``.pth`` file to site-packages or rewrite
    ``tether/__init__.py``: run unconfined at the next start. An editable install's source is
    left out: it is the project being worked on (developing tether with tether), its venv is
    not."""
    found = dict.fromkeys(
        Path(p) for p in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix)
    )
    if not any(PACKAGE.is_relative_to(prefix) for prefix in found) and not _editable(
        PACKAGE, tuple(sys.path)
    ):
        found[PACKAGE] = None
    return tuple(found)


@cache
def _editable(package: Path, path: tuple[str, ...]) -> bool:
    """Whether ``package`` is the source of an editable install: a ``tether`` distribution on
    ``path`` (``sys.path``) whose ``direct_url.json`` (PEP 610) says ``editable`` for a folder
    holding it. Read by hand, once a process, at its first command: ``importlib.metadata``
    would load ``zipfile``, ``shutil`` and ``tempfile`` for it."""
    import json
    from urllib.parse import unquote, urlsplit

    for folder in dict.fromkeys(path):
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue  # the standard library's zip, a folder gone
        for name in names:
            if not (name.startswith("tether-") and name.endswith(".dist-info")):
                continue
            try:
                with open(os.path.join(folder, name, "direct_url.json"), "rb") as file:
                    info: Any = json.load(file)
                url = urlsplit(str(info["url"]))
                if info["dir_info"]["editable"] is not True or url.scheme != "file":
                    continue
            except (OSError, ValueError, LookupError, TypeError):
                continue  # no such file (not a direct install), or not PEP 610's
            if Path(os.path.realpath(package)).is_relative_to(os.path.realpath(unquote(url.path))):
                return True
    return False


def is_repository(directory: Path) -> bool:
    """Whether ``directory`` is the top of a git work tree: its ``.git`` a folder holding ``HEAD``,
    or a file starting ``gitdir:`` (a linked worktree, a submodule), as git itself tells. An empty
    ``.git`` folder is not one: git looks further up, and so must the walks that look for the
    repository's root (``.gitignore`` rules, context files, the project root), since a command's
    placeholder (below) puts one in a subfolder workspace while the command runs."""
    git = directory / ".git"
    try:
        if git.is_dir():
            return (git / "HEAD").is_file()
        if not git.is_file():  # a FIFO would block the read
            return False
        with git.open("rb") as head:
            return head.read(7) == b"gitdir:"
    except OSError:
        return False


_PLACEHOLDER_MODE = 0o555
_FILE_PLACEHOLDER_MODE = 0o444


def protected_paths(roots: Sequence[Path]) -> list[tuple[Path, str]]:
    """``(path, name)`` for each protected entry of each (resolved) root: the entry itself and,
    when it is a symbolic link, its resolved target (what a reader would reach)."""
    found: list[tuple[Path, str]] = []
    for root in roots:
        for name in PROTECTED_NAMES:
            path = root / name
            found.append((path, name))
            if os.path.islink(path):
                found.append((Path(os.path.realpath(path)), name))
    return found


def inside(reals: Sequence[Path], roots: Sequence[Path]) -> list[Path]:
    """Of ``reals`` (resolved paths), those lying inside one of the (resolved) ``roots``, not a
    root itself: tether's own files in a workspace that holds them (tether run in the home
    folder, ``TETHER_HOME`` inside the project), where a confined command could otherwise write
    the extensions and settings the next start obeys, or create the key files it hides. One
    inside another of them is left out: that one's mount (or placeholder) covers it, where a
    placeholder of its own would appear in the real folder (a ``settings.json`` folder in the
    config folder while a command runs). Compared as text, each path's folders looked up in a
    set: this runs for every command, with some sixty paths in a home workspace (comparing each
    with every other was 3,600 ``is_relative_to`` calls, a third of the command's set-up)."""
    prefixes = tuple(str(root).rstrip("/") + "/" for root in roots)
    found = {text: path for path in reals if (text := str(path)).startswith(prefixes)}
    kept: list[Path] = []
    for text, path in found.items():
        folder = text.rpartition("/")[0]
        while folder and folder not in found:
            folder = folder.rpartition("/")[0]
        if not folder:
            kept.append(path)
    return kept


def protected_by(real: Path, roots: Sequence[Path]) -> str | None:
    """The protected name a resolved path lies in (``.git`` for ``.git/hooks/x``), or ``None``."""
    return _protected_in(real, protected_paths(roots))


def _protected_in(real: Path, controls: Sequence[tuple[Path, str]]) -> str | None:
    """``protected_by`` with the ``protected_paths`` looked up already (a link check each)."""
    for path, name in controls:
        if real == path or real.is_relative_to(path):
            return name
    return None


@dataclass(slots=True)
class Protection:
    """The mounts keeping one command's protected paths read-only, and the placeholders (with
    their locks) it holds until ``release``."""

    mounts: list[str] = field(default_factory=list[str])
    _held: list[tuple[Path, int, bool]] = field(default_factory=list[tuple[Path, int, bool]])
    """``(placeholder, locked descriptor, is a file)``."""

    @classmethod
    def take(
        cls,
        roots: Sequence[Path],
        *,
        placeholders: bool = True,
        extra: Sequence[Path] = (),
        named: Sequence[Path] = (),
        make: Sequence[Path] = (),
    ) -> Protection:
        """Read-only mounts for every protected path under ``roots`` (resolved); a missing one
        gets a placeholder (``placeholders``), else it is left out (a long-lived process that
        cannot hold one: an MCP server). ``extra``: further paths kept read-only when they lie
        inside a root (``inside``), a missing one by a placeholder folder at its first missing
        component. The folders between a root and what is kept read-only below it are bound
        onto themselves, writable still: a mount point cannot be renamed, and renaming its
        folder (``mv ~/.config ~/.c``) would take the read-only mount along and leave its path
        free to be made again. ``named``: ``extra`` as named, before resolving (in the same
        order), for the links on the way to them (``_links``). ``make``: of ``extra``, tether's
        own folders, made (``0700``) when missing rather than held by a placeholder: one left by
        a killed tether would keep tether itself from making them."""
        protection = cls()
        roots = [Path(os.path.realpath(r)) for r in roots]
        kept: list[Path] = []
        controls = protected_paths(roots)
        links = [link for path, real in zip(named, extra, strict=False) for link in _links(path, real, roots)]
        for real in inside(extra, roots):
            if _protected_in(real, controls) is not None:
                continue  # read-only with its control folder
            if real in make:
                with contextlib.suppress(OSError):
                    os.makedirs(real, 0o700, exist_ok=True)
            missing = _placeholder_for(real, roots) if placeholders else _first_missing(real)
            if missing is not None:
                if not placeholders:
                    continue
                try:
                    protection._hold(
                        missing,
                        is_file=missing == real
                        and (real.name in _PLACEHOLDER_FILE_NAMES or _file_name(real.name)),
                    )
                except OSError:
                    continue
            kept.append(missing or real)
        for root in roots:
            for name in PROTECTED_NAMES:
                entry = root / name  # the root is resolved: only a link here needs resolving
                try:
                    st: os.stat_result | None = os.lstat(entry)
                except OSError:
                    st = None
                if st is not None and stat.S_ISLNK(st.st_mode):
                    links.append(entry)
                    real = Path(os.path.realpath(entry))
                    if not any(real == r or real.is_relative_to(r) for r in roots):
                        continue  # a link out of the writable roots: read-only there already
                    missing = _first_missing(real)
                    is_file = missing == real and name in FILE_NAMES
                else:  # missing, or another command's placeholder (held too, so it stays)
                    real, is_file = entry, name in FILE_NAMES
                    missing = entry if st is None or (placeholders and _is_placeholder(st)) else None
                if missing is not None:
                    if not placeholders:
                        continue
                    try:
                        protection._hold(missing, is_file=is_file)
                    except OSError:
                        continue  # cannot make one (the root itself is read-only): nothing to protect
                kept.append(missing or real)
        read_only = dict.fromkeys(kept, True)
        for link in links:
            read_only[link.parent] = True
            read_only.update((child, False) for child in _entries(link.parent) if child not in read_only)
        for target in kept:
            read_only.update((folder, False) for folder in _between(target, roots) if folder not in read_only)
        # the shallower first: a mount made later on a folder would hide those made inside it
        for path in sorted(read_only, key=lambda p: len(p.parts)):
            protection.mounts += ["--ro-bind" if read_only[path] else "--bind", str(path), str(path)]
        return protection

    def _hold(self, path: Path, *, is_file: bool) -> None:
        """Make (or take over) the placeholder at ``path`` and hold a shared lock on it; an entry
        that appeared meanwhile and is not a placeholder is just mounted. Listed in this
        process's ledger first (``sandbox_ledger``): killed right after it is made, it is listed."""
        LEDGER.add(path)
        held = False
        try:
            held = self._take(path, is_file=is_file)
        finally:
            if not held:
                LEDGER.drop([path])

    def _take(self, path: Path, *, is_file: bool) -> bool:
        """``_hold``'s work; whether the placeholder is held."""
        for _ in range(5):
            try:
                if is_file:
                    fd = os.open(
                        path, os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, _FILE_PLACEHOLDER_MODE
                    )
                else:
                    os.mkdir(path, _PLACEHOLDER_MODE)
                    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
                try:
                    os.chmod(fd, _FILE_PLACEHOLDER_MODE if is_file else _PLACEHOLDER_MODE)  # past the umask
                    os.utime(fd, (0, 0))
                except OSError:
                    _remove([(path, fd, is_file)], marked=False)
                    raise
            except FileExistsError:
                try:
                    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
                except OSError as exc:
                    if exc.errno == errno.ENOENT:
                        continue  # removed by the command that made it: make it again
                    return False  # a link or unreadable: mounted as it is
                if not _is_placeholder(os.fstat(fd)):
                    os.close(fd)
                    return False  # the user's own (made meanwhile): mounted as it is
            fcntl.flock(fd, fcntl.LOCK_SH)
            try:
                current = os.stat(path, follow_symlinks=False)
            except OSError:
                current = None
            held = os.fstat(fd)
            if current is not None and (current.st_dev, current.st_ino) == (held.st_dev, held.st_ino):
                self._held.append((path, fd, is_file))
                return True
            os.close(fd)  # removed (and maybe made again) while we waited for the lock: retry
        raise OSError(errno.EAGAIN, "placeholder kept changing", str(path))

    def release(self) -> None:
        """Remove the placeholders no other command holds, and close every lock, in a thread:
        freeing a removed folder waits on the file system's journal (2-6 ms on ext4 under load,
        almost no CPU), which the command's result need not wait for. The thread is not a
        daemon, so an exiting tether still removes them."""
        if not self._held:
            return
        import threading

        held, self._held = self._held, []
        threading.Thread(target=_release, args=(held,), name="tether-placeholders").start()


def _release(held: list[tuple[Path, int, bool]]) -> None:
    """Remove what nobody else holds, then take it off the ledger (in that order: a kill in
    between leaves a path listed that is gone, never one there unlisted)."""
    _remove(held)
    LEDGER.drop([path for path, _, _ in held])


def _remove(held: list[tuple[Path, int, bool]], *, marked: bool = True) -> None:
    """Remove each placeholder that nobody else holds and that is still the entry at its path
    (``marked``: still bearing the placeholder's marks); close its descriptor either way."""
    for path, fd, is_file in held:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            mine, there = os.fstat(fd), os.stat(path, follow_symlinks=False)
            if (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino) and (
                not marked or _is_placeholder(mine)
            ):
                if is_file:
                    os.unlink(path)
                else:
                    os.rmdir(path)
        os.close(fd)


@cache
def sweep(paths: tuple[Path, ...]) -> None:
    """Remove the placeholders a killed tether left at ``paths`` (resolved) or their nearest
    existing folder above, once a process and whatever the workspace: left in the home folder,
    an empty read-only ``~/.ssh`` or ``~/.aws`` keeps ssh, ``aws configure`` and tether itself
    from making theirs until a command runs there again; so are the home folder's own control
    entries (``~/.git``...). One a running command holds (its shared lock) stays: ``_remove``
    takes only an exclusive lock nobody else has."""
    _sweep_ledgers()
    home = Path(os.path.realpath(os.path.expanduser("~")))
    for path in (*paths, *(home / name for name in PROTECTED_NAMES)):
        for candidate in (path, *path.parents):
            try:
                st = os.lstat(candidate)
            except OSError:
                continue
            _remove_left(candidate, st)
            break


@cache
def _sweep_ledgers() -> None:
    """Once a process: what killed tethers listed anywhere (``sandbox_ledger``), outside the
    home folder too."""
    from tether.tools.sandbox_ledger import sweep_lists

    def remove(path: Path) -> None:
        with contextlib.suppress(OSError):
            _remove_left(path, os.lstat(path))

    sweep_lists(remove)


def _remove_left(path: Path, st: os.stat_result) -> None:
    """Remove the placeholder at ``path`` (``st``: its ``lstat``) if it is one nobody holds."""
    if _is_placeholder(st):
        with contextlib.suppress(OSError):
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            _remove([(path, fd, not stat.S_ISDIR(st.st_mode))])


def _file_name(name: str) -> bool:
    """Whether a missing path kept read-only is a file's (``auth.json``, ``.netrc``, ``.npmrc``,
    ``.git-credentials``): its placeholder is then an empty file, so a killed tether's leftover
    cannot stand as a folder where a program would make the file. A ``.d`` name is a folder of
    snippets (``~/.bashrc.d``, ``~/.config/environment.d``)."""
    if name.endswith(".d"):
        return False
    return "." in name.lstrip(".") or name.endswith(("rc", "-credentials"))


def _between(path: Path, roots: Sequence[Path]) -> list[Path]:
    """The folders between the root holding ``path`` and ``path``, from the top down."""
    root = max((r for r in roots if path.is_relative_to(r)), key=lambda r: len(r.parts))
    return list(reversed(path.parents[: len(path.parents) - len(root.parents) - 1]))


def _links(named: Path, real: Path, roots: Sequence[Path]) -> list[Path]:
    """The symbolic links on the way to ``named`` (resolved ``real``) that lie inside a root, at
    their real place: a command could replace each with a folder of its own. Looked for only
    when the two differ as text (a link somewhere), so the usual path costs no system call."""
    if str(named) == str(real) or os.path.normpath(named) == str(real):
        return []
    named = Path(os.path.normpath(named))
    prefixes = tuple(str(root).rstrip("/") + "/" for root in roots)
    found: list[Path] = []
    current = Path(named.anchor)
    for part in named.parts[1:]:
        step = current / part
        if not os.path.islink(step):
            current = step
            continue
        if str(step).startswith(prefixes):
            found.append(step)
        current = Path(os.path.realpath(step))
    return found


def _entries(folder: Path) -> list[Path]:
    """The folders and files in ``folder`` (not its links: bound, they would open their targets)."""
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        return [
            Path(entry.path)
            for entry in entries
            if entry.is_dir(follow_symlinks=False) or entry.is_file(follow_symlinks=False)
        ]
    return []


def _first_missing(real: Path) -> Path | None:
    """The first component of ``real`` that does not exist (``None``: it all exists)."""
    if os.path.lexists(real):
        return None
    missing = real
    for parent in real.parents:
        if os.path.lexists(parent):
            return missing
        missing = parent
    return missing


def _placeholder_for(real: Path, roots: Sequence[Path]) -> Path | None:
    """Where ``real`` (inside a root) needs a placeholder: at the top of its folders below the
    root that one a killed tether left (taken over, then removed), else at its first missing
    component (``None``: it exists)."""
    for folder in [*_between(real, roots), real]:
        try:
            if _is_placeholder(os.lstat(folder)):
                return folder
        except OSError:
            break
    return _first_missing(real)


def _is_placeholder(st: os.stat_result) -> bool:
    """A read-only entry modified at the epoch, and empty: one tether made (the user's own are
    not dated 1970; adding to a folder dates it, and ``rmdir`` refuses a folder with entries)."""
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISDIR(st.st_mode):
        return mode == _PLACEHOLDER_MODE and st.st_mtime == 0
    return (
        stat.S_ISREG(st.st_mode) and mode == _FILE_PLACEHOLDER_MODE and st.st_size == 0 and st.st_mtime == 0
    )
