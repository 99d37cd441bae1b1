"""The files ``@`` offers as you type: listed once, in the background, and matched fuzzily.

Listing is git's when the directory is in a repository (``git ls-files --cached --others
--exclude-standard``: tracked and untracked files, ``.gitignore`` respected, about 0.1 s for
100,000 files), otherwise a walk that skips hidden folders and the usual heavy ones and applies the
top-level ``.gitignore``'s simple patterns. It runs on a thread started with the interactive mode,
so the first keystroke never waits on it; until it is done ``@`` completes nothing from it.

Matching (``search``) ranks a query found in a file's name above one found in its path, and those
above a fuzzy match (the query's characters in order, as pi's ``@`` does). The substring search
is one scan, in C, of all the paths joined into one string; the fuzzy one runs only when that
found too little, and tests a path's letters in order only when a bit mask of its characters
holds all of the query's. At 100,000 files a keystroke costs a few milliseconds (about 50 ms
in the worst case: common letters, in an order no path has).
"""

from __future__ import annotations

import bisect
import fnmatch
import itertools
import os
import re
import subprocess
import threading
from pathlib import Path

MAX_FILES = 200_000
"""A listing stops here: beyond it the tree is not a project a person types paths of."""
CANDIDATES = 2_000
"""Matches ranked for one search: enough to find the best 50, few enough to sort per keystroke."""
SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "target", "dist", "build", "venv"})


class FileIndex:
    """The files under ``root`` (relative paths, ``/``-separated), with their folders."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._paths: list[str] = []
        self._lowered: list[str] = []
        self._blob = ""
        """Every path, lowered, one a line: what a search scans."""
        self._starts: list[int] = []
        self._masks: list[int] = []
        """Per path, a bit per character it contains (``_mask``): a fuzzy search's first test."""
        self._top: list[str] = []
        """The top level's folders and files: what a bare ``@`` offers."""
        """Where each path starts in ``_blob``."""
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """List the files on a daemon thread (it holds nothing that needs closing)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._build, name="tether-file-index", daemon=True)
            self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        return self._ready.wait(timeout)

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def _build(self) -> None:
        try:
            files = _git_files(self.root)
            if files is None:
                files = _walk(self.root)
            folders = {parent for path in files for parent in _parents(path)}
            paths = sorted(folders) + files
            self._lowered = [path.lower() for path in paths]
            self._blob = "\n".join(self._lowered)
            self._starts = list(itertools.accumulate((len(p) + 1 for p in self._lowered[:-1]), initial=0))
            self._top = [p for p in paths if "/" not in p.rstrip("/")]
            self._masks = [_mask(path) for path in self._lowered]
            self._paths = paths
        finally:
            self._ready.set()

    def search(self, query: str, limit: int = 50) -> list[str]:
        """Paths matching ``query``, best first: the name starts with it, the name contains it,
        the path does, its characters appear in order (shorter paths first within each, among
        the first ``CANDIDATES`` found). Folders end with ``/``. Empty until the listing is done."""
        if not self._ready.is_set():
            return []
        paths = self._paths
        needle = query.lower()
        if not needle:
            return self._top[:limit]
        hits = self._lines(re.escape(needle))
        name_first: list[int] = []
        in_name: list[int] = []
        in_path: list[int] = []
        for index in hits:
            path = self._lowered[index]
            name = path[path.rstrip("/").rfind("/") + 1 :]
            if name.startswith(needle):
                name_first.append(index)
            else:
                (in_name if needle in name else in_path).append(index)
        found = [
            i for tier in (name_first, in_name, in_path) for i in sorted(tier, key=lambda i: len(paths[i]))
        ]
        if len(found) < limit:
            seen = set(found)
            wanted = _mask(needle)
            lowered = self._lowered
            fuzzy: list[int] = []
            for index, mask in enumerate(self._masks):  # the mask test skips most paths cheaply
                if mask & wanted == wanted and index not in seen and in_order(needle, lowered[index]):
                    fuzzy.append(index)
                    if len(fuzzy) >= CANDIDATES:
                        break
            found += sorted(fuzzy, key=lambda i: len(paths[i]))
        return [paths[i] for i in found[:limit]]

    def _lines(self, pattern: str) -> list[int]:
        """Indexes of the paths (at most ``CANDIDATES``) in which ``pattern`` matches: one
        regular-expression scan over all of them joined, in C, instead of a test per path."""
        blob, starts = self._blob, self._starts
        found: list[int] = []
        last = -1
        for match in re.finditer(pattern, blob):
            index = bisect.bisect_right(starts, match.start()) - 1
            if index != last:
                found.append(index)
                last = index
                if len(found) >= CANDIDATES:
                    break
        return found


def _mask(text: str) -> int:
    """A bit for each character of ``text`` (folded onto 64 bits: a shared bit only lets more
    paths through to the exact test)."""
    mask = 0
    for char in set(text):
        mask |= 1 << (ord(char) & 63)
    return mask


def in_order(needle: str, haystack: str) -> bool:
    """The characters of ``needle`` appear in ``haystack`` in that order (a fuzzy match)."""
    position = 0
    for char in needle:
        position = haystack.find(char, position) + 1
        if position == 0:
            return False
    return True


def _parents(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: n + 1]) + "/" for n in range(len(parts))]


def _git_files(root: Path) -> list[str] | None:
    """The files git would show (tracked and untracked, ignored ones left out); ``None`` when
    ``root`` is not in a repository or git is missing."""
    try:
        done = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--deduplicate"],
            cwd=root,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    names = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    return [name for name in names if name][:MAX_FILES]


def _walk(root: Path) -> list[str]:
    ignored = _top_level_ignores(root)
    files: list[str] = []
    for directory, dirs, names in os.walk(root):
        relative = os.path.relpath(directory, root)
        prefix = "" if relative == "." else relative.replace(os.sep, "/") + "/"
        dirs[:] = [
            d
            for d in dirs
            if not d.startswith(".") and d not in SKIPPED_DIRS and not _ignored(prefix + d, d, ignored)
        ]
        for name in names:
            if not name.startswith(".") and not _ignored(prefix + name, name, ignored):
                files.append(prefix + name)
                if len(files) >= MAX_FILES:
                    return files
    return files


def _top_level_ignores(root: Path) -> list[str]:
    try:
        text = (root / ".gitignore").read_text(errors="replace")
    except OSError:
        return []
    lines = (line.strip() for line in text.splitlines())
    return [line.strip("/") for line in lines if line and not line.startswith(("#", "!"))]


def _ignored(path: str, name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(path, p) for p in patterns)
