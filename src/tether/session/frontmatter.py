"""Front matter of skill and prompt files: the ``key: value`` subset of YAML between ``---`` lines.

Skills (``SKILL.md``) and prompt templates carry a few string fields (``name``, ``description``,
``argument-hint``...). PyYAML is not one of tether's dependencies and importing it would cost
start-up time for a handful of strings, so this reads the subset those files use: ``key: value``
with plain, single- or double-quoted values, block scalars (``|``, ``>``, with ``-``/``+``), and
nested blocks (an indented ``metadata:`` map, a list), which are kept as their raw text. Anything
else is an error naming the line, so a broken file is reported instead of half-read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from tether.errors import UserError
from tether.own_files import read_own_file

_KEY = re.compile(r"^([A-Za-z_][\w.-]*)\s*:(?:\s+(.*))?$")


class FrontMatterError(UserError, ValueError):
    """The front matter is not the ``key: value`` subset; the message names the line."""


def read_markdown(path: Path, roots: Sequence[Path] | None = None, hidden: Sequence[Path] = ()) -> str:
    """The text of a skill or prompt file, read under ``tether.own_files``'s policy
    (a repository's ``.pi/skills`` is read on every start without any trust): real path within
    ``roots`` (``None``: anywhere) and none of ``hidden``, a regular file, no larger than
    ``own_files.MAX_FILE_BYTES``.

    Raises ``RefusedFile`` (``FileTooLargeError`` for a larger file), ``UnicodeDecodeError`` for
    one that is not UTF-8, ``OSError`` for one that cannot be read."""
    return read_own_file(path, roots, hidden=hidden).decode("utf-8")


def split_front_matter(text: str) -> tuple[dict[str, str], str]:
    """``(fields, body)``: no front matter gives ``({}, text)``; a broken one raises."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].rstrip() != "---":
        return {}, text
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "..."))
    except StopIteration:
        raise FrontMatterError("front matter opened with --- is never closed") from None
    return _fields(lines[1:end]), "\n".join(lines[end + 1 :]).lstrip("\n")


def _fields(lines: list[str]) -> dict[str, str]:
    fields: dict[str, str] = {}
    index = 0
    while index < len(lines):
        line = lines[index]
        number = index + 2  # the opening --- is line 1
        index += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[0] in " \t":
            raise FrontMatterError(f"line {number}: unexpected indentation")
        match = _KEY.match(line.rstrip())
        if match is None:
            raise FrontMatterError(f"line {number}: expected `key: value`, got {line.strip()!r}")
        key, value = match.group(1), (match.group(2) or "").strip()
        block: list[str] = []
        while index < len(lines) and (not lines[index].strip() or lines[index][0] in " \t"):
            block.append(lines[index])
            index += 1
        if value[:1] in ("|", ">") and re.fullmatch(r"[|>][+-]?", value):
            fields[key] = _block_scalar(value, block)
        elif block and value == "":
            fields[key] = "\n".join(b.strip() for b in block if b.strip())  # nested: raw text
        else:
            continuation = " ".join(b.strip() for b in block if b.strip())
            fields[key] = _scalar(f"{value} {continuation}".strip() if continuation else value, number)
    return fields


def _block_scalar(indicator: str, block: list[str]) -> str:
    while block and not block[-1].strip():
        block.pop()
    indent = min((len(b) - len(b.lstrip()) for b in block if b.strip()), default=0)
    rows = [b[indent:] for b in block]
    text = re.sub(r"(?<!\n)\n(?!\n)", " ", "\n".join(rows)) if indicator.startswith(">") else "\n".join(rows)
    return text if indicator.endswith("-") else text + "\n"


def _scalar(value: str, number: int) -> str:
    if value[:1] in ("'", '"'):
        quote = value[0]
        if len(value) < 2 or not value.endswith(quote):
            raise FrontMatterError(f"line {number}: unterminated {quote}quoted{quote} value")
        inner = value[1:-1]
        if quote == "'":
            return inner.replace("''", "'")
        return inner.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
    if " #" in value:
        value = value.split(" #", 1)[0].rstrip()  # a comment after a plain value
    return value
