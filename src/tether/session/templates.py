"""Prompt templates: ``NAME.md`` in a prompts folder becomes the slash command ``/NAME args``.

The file's body is the prompt, with pi's substitutions (``docs/prompt-templates.md`` of pi 1.6),
which include Claude Code's:

- ``$1``, ``$2``...: one argument; ``${1:-default}``: it, or the default when missing or empty;
- ``$@`` and ``$ARGUMENTS``: all of them, joined with spaces; ``${@:-default}``: or the default;
- ``${@:N}``: those from the Nth on; ``${@:N:L}``: ``L`` of them from the Nth.

Arguments split as pi splits them: a quote starts quoting only at the start of an argument
(``doesn't`` stays a word), a quote without its closing one is text, and inside quotes a backslash
before that quote character makes it text. The front matter's ``description`` is what ``/help``,
completion, RPC ``get_commands`` and ACP show (else the body's first line). So a prompts folder
of pi's or a commands folder of Claude Code's works here unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tether.own_files import RefusedFile
from tether.session.frontmatter import FrontMatterError, read_markdown, split_front_matter

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][\w.-]*$")
_PLACEHOLDER = re.compile(
    r"\$\{@:(?P<start>\d+)(?::(?P<length>\d+))?\}"
    r"|\$\{(?P<which>\d+|@)(?::-(?P<default>[^}]*))?\}"
    r"|\$(?P<position>\d+)|\$ARGUMENTS|\$@"
)


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    name: str
    description: str
    body: str
    path: Path
    source: str
    """``user`` or ``project``."""

    def expand(self, args: str) -> str:
        """The body with the placeholders replaced by ``args`` (missing ones become empty)."""
        return expand_placeholders(self.body, args)


def expand_placeholders(body: str, args: str) -> str:
    """``body`` with pi's argument placeholders (module docstring) replaced from ``args``."""
    words = split_arguments(args)
    everything = " ".join(words)

    def argument(position: str) -> str:
        index = int(position) - 1
        return words[index] if 0 <= index < len(words) else ""

    def value(match: re.Match[str]) -> str:
        start, which, position = match.group("start"), match.group("which"), match.group("position")
        if start is not None:
            first = max(int(start) - 1, 0)
            length = match.group("length")
            return " ".join(words[first : first + int(length)] if length is not None else words[first:])
        if which is not None:
            found = everything if which == "@" else argument(which)
            default = match.group("default")
            return found or (default if default is not None else "")
        if position is not None:
            return argument(position)
        return everything

    return _PLACEHOLDER.sub(value, body)


def split_arguments(args: str) -> list[str]:
    """Words of ``args`` as pi splits them (module docstring)."""
    words: list[str] = []
    i, n = 0, len(args)
    while i < n:
        if args[i].isspace():
            i += 1
            continue
        quote = args[i]
        if quote in "\"'":
            j, text = i + 1, list[str]()
            while j < n and args[j] != quote:
                if args[j] == "\\" and j + 1 < n and args[j + 1] == quote:
                    j += 1
                text.append(args[j])
                j += 1
            if j < n:  # closed: one word, quotes removed
                words.append("".join(text))
                i = j + 1
                continue
        j = i  # a plain word, or a quote never closed (kept as text)
        while j < n and not args[j].isspace():
            j += 1
        words.append(args[i:j])
        i = j
    return words


def read_templates(
    folder: Path,
    source: str,
    roots: Sequence[Path] | None = None,
    *,
    nested: bool = False,
    hidden: Sequence[Path] = (),
) -> tuple[list[PromptTemplate], list[str]]:
    """The templates of ``folder`` (its ``*.md`` files), sorted by name, and one warning per file
    that could not be used. ``roots``: where a file may really lie, ``None``: anywhere.
    ``nested``: subfolders' files too, named by their file name (Claude Code's
    ``.claude/commands/frontend/component.md`` is ``/component``). ``hidden``: paths never read
    (``own_files``)."""
    templates: list[PromptTemplate] = []
    warnings: list[str] = []
    try:
        found = folder.rglob("*.md") if nested else folder.iterdir()
        files = sorted(
            (p for p in found if p.suffix == ".md" and p.is_file()), key=lambda p: (p.stem, len(p.parts), p)
        )
    except OSError as exc:
        return [], [f"{folder}: cannot list the prompts folder: {exc.strerror or exc}"]
    for path in files:
        if not NAME_PATTERN.match(path.stem):
            warnings.append(f"{path}: {path.stem!r} cannot be a command name; template skipped")
            continue
        try:
            fields, body = split_front_matter(read_markdown(path, roots, hidden))
        except (OSError, UnicodeDecodeError, RefusedFile) as exc:
            warnings.append(f"{path}: cannot read: {exc}; template skipped")
            continue
        except FrontMatterError as exc:
            warnings.append(f"{path}: invalid front matter ({exc}); template skipped")
            continue
        description = " ".join(fields.get("description", "").split()) or _first_line(body)
        templates.append(PromptTemplate(path.stem, description, body.strip(), path, source))
    return templates, warnings


def _first_line(body: str) -> str:
    for line in body.splitlines():
        if line.strip():
            text = line.strip().lstrip("#").strip()
            return text if len(text) <= 80 else text[:79] + "…"
    return ""
