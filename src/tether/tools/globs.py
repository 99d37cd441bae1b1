"""Glob patterns as regular expressions, with git's meaning of ``*``, ``**``, ``?`` and ``[...]``.

One translation serves both ``.gitignore`` lines and the ``find`` tool, so "what does ``**``
mean" has one answer in the whole tool set: ``*`` and ``?`` never cross a ``/``; ``**/`` is any
number of directories (including none); a trailing ``/**`` is everything inside.
"""

from __future__ import annotations

import re


def glob_to_regex(pattern: str) -> str:
    """Regex source (without anchors) matching the same ``/``-separated paths as ``pattern``."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if pattern.startswith("**", i) and (i == 0 or pattern[i - 1] == "/"):
            after = i + 2
            if after == n:  # trailing "**": everything
                out.append(".*")
                i = after
                continue
            if pattern[after] == "/":  # "**/": zero or more directories
                out.append("(?:.*/)?")
                i = after + 1
                continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = _class_end(pattern, i)
            if end < 0:
                out.append(re.escape(char))
            else:
                body = pattern[i + 1 : end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        elif char == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A compiled full-match regex for ``pattern`` over relative ``/``-separated paths."""
    return re.compile(glob_to_regex(pattern) + r"\Z", re.DOTALL)


def _class_end(pattern: str, start: int) -> int:
    """Index of the ``]`` closing the class opened at ``start``, or -1 if it is not closed."""
    i = start + 1
    if i < len(pattern) and pattern[i] in "!^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern):
        if pattern[i] == "]":
            return i
        i += 1
    return -1
