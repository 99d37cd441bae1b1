"""Skills in the Agent Skills format: a folder holding ``SKILL.md`` (front matter ``name`` and
``description``) and whatever files the instructions refer to.

Only names and descriptions go into the system prompt, with where the file is; the model reads a
skill's files with its ``read`` tool when a task matches, so a hundred installed skills cost a
hundred lines, not a hundred documents. ``/skill:NAME args`` puts one skill's instructions in the
prompt directly. Which folders are searched, and in what order, is ``tether.session.resources``'s
business; this module reads one folder of skills.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tether.own_files import RefusedFile
from tether.session.frontmatter import FrontMatterError, read_markdown, split_front_matter

SKILL_FILE = "SKILL.md"
NAME_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
"""The Agent Skills rule: lowercase letters, digits and single hyphens."""
MAX_NAME = 64
MAX_DESCRIPTION = 1024


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    path: Path
    """The ``SKILL.md`` file."""
    source: str
    """Which settings switch found it: ``user``, ``project``, ``agents``, ``claude`` or ``pi``."""
    scope: Literal["user", "project"] = "user"
    """Found in the project's folders or in the user's."""
    model_invocable: bool = True
    """``False`` (front matter ``disable-model-invocation: true``): only ``/skill:NAME`` uses it;
    it is left out of the system prompt."""
    roots: tuple[Path, ...] | None = None
    """Where its file may really lie (``tether.own_files``); ``None``: anywhere."""
    hidden: tuple[Path, ...] = ()
    """Where its file may never lie (credentials, tether's files with keys): checked again at each
    ``/skill:NAME``, since the file may have become a link after it was found."""

    @property
    def folder(self) -> Path:
        return self.path.parent


MAX_DEPTH = 6
"""How deep below a skills folder a ``SKILL.md`` is looked for (grouping folders, as pi and
Claude Code allow: ``skills/docs/pdf/SKILL.md``)."""

MAX_FOLDERS = 2_000
"""How many folders one skills folder's search enters at most: links are followed (the user's
own skills may live in a dotfiles repository), and a link to ``/`` had the search walk the
machine. A repository's links out of the project are not entered at all."""


def read_skills(
    folder: Path,
    source: str,
    scope: Literal["user", "project"] = "user",
    roots: Sequence[Path] | None = None,
    hidden: Sequence[Path] = (),
) -> tuple[list[Skill], list[str]]:
    """The skills below ``folder`` (each folder with a ``SKILL.md``, found at any depth up to
    ``MAX_DEPTH``; a skill's own subfolders are its files, not more skills; hidden folders and
    ``node_modules`` are skipped), sorted by path, and one warning per file that could not be used;
    ``roots``: where a ``SKILL.md`` may really lie (a repository's skill must not be a link to the
    user's secrets), ``None``: anywhere; ``hidden``: paths never read, even within ``roots``
    (``own_files``: a skill's text is sent to the model as is)."""
    skills: list[Skill] = []
    warnings: list[str] = []
    real_roots = None if roots is None else [os.path.realpath(root) for root in roots]
    searched = 0

    def walk(directory: Path, depth: int) -> None:
        nonlocal searched
        try:
            children = sorted(c for c in directory.iterdir() if c.is_dir())
        except OSError as exc:
            warnings.append(f"{directory}: cannot list the skills folder: {exc.strerror or exc}")
            return
        for child in children:
            if child.name.startswith(".") or child.name == "node_modules":
                continue
            path = child / SKILL_FILE
            if not path.is_file():
                if real_roots is not None and child.is_symlink() and not _inside(child, real_roots):
                    warnings.append(f"{child}: links out of {', '.join(real_roots)}; not searched for skills")
                elif depth < MAX_DEPTH and searched < MAX_FOLDERS:
                    searched += 1
                    if searched == MAX_FOLDERS:
                        warnings.append(
                            f"{folder}: searched {MAX_FOLDERS} folders for skills; the rest is left out"
                        )
                    walk(child, depth + 1)
                continue
            skill, problem = read_skill(path, source, scope, roots, hidden)
            if problem is not None:
                warnings.append(f"{path}: {problem}")
            if skill is not None:
                skills.append(skill)

    if real_roots is not None and os.path.isdir(folder) and not _inside(folder, real_roots):
        warnings.append(f"{folder}: links out of {', '.join(real_roots)}; not searched for skills")
        return skills, warnings
    walk(folder, 1)
    return skills, warnings


def _inside(path: Path, real_roots: Sequence[str]) -> bool:
    real = os.path.realpath(path)
    return any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in real_roots)


def read_skill(
    path: Path,
    source: str,
    scope: Literal["user", "project"] = "user",
    roots: Sequence[Path] | None = None,
    hidden: Sequence[Path] = (),
) -> tuple[Skill | None, str | None]:
    """The skill of one ``SKILL.md`` and a problem to report: a broken file gives no skill; a
    name that differs from its folder's is reported but the skill still loads."""
    try:
        fields, _body = split_front_matter(read_markdown(path, roots, hidden))
    except (OSError, UnicodeDecodeError, RefusedFile) as exc:
        return None, f"cannot read: {exc}; skill skipped"
    except FrontMatterError as exc:
        return None, f"invalid front matter ({exc}); skill skipped"
    name = fields.get("name", "").strip() or path.parent.name
    description = " ".join(fields.get("description", "").split())
    if not NAME_PATTERN.match(name) or len(name) > MAX_NAME:
        return None, (
            f"invalid skill name {name!r} (lowercase letters, digits and hyphens, at most "
            f"{MAX_NAME} characters); skill skipped"
        )
    if not description:
        return None, 'no "description" in the front matter; skill skipped'
    problem = None
    if len(description) > MAX_DESCRIPTION:
        description = description[: MAX_DESCRIPTION - 1] + "…"
        problem = f"description longer than {MAX_DESCRIPTION} characters, shortened"
    if name != path.parent.name:
        problem = f"skill name {name!r} differs from its folder {path.parent.name!r}"
    invocable = fields.get("disable-model-invocation", "").strip().lower() != "true"
    frozen_roots = tuple(roots) if roots is not None else None
    return Skill(name, description, path, source, scope, invocable, frozen_roots, tuple(hidden)), problem


def skills_prompt(skills: list[Skill]) -> str | None:
    """The system prompt's part about skills (``None`` when the model may invoke none)."""
    listed = [s for s in skills if s.model_invocable]
    if not listed:
        return None
    rows = [
        f"  <skill>\n    <name>{escape(s.name)}</name>\n    <description>{escape(s.description)}"
        f"</description>\n    <location>{escape(str(s.path))}</location>\n  </skill>"
        for s in listed
    ]
    return (
        "Skills: specialised instructions for particular tasks. When a task matches a skill's "
        "description, read its file (the location below) before you start, and follow it; paths "
        "in a skill are relative to the skill's folder.\n\n"
        "<available_skills>\n" + "\n".join(rows) + "\n</available_skills>"
    )


def escape(text: str) -> str:
    """XML-escape ``text`` for the prompt's tags (``xml.sax.saxutils`` would import
    ``urllib.request`` and with it half the standard library, for three replacements)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def skill_invocation(skill: Skill, args: str) -> str:
    """The prompt ``/skill:NAME args`` sends: the skill's instructions, then the user's text."""
    try:
        _fields, body = split_front_matter(read_markdown(skill.path, skill.roots, skill.hidden))
    except (OSError, UnicodeDecodeError, FrontMatterError, RefusedFile) as exc:
        raise ValueError(f"skill {skill.name}: cannot read {skill.path}: {exc}") from None
    block = (
        f'<skill name="{escape(skill.name)}" location="{escape(str(skill.path))}">\n'
        f"References are relative to {skill.folder}.\n\n{body.strip()}\n</skill>"
    )
    return f"{block}\n\n{args}" if args else block
