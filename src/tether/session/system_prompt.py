"""The coding agent's system prompt: built-in instructions, project context files, settings.

Project instructions live in ``AGENTS.md`` (the cross-tool convention) or ``CLAUDE.md``; every one
found from the filesystem root down to the working directory is included, outermost first, so a
monorepo's general rules come before a package's specific ones. The user's own ``AGENTS.md`` in
the config folder (pi's ``~/.pi/agent/AGENTS.md``) comes before all of them: personal habits
that hold in every project, which a project's file may then refine.

Context files are read under ``tether.own_files``'s policy, as the ``read`` tool reads:
a cloned repository's ``CLAUDE.md`` may be a symbolic link to ``/proc/self/environ``, to the
user's credentials or to the config folder's ``models.json``, and whatever it holds goes to the
provider and into the session store; what the sandbox hides is refused wherever it lies. A
project's file must really lie in the repository, the user's config folder, or (for a file in a
parent folder above the repository, such as a shared ``/tmp``) the folder it was found in; it
must be a regular file (a FIFO would block the start for ever) of at most 1 MB (some 250k
tokens, more than a context window: a sparse 1 GB file cost 3 GB of memory and half a minute).
A refused file is left out and reported in one line; the user's own global file may link
anywhere (into a dotfiles repository) but must still be a regular file within the size limit.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from tether.own_files import RefusedFile, present, read_own_file
from tether.tools.sandbox_protect import is_repository
from tether.wire.file_names import path_text

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
            if present(candidate):
                found.append(candidate)
                break
    return found


def project_root(cwd: Path) -> Path:
    """The repository holding ``cwd`` (the nearest folder with ``.git``), else ``cwd``."""
    return next((d for d in (cwd, *cwd.parents) if is_repository(d)), cwd)


def user_context_file(user_dir: Path) -> Path | None:
    """The user's global ``AGENTS.md`` (or ``CLAUDE.md``) in the config folder, if there is one."""
    for name in CONTEXT_FILES:
        candidate = user_dir / name
        if present(candidate):
            return candidate
    return None


def prompt_text(source: str) -> str:
    """``--append-system-prompt TEXT|FILE``: the file's text when ``source`` names a file, else
    ``source`` itself (as pi reads it). An unreadable file raises ``OSError``."""
    path = Path(os.path.expanduser(source))  # ~nosuchuser: as spelled, not a RuntimeError
    try:
        is_file = path.is_file()
    except OSError:  # a text too long to be a file name
        is_file = False
    return path.read_text(encoding="utf-8", errors="replace") if is_file else source


def build_system_prompt(
    cwd: Path,
    tool_lines: Sequence[tuple[str, str]],
    *,
    replace: str | None = None,
    append: str | None = None,
    today: str | None = None,
    context: bool = True,
    user_dir: Path | None = None,
    skills: str | None = None,
    left_out: list[str] | None = None,
    hidden: Sequence[Path] = (),
) -> str:
    """Base (or ``replace``) + tools + context files + skills + ``append``.

    Args:
        cwd: The working directory: its project context files and the line naming it.
        tool_lines: ``(name, description)`` of each tool the model gets.
        replace: Replaces the built-in instructions.
        append: Added at the very end.
        today: A date line; kept out by default, as a date in the system prompt changes every
            day and breaks the provider's prompt cache.
        context: ``False`` (``--no-context-files``): no context file at all.
        user_dir: The config folder whose ``AGENTS.md`` comes first (``None``: none).
        skills: The skills' part (``tether.session.skills.skills_prompt``): names, descriptions
            and where to read each, never their contents.
        left_out: Gets one line per context file left out (too large, a link out of the
            project, not a regular file, unreadable), for the front end.
        hidden: Paths no context file may resolve to (credentials, tether's files with keys:
            what the sandbox hides), even inside the project or the config folder.
    """
    parts = [replace if replace is not None else BASE_PROMPT, describe_tools(tool_lines)]
    user_file = user_context_file(user_dir) if context and user_dir is not None else None
    files: list[tuple[str, Path, tuple[Path, ...] | None]] = []
    if user_file is not None:
        files.append(("user", user_file, None))
    if context:
        project = project_root(cwd)
        mine = () if user_dir is None else (user_dir,)
        for path in context_files(cwd):
            files.append(("project", path, (path.parent, project, *mine)))
    for kind, path, roots in files:
        if kind == "project" and path == user_file:
            continue  # the config folder is inside the project tree: once is enough
        try:
            data = read_own_file(path, roots, hidden=hidden)
        except RefusedFile as exc:
            if left_out is not None:
                left_out.append(f"{path}: {exc}; left out of the system prompt")
            continue
        except OSError as exc:  # unreadable, a link to nothing: said, not passed over in silence
            if left_out is not None:
                left_out.append(f"{path}: cannot read: {exc.strerror or exc}; left out of the system prompt")
            continue
        text = data.decode("utf-8", errors="replace").strip()
        if text:
            parts.append(f'<{kind}-instructions path="{path_text(path)}">\n{text}\n</{kind}-instructions>')
    if skills:
        parts.append(skills)
    parts.append(f"Working directory: {path_text(cwd)}")
    if today is not None:
        parts.append(f"Today's date: {today}")
    if append:
        parts.append(append)
    return "\n\n".join(parts)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""
