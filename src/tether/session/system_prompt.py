"""The coding agent's system prompt: built-in instructions, project context files, settings.

Project instructions live in ``AGENTS.md`` (the cross-tool convention) or ``CLAUDE.md``; every one
found from the filesystem root down to the working directory is included, outermost first, so a
monorepo's general rules come before a package's specific ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

CONTEXT_FILES = ("AGENTS.md", "CLAUDE.md")

BASE_PROMPT = """\
You are tether, an expert coding assistant working in the user's project through tools.

How to work:
- Read before you change: look at the relevant files (read, grep, find, ls) instead of guessing.
- Make the smallest change that solves the problem, in the project's existing style.
- Use edit for changes to existing files (the old text must match exactly once); use write only
  for new files or complete rewrites.
- Use bash to run builds, tests and other commands; check their output before claiming success.
- When a tool fails, read the error and adjust; do not repeat the same call unchanged.
- Be concise. Show file paths clearly; do not paste whole files back unless asked.
- If the request is ambiguous or risky (deleting data, force-pushing), ask first."""


def describe_tools(tool_lines: Sequence[tuple[str, str]]) -> str:
    if not tool_lines:
        return "You have no tools in this session: answer from the conversation alone."
    body = "\n".join(f"- {name}: {_first_line(description)}" for name, description in tool_lines)
    return f"Available tools:\n{body}"


def context_files(cwd: Path) -> list[Path]:
    """``AGENTS.md`` / ``CLAUDE.md`` files from the root down to ``cwd`` (one per directory)."""
    found: list[Path] = []
    for directory in reversed((cwd, *cwd.parents)):
        for name in CONTEXT_FILES:
            candidate = directory / name
            if candidate.is_file():
                found.append(candidate)
                break
    return found


def build_system_prompt(
    cwd: Path,
    tool_lines: Sequence[tuple[str, str]],
    *,
    replace: str | None = None,
    append: str | None = None,
    today: str | None = None,
    skills: str | None = None,
) -> str:
    """Base (or ``replace``) + tools + project context files + skills + ``append``.

    ``skills`` is the skills' part (``tether.session.skills.skills_prompt``): names,
    descriptions and where to read each, never their contents.

    ``today`` is kept out by default: a date in the system prompt changes every day and breaks
    the provider's prompt cache; callers that want it pass it explicitly.
    """
    parts = [replace if replace is not None else BASE_PROMPT, describe_tools(tool_lines)]
    for path in context_files(cwd):
        try:
            text = path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            continue
        if text:
            parts.append(f'<project-instructions path="{path}">\n{text}\n</project-instructions>')
    if skills:
        parts.append(skills)
    parts.append(f"Working directory: {cwd}")
    if today is not None:
        parts.append(f"Today's date: {today}")
    if append:
        parts.append(append)
    return "\n\n".join(parts)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""
