"""The trust question: what a project would add, named item by item and granted kind by kind.

A cloned repository can bring settings that widen the model's powers, Python extensions (code
that runs inside tether), ``.mcp.json`` servers (programs tether starts), skills and prompt
templates. Answering yes to one question must not grant the others, and nobody should grant
code execution without being told which code: so each kind the project has, and the user has
not yet granted, is listed by name (the settings keys, the extension files, each server's
command line, the skill and template names) and asked about on its own. Asked only with a
person at the keyboard; every other mode leaves them out and says so (``tether.session``).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from tether.session.settings import Settings

WHAT = {
    "settings": "settings that widen what the model may do",
    "extensions": "Python extensions, code that runs inside tether",
    "mcp": "MCP servers, programs tether starts",
    "skills": "skills, instructions for the model",
    "prompts": "prompt templates, slash commands",
}


def offered(cwd: Path, settings: Settings, config_dir: Path) -> list[tuple[Path, str, list[str]]]:
    """``(folder to trust, kind, item names)`` for each kind the project has and was not
    granted yet."""
    from tether.session.trust import TrustFileError, granted

    found: list[tuple[Path, str, list[str]]] = []
    tether_dir = next((d / ".tether" for d in (cwd, *cwd.parents) if (d / ".tether").is_dir()), None)
    if tether_dir is not None:
        project = tether_dir.parent
        if settings.ignored and settings.project_file is not None:
            found.append((project, "settings", [f"{key}" for key in settings.ignored]))
        found += [(project, kind, names) for kind, names in _tether_items(tether_dir) if names]
    servers = _project_servers(cwd)
    if servers:
        found.append((cwd, "mcp", servers))
    try:
        return [(f, kind, names) for f, kind, names in found if kind not in granted(config_dir, f)]
    except TrustFileError:
        return []  # reported where the grants are read


def ask_grants(
    offers: list[tuple[Path, str, list[str]]],
    config_dir: Path,
    err: TextIO,
    ask: Callable[[str], str] = input,
) -> bool:
    """Ask about each offer and record the grants; whether anything was granted."""
    from tether.session.trust import trust

    any_granted = False
    for folder, kind, names in offers:
        err.write(f"{folder} brings {WHAT[kind]}:\n")
        for name in names:
            err.write(f"  {name}\n")
        answer = ask(f"Allow {kind} from {folder}? [y/N] ").strip().lower()
        if answer in ("y", "yes"):
            trust(config_dir, folder, [kind])
            any_granted = True
    return any_granted


def _tether_items(tether_dir: Path) -> list[tuple[str, list[str]]]:
    from tether.session.extensions.loader import extension_files

    extensions = [str(p) for p in extension_files(tether_dir / "extensions")]
    skills_dir = tether_dir / "skills"
    skills = sorted(p.name for p in _children(skills_dir) if (p / "SKILL.md").is_file())
    prompts = sorted(f"/{p.stem}" for p in _children(tether_dir / "prompts") if p.suffix == ".md")
    return [("extensions", extensions), ("skills", skills), ("prompts", prompts)]


def _children(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def _project_servers(cwd: Path) -> list[str]:
    """The project ``.mcp.json``'s servers as ``name: command line`` (a broken file: none here,
    it is reported when the servers are loaded)."""
    from tether.mcp.files import PROJECT_FILE

    path = cwd / PROJECT_FILE
    if not path.is_file():
        return []
    from tether.mcp.config import McpConfigError, read_mcp_file

    try:
        servers = read_mcp_file(path, "project")
    except McpConfigError:
        return []
    return [
        f"{s.name}: {shlex.join([s.command, *s.args]) if s.command else s.url}"
        for s in servers
        if getattr(s, "enabled", True)
    ]
