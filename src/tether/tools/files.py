"""Listing the files of a tree the way ``git`` sees it: ``.gitignore`` rules respected.

Search tools that wander into ``node_modules``, ``.venv`` or build output waste the model's
context and the user's time, so ``grep`` and ``find`` walk the tree through this module. It
implements git's ignore rules (nested ``.gitignore`` files, negation, directory-only and anchored
patterns, ``**``) without needing ``git``, so it works in any directory, repository or not.
``.git`` itself is always skipped. Symbolic links are not followed into directories, and a link
whose target lies outside the workspace is left out, so a search cannot leak what ``read`` refuses;
for the same reason what the sandbox hides (credentials in a workspace that is the home folder,
another session's workspace a link points to) is left out, even with ``--allow-outside``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tether.tools.globs import glob_to_regex
from tether.tools.sandbox_protect import is_repository
from tether.tools.workspace import Workspace


@dataclass(frozen=True, slots=True)
class IgnoreRule:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


@dataclass(frozen=True, slots=True)
class IgnoreFile:
    """The rules of one ``.gitignore``; ``base`` is its directory relative to the walk's root."""

    base: str
    rules: tuple[IgnoreRule, ...]


def parse_gitignore(text: str, base: str = "") -> IgnoreFile:
    """Parse ``.gitignore`` text into rules matched against paths relative to ``base``."""
    rules: list[IgnoreRule] = []
    for raw in text.splitlines():
        line = _strip_trailing_spaces(raw)
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate:
            line = line[1:]
        elif line.startswith("\\"):
            line = line[1:]  # "\#" and "\!" name files starting with those characters
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        body = glob_to_regex(line.lstrip("/"))
        prefix = "" if anchored else "(?:.*/)?"
        rules.append(IgnoreRule(re.compile(prefix + body + r"\Z", re.DOTALL), negate, dir_only))
    return IgnoreFile(base, tuple(rules))


def is_ignored(path: str, is_dir: bool, stack: list[IgnoreFile]) -> bool:
    """Whether ``path`` (relative to the walk's root) is ignored by the rules in ``stack``.

    Files deeper in the tree override shallower ones and, within a file, the last matching line
    wins; that is git's precedence.
    """
    for ignore in reversed(stack):
        if ignore.base:
            if not path.startswith(ignore.base + "/"):
                continue
            relative = path[len(ignore.base) + 1 :]
        else:
            relative = path
        for rule in reversed(ignore.rules):
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.match(relative):
                return not rule.negate
    return False


def walk_files(workspace: Workspace, start: Path) -> Iterator[Path]:
    """Yield the files under ``start`` (a real directory) that git would not ignore.

    Order is stable: depth first, entries of each directory by name.
    """
    root = _ignore_root(workspace, start)
    stack = [f for f in (_load(directory, root) for directory in _ancestors(start, root)) if f]
    yield from _walk(workspace, start, root, stack, workspace.hidden_paths)


def _walk(
    workspace: Workspace,
    directory: Path,
    root: Path,
    stack: list[IgnoreFile],
    hidden: frozenset[str],
    veiled: bool = False,
) -> Iterator[Path]:
    """``veiled``: ``directory`` is hidden, entered only for the workspace roots below it; each
    entry is then asked of ``Workspace.hiding`` (elsewhere the set ``hidden`` is the cheap test)."""
    own = _load(directory, root)
    if own is not None:
        stack = [*stack, own]
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.name == ".git":
            continue
        path = Path(entry.path)
        inner_veiled = False
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            if (veiled or entry.path in hidden) and workspace.hiding(path) is not None:
                if not (is_dir and workspace.holds_root(path)):
                    continue
                inner_veiled = True
            if entry.is_symlink():
                target = Path(os.path.realpath(path))
                if not workspace.allow_outside and not workspace.contains(target):
                    continue
                if workspace.hiding(target) is not None:
                    continue
                if target.is_dir():
                    continue  # never descend through links: cycles, and trees counted twice
        except OSError:
            continue
        relative = path.relative_to(root).as_posix()
        if is_ignored(relative, is_dir, stack):
            continue
        if is_dir:
            yield from _walk(workspace, path, root, stack, hidden, inner_veiled)
        elif _is_regular_file(entry):  # never a FIFO or a device: reading one would block
            yield path


def _is_regular_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def _ignore_root(workspace: Workspace, start: Path) -> Path:
    """Where ``.gitignore`` rules start to apply: the repository holding ``start``, else the
    workspace root (or ``start`` itself when it lies outside the workspace)."""
    for directory in (start, *start.parents):
        if is_repository(directory):
            return directory
        if directory == workspace.real_root:
            return directory
    return start


def _ancestors(start: Path, root: Path) -> list[Path]:
    """Directories from ``root`` down to ``start``'s parent (their rules apply to ``start``)."""
    if start == root:
        return []
    chain = [p for p in start.parents if p == root or p.is_relative_to(root)]
    return list(reversed(chain))


def _load(directory: Path, root: Path) -> IgnoreFile | None:
    try:
        text = (directory / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    base = directory.relative_to(root).as_posix()
    return parse_gitignore(text, "" if base == "." else base)


def _strip_trailing_spaces(line: str) -> str:
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        return stripped[:-1] + " "  # "foo\ " keeps one escaped space
    return stripped
