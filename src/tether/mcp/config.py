"""Which MCP servers a session gets: ``mcp.json`` files in the shape users already have.

The format is the one Claude Code and pi read, so a user's existing file works unchanged::

    {"mcpServers": {
        "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "${TZ:-UTC}"}},
        "docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
        "off":  {"command": "old-server", "enabled": false}
    }}

A server has a ``command`` (stdio: ``args``, ``env``, ``cwd``) or a ``url`` (streamable HTTP:
``headers``). ``${VAR}`` and ``${VAR:-default}`` expand from the environment in every string
value; an unset variable without a default is an error naming it, not a silent empty string
(an ``Authorization: Bearer `` header would fail far from its cause).

Files (``tether.mcp.files``), later ones winning by server name: ``mcp.json`` in tether's user config folder, then the
project's ``.mcp.json`` (only in a trusted project: a project file that starts programs widens
what opening a folder does), then ``--mcp-config FILE``. Nothing here imports the MCP SDK: a run
without servers never loads it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from tether.mcp.files import McpConfigError
from tether.wire.json_line import load_line

Source = Literal["user", "project", "file", "editor", "library"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """One MCP server: a command to start (stdio) or a URL to reach (streamable HTTP)."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=lambda: {})
    """Added to the few variables the SDK passes on (``PATH``, ``HOME``, ...), not to all of ours."""
    cwd: Path | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=lambda: {})
    enabled: bool = True
    source: Source = "library"
    startup_timeout: float = 30.0
    """Seconds for the server to start and list its tools before it is reported as failed."""

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise McpConfigError(
                f"MCP server name {self.name!r}: use letters, digits, '_' and '-' (it becomes part of tool names)"
            )
        if (self.command is None) == (self.url is None):
            raise McpConfigError(f"MCP server {self.name!r}: give either a 'command' or a 'url'")

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"


def read_mcp_file(path: Path, source: Source, env: Mapping[str, str] | None = None) -> list[McpServerConfig]:
    """The servers of one ``mcpServers`` file, disabled ones included, variables expanded."""
    try:
        data = load_line(path.read_bytes())
    except OSError as exc:
        raise McpConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise McpConfigError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    except ValueError as exc:  # not UTF-8, nested too deeply
        raise McpConfigError(f"{path}: invalid JSON: {exc}") from None
    servers: object = cast(dict[str, object], data).get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise McpConfigError(f"{path}: expected an object with an 'mcpServers' object")
    entries = cast(dict[str, object], servers)
    env = os.environ if env is None else env
    base = path.parent
    return [
        server_config(name, entry, source=source, env=env, base=base, where=str(path))
        for name, entry in entries.items()
    ]


def server_config(
    name: str,
    entry: object,
    *,
    source: Source,
    env: Mapping[str, str] | None = None,
    base: Path | None = None,
    where: str = "MCP config",
) -> McpServerConfig:
    """One ``mcpServers`` entry as a config; a relative ``cwd`` is taken from ``base``."""
    env = os.environ if env is None else env
    label = f"{where}: server {name!r}"
    if not isinstance(entry, dict):
        raise McpConfigError(f"{label}: expected an object")
    raw = cast(dict[str, Any], entry)

    def text(key: str) -> str | None:
        value = raw.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise McpConfigError(f"{label}: '{key}' must be a string")
        return expand(value, env, f"{label}: '{key}'")

    def strings(key: str) -> tuple[str, ...]:
        value: object = raw.get(key, [])
        items = cast(list[object], value) if isinstance(value, list) else None
        if items is None or not all(isinstance(v, str) for v in items):
            raise McpConfigError(f"{label}: '{key}' must be a list of strings")
        return tuple(expand(str(v), env, f"{label}: '{key}'") for v in items)

    def table(key: str) -> dict[str, str]:
        value: object = raw.get(key, {})
        pairs = cast(dict[str, object], value) if isinstance(value, dict) else None
        if pairs is None or not all(isinstance(v, str) for v in pairs.values()):
            raise McpConfigError(f"{label}: '{key}' must be an object of strings")
        return {k: expand(str(v), env, f"{label}: '{key}.{k}'") for k, v in pairs.items()}

    enabled = raw.get("enabled", True)
    if not isinstance(enabled, bool):
        raise McpConfigError(f"{label}: 'enabled' must be true or false")
    timeout = raw.get("startupTimeout", 30.0)
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
        raise McpConfigError(f"{label}: 'startupTimeout' must be a positive number of seconds")
    cwd_text = text("cwd")
    cwd = None
    if cwd_text is not None:
        cwd = Path(cwd_text).expanduser()
        if not cwd.is_absolute() and base is not None:
            cwd = base / cwd
    kind = raw.get("type")
    if kind is not None and kind not in ("stdio", "http", "streamable-http", "streamableHttp"):
        raise McpConfigError(f"{label}: type {kind!r} is not supported (use stdio or http)")
    command, args, env_vars = text("command"), strings("args"), table("env")
    url, headers = text("url"), table("headers")
    try:
        return McpServerConfig(
            name,
            command=command,
            args=args,
            env=env_vars,
            cwd=cwd,
            url=url,
            headers=headers,
            enabled=enabled,
            source=source,
            startup_timeout=float(timeout),
        )
    except McpConfigError as exc:  # the name or the transport: say which file
        raise McpConfigError(f"{where}: {exc}") from None


def expand(value: str, env: Mapping[str, str], where: str) -> str:
    """``${VAR}`` and ``${VAR:-default}`` from ``env``; an unset ``${VAR}`` is an error."""

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = env.get(name)
        if found:
            return found
        if default is not None:
            return default
        if found is not None:
            return found
        raise McpConfigError(f"{where}: environment variable {name} is not set")

    return _VAR.sub(substitute, value)
