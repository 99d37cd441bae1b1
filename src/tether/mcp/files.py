"""Which ``mcp.json`` files a session reads, in order, and the servers they give.

Apart from the reader (``config``) because most runs have no MCP file at all: finding that out
costs two ``stat`` calls here, while the reader's records and patterns would load with it.
"""

from __future__ import annotations

import os
from collections.abc import Container, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from tether.mcp.errors import McpConfigError
from tether.own_files import present

if TYPE_CHECKING:
    from tether.mcp.config import McpServerConfig, Source

USER_FILE = "mcp.json"
"""The user's servers, in tether's config folder (``tether.ai.paths.config_dir``)."""

PROJECT_FILE = ".mcp.json"
"""The project's servers: the nearest one in the workspace or a folder above it, as the
project's ``.tether/settings.json`` is found (tether run from ``repo/src`` reads
``repo/.mcp.json``)."""


def project_mcp_file(cwd: Path) -> Path | None:
    """The nearest ``.mcp.json`` in ``cwd`` or a folder above it."""
    for directory in (cwd, *cwd.parents):
        candidate = directory / PROJECT_FILE
        if present(candidate):
            return candidate
    return None


def load_mcp_servers(
    cwd: Path,
    *,
    user_dir: Path | None = None,
    config_file: Path | None = None,
    trusted: bool | Container[str],
    env: Mapping[str, str] | None = None,
    problems: list[str] | None = None,
    project: tuple[Path, bytes] | None = None,
) -> list[McpServerConfig]:
    """The enabled servers of the user file, the project file (trusted projects only) and
    ``config_file``; a later file's server replaces an earlier one of the same name.

    Args:
        cwd: The project folder (the nearest ``.mcp.json`` at or above it).
        user_dir: tether's config folder (default: ``tether.ai.paths.config_dir()``).
        config_file: ``--mcp-config FILE``; it must exist.
        trusted: Whether the project's file may start servers (the caller's trust policy), or
            the names of the only ones of its servers that may (the others are not read: their
            problems are not reported).
        env: Where ``${VAR}`` values come from (default: the environment).
        problems: Given, a bad entry or an unreadable file adds a line here and is skipped
            instead of raising ``McpConfigError`` (a missing ``config_file`` still raises: it
            was asked for by name).
        project: The project file as the caller found and read it (``mcp_file_bytes``) to
            decide ``trusted``: its servers are taken from those bytes. Read again, a file
            rewritten in between (a live writer, a ``git checkout`` racing the start) would
            start servers the decision never saw.
    """
    if user_dir is None:
        from tether.ai.paths import config_dir

        user_dir = config_dir()
    files: list[tuple[Path, Source]] = [(user_dir / USER_FILE, "user")]
    project_file = (project[0] if project is not None else project_mcp_file(cwd)) if trusted else None
    if project_file is not None:
        files.append((project_file, "project"))
    files = [(path, source) for path, source in files if present(path)]
    if config_file is not None:
        files.append((config_file, "file"))
    if not files:
        return []  # the usual run: no file, and the reader (with its records) never loads
    from tether.mcp.config import read_mcp_file

    env = os.environ if env is None else env
    found: dict[str, McpServerConfig] = {}
    for path, source in files:
        if source == "file" and not path.exists():  # not is_file(): ``<(...)`` names a pipe
            raise McpConfigError(f"--mcp-config {path}: no such file")
        try:
            content = project[1] if source == "project" and project is not None else None
            only = trusted if source == "project" and not isinstance(trusted, bool) else None
            read = read_mcp_file(path, source, env, problems, content=content, only=only)
            found.update((s.name, s) for s in read)
        except McpConfigError as exc:
            if problems is None:
                raise
            problems.append(f"{exc} (its servers are skipped)")
    return [server for server in found.values() if server.enabled]
