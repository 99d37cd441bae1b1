"""Prompt templates: ``NAME.md`` in a prompts folder becomes the slash command ``/NAME args``.

The file's body is the prompt; ``$1``, ``$2``... are the arguments (quoted arguments may hold
spaces), ``$ARGUMENTS`` and ``$@`` all of them, ``${@:N}`` those from the Nth on. The front matter's
``description`` is what ``/help``, completion, RPC ``get_commands`` and ACP show (else the body's
first line). The conventions are pi's and Claude Code's, so a prompts folder works in all three.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tether.session.frontmatter import FrontMatterError, read_markdown, split_front_matter
from tether.session.own_files import RefusedFile

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][\w.-]*$")
_PLACEHOLDER = re.compile(r"\$\{@:(\d+)\}|\$(\d+)|\$ARGUMENTS|\$@")


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
        words = split_arguments(args)

        def value(match: re.Match[str]) -> str:
            rest, position = match.group(1), match.group(2)
            if rest is not None:
                return " ".join(words[max(int(rest) - 1, 0) :])
            if position is not None:
                index = int(position) - 1
                return words[index] if 0 <= index < len(words) else ""
            return args

        return _PLACEHOLDER.sub(value, self.body)


def split_arguments(args: str) -> list[str]:
    """Words of ``args``; a single- or double-quoted part is one word (quotes removed)."""
    return [next(g for g in m.groups() if g is not None) for m in _WORD.finditer(args)]


_WORD = re.compile(r'"([^"]*)"|\'([^\']*)\'|(\S+)')


def read_templates(
    folder: Path, source: str, roots: Sequence[Path] | None = None
) -> tuple[list[PromptTemplate], list[str]]:
    """The templates of ``folder`` (its ``*.md`` files), sorted by name, and one warning per file
    that could not be used; ``roots``: where a file may really lie, ``None``: anywhere."""
    templates: list[PromptTemplate] = []
    warnings: list[str] = []
    try:
        files = sorted(p for p in folder.iterdir() if p.suffix == ".md" and p.is_file())
    except OSError as exc:
        return [], [f"{folder}: cannot list the prompts folder: {exc.strerror or exc}"]
    for path in files:
        if not NAME_PATTERN.match(path.stem):
            warnings.append(f"{path}: {path.stem!r} cannot be a command name; template skipped")
            continue
        try:
            fields, body = split_front_matter(read_markdown(path, roots))
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
