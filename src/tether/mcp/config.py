"""Which MCP servers a session gets: ``mcp.json`` files in the shape users already have.

The format is the one Claude Code and pi read, so a user's existing file works unchanged::

    {"mcpServers": {
        "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "${TZ:-UTC}"}},
        "docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
        "off":  {"command": "old-server", "enabled": false}
    }}

A server has a ``command`` (stdio: ``args``, ``env``, ``cwd``) or a ``url`` (streamable HTTP,
or the older SSE transport with ``"type": "sse"``: ``headers``). ``${VAR}`` and
``${VAR:-default}`` expand from the environment in every string value; an unset variable without
a default is an error naming it, not a silent empty string (an ``Authorization: Bearer `` header
would fail far from its cause). ``startupTimeout`` and ``timeout`` (a call's, pi's name) are seconds.

A bad entry is one problem, not a failed run: ``read_mcp_file`` given a ``problems`` list puts
one line there for each entry it cannot use and returns the others (Claude Code's and pi's
configs carry entries from other tools; one of them must not take every server down). A
disabled entry is never reported, whatever it holds.

Files (``tether.mcp.files``), later ones winning by server name: ``mcp.json`` in tether's user config folder, then the
project's ``.mcp.json`` (only in a trusted project: a project file that starts programs widens
what opening a folder does), then ``--mcp-config FILE``. Nothing here imports the MCP SDK: a run
without servers never loads it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Container, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from tether.mcp.errors import McpConfigError
from tether.own_files import RefusedFile, read_own_file
from tether.wire.json_line import load_line

if TYPE_CHECKING:
    from tether.tools.sandbox import Sandbox

Source = Literal["user", "project", "file", "editor", "library", "extension"]
Transport = Literal["stdio", "http", "sse"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_NAME = re.compile(r"^[^\x00-\x1f/\\]+$")
_TYPES: dict[str, Transport] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamableHttp": "http",
    "sse": "sse",
}
_MAX_SECONDS = sys.float_info.max
"""A timeout past it (``1e400`` and ``Infinity`` read as infinity, a 400-digit number does not
fit a float) or ``NaN`` cannot be waited on: the entry is reported, where it crashed the reader
or failed the server's start far from its cause."""
DEFAULT_TOOL_TIMEOUT = 60.0
"""Seconds a tool call may go without an answer or a progress notification (the TypeScript SDK's
default request timeout, which pi and Claude Code keep)."""


@dataclass(frozen=True, slots=True)
class OAuthSettings:
    """``"oauth"`` of an HTTP server (``tether.mcp.oauth``): ``false`` turns it off; a registered
    client (``clientId``, ``clientSecret``) instead of dynamic registration; a fixed
    ``callbackPort``; the ``scope`` to ask for."""

    enabled: bool = True
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    callback_port: int | None = None
    scope: str | None = None


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
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT
    """Seconds a call may wait without an answer or a progress notification (each one restarts
    the wait); then the call fails with an error saying so."""
    sse: bool = False
    """A ``url`` server speaks the older HTTP+SSE transport (``"type": "sse"``)."""
    sandbox: Sandbox | None = None
    """Start a stdio server inside this sandbox (``sandbox.mcp`` in settings): set by the session
    from its own sandbox, never read from a file."""
    oauth: OAuthSettings = field(default_factory=OAuthSettings)
    enabled_tools: tuple[str, ...] | None = None
    """``enabledTools``: patterns (``*``, ``?``) of the only tools offered (``tether.mcp.tool_budget``)."""
    disabled_tools: tuple[str, ...] = ()
    """``disabledTools``: patterns of tools never offered."""
    max_tools: int | None = None
    """``maxTools``: at most this many of the server's tools go with a request."""

    @property
    def uses_oauth(self) -> bool:
        """Signs in with OAuth when the server asks: a streamable HTTP server with no
        ``Authorization`` header of its own and OAuth not turned off (pi's rule)."""
        given = {k.lower() for k in self.headers}
        return self.url is not None and not self.sse and self.oauth.enabled and "authorization" not in given

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise McpConfigError(
                f"MCP server name {self.name!r}: no '/', '\\' or control characters (it names a log file)"
            )
        if (self.command is None) == (self.url is None):
            raise McpConfigError(f"MCP server {self.name!r}: give either a 'command' or a 'url'")
        if self.sse and self.url is None:
            raise McpConfigError(f"MCP server {self.name!r}: type 'sse' needs a 'url'")
        for key, value in self.env.items():  # said here: the spawn's error named neither
            if not key or "=" in key or "\0" in key:
                raise McpConfigError(
                    f"MCP server {self.name!r}: 'env' key {key!r} is not an environment variable "
                    "name (empty, or with '=' or a NUL in it)"
                )
            if "\0" in value:
                raise McpConfigError(f"MCP server {self.name!r}: 'env.{key}' has a NUL character in it")

    @property
    def transport(self) -> Transport:
        if self.command is not None:
            return "stdio"
        return "sse" if self.sse else "http"

    @property
    def slug(self) -> str:
        return slug_of(self.name)


def slug_of(name: str) -> str:
    """A server's name as tool names, log files and its sign-in file use it (other characters
    become ``_``)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


def read_mcp_file(
    path: Path,
    source: Source,
    env: Mapping[str, str] | None = None,
    problems: list[str] | None = None,
    *,
    content: bytes | None = None,
    only: Container[str] | None = None,
) -> list[McpServerConfig]:
    """The servers of one ``mcpServers`` file, variables expanded; a disabled one is kept (it
    switches off a same-named server of an earlier file) and is never reported as bad.

    Without ``problems`` the first bad entry raises ``McpConfigError``; with it, each bad entry
    adds its line there and is skipped (a file that cannot be read at all raises either way).
    ``content``: the file's bytes as the caller read them (``mcp_file_bytes``), not read again.
    ``only``: the names of the entries to read (a project's granted servers); the others are
    not looked at, so one not granted is not also reported for a variable that is not set.
    """
    content = mcp_file_bytes(path, source) if content is None else content
    try:
        data = load_line(content)
    except json.JSONDecodeError as exc:
        raise McpConfigError(
            f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except ValueError as exc:  # not UTF-8, nested too deeply
        raise McpConfigError(f"{path}: invalid JSON: {exc}") from None
    servers: object = cast(dict[str, object], data).get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise McpConfigError(f"{path}: expected an object with an 'mcpServers' object")
    entries = cast(dict[str, object], servers)
    env = os.environ if env is None else env
    # a relative cwd is the file's folder's; a pipe's (``--mcp-config <(...)``, /dev/fd/63) is
    # the current folder, where the command was typed: /dev/fd/sub is no folder
    base = path.parent if path.is_file() else Path.cwd()
    found: list[McpServerConfig] = []
    for name, entry in entries.items():
        if only is not None and name not in only:
            continue
        fields = cast(dict[str, object], entry) if isinstance(entry, dict) else {}
        disabled = fields.get("enabled", True) is False
        try:
            found.append(
                server_config(name, cast(object, entry), source=source, env=env, base=base, where=str(path))
            )
        except McpConfigError as exc:
            if disabled:  # switched off: it still switches off a same-named server of an earlier file
                with contextlib.suppress(McpConfigError):
                    found.append(McpServerConfig(name, command="", enabled=False, source=source))
            elif problems is None:
                raise
            else:
                problems.append(f"{exc} (skipped)")
    return found


def mcp_file_bytes(path: Path, source: Source) -> bytes:
    """The bytes of an ``mcpServers`` file, read as ``_file_bytes`` says; ``McpConfigError``
    (``<path>: cannot read: ...``) when it cannot be."""
    try:
        return _file_bytes(path, source)
    except RefusedFile as exc:
        raise McpConfigError(f"{path}: cannot read: {exc}") from None
    except OSError as exc:
        raise McpConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _file_bytes(path: Path, source: Source) -> bytes:
    """A found file is read as tether reads a repository's context files (``tether.own_files``):
    a ``.mcp.json`` that is a FIFO (the read blocked the start), links to ``/dev/zero`` or is a
    sparse 1 GB file (memory filled) is refused, and a project's one linking out of the folder
    that holds it (the folder its trust was granted on, whose server lines the trust prompt
    shows) too. The user's ``mcp.json`` may link anywhere (a dotfiles repository). A file given
    by name (``--mcp-config FILE``) is read as named: the user chose it, and
    ``--mcp-config <(...)`` is a pipe."""
    if source == "project":
        return read_own_file(path, [path.parent])
    if source == "user":
        return read_own_file(path, None)
    return path.read_bytes()


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

    def seconds(key: str, default: float) -> float:
        value = raw.get(key, default)
        if not isinstance(value, int | float) or isinstance(value, bool) or not 0 < value <= _MAX_SECONDS:
            raise McpConfigError(f"{label}: '{key}' must be a positive number of seconds")
        return float(value)

    timeout, tool_timeout = seconds("startupTimeout", 30.0), seconds("timeout", DEFAULT_TOOL_TIMEOUT)
    max_tools = raw.get("maxTools")
    if max_tools is not None and (
        not isinstance(max_tools, int) or isinstance(max_tools, bool) or max_tools < 1
    ):
        raise McpConfigError(f"{label}: 'maxTools' must be a whole number from 1")
    enabled_tools = strings("enabledTools") if "enabledTools" in raw else None
    cwd_text = text("cwd")
    cwd = None
    if cwd_text is not None:
        try:
            cwd = Path(cwd_text).expanduser()
        except RuntimeError:  # ``~nobody/x``, or ``~`` without a HOME
            raise McpConfigError(f"{label}: 'cwd' {cwd_text!r}: no such user's home folder") from None
        if not cwd.is_absolute() and base is not None:
            cwd = base / cwd
    kind = raw.get("type")
    if kind is not None and (not isinstance(kind, str) or kind not in _TYPES):
        raise McpConfigError(f"{label}: type {kind!r} is not supported (use stdio, http or sse)")
    command, args, env_vars = text("command"), strings("args"), table("env")
    oauth = _oauth(raw.get("oauth", True), label, env)
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
            startup_timeout=timeout,
            tool_timeout=tool_timeout,
            sse=kind is not None and _TYPES[kind] == "sse",
            oauth=oauth,
            enabled_tools=enabled_tools,
            disabled_tools=strings("disabledTools"),
            max_tools=max_tools,
        )
    except McpConfigError as exc:  # the name or the transport: say which file
        raise McpConfigError(f"{where}: {exc}") from None


def _oauth(value: object, label: str, env: Mapping[str, str]) -> OAuthSettings:
    if isinstance(value, bool):
        return OAuthSettings(enabled=value)
    if not isinstance(value, dict):
        raise McpConfigError(f"{label}: 'oauth' must be true, false or an object")
    raw = cast(dict[str, object], value)
    unknown = set(raw) - {"clientId", "clientSecret", "callbackPort", "scope"}
    if unknown:
        raise McpConfigError(f"{label}: 'oauth' has unknown keys: {', '.join(sorted(unknown))}")

    def text(key: str) -> str | None:
        found = raw.get(key)
        if found is not None and not isinstance(found, str):
            raise McpConfigError(f"{label}: 'oauth.{key}' must be a string")
        return expand(found, env, f"{label}: 'oauth.{key}'") if found is not None else None

    port = raw.get("callbackPort")
    if port is not None and (not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536):
        raise McpConfigError(f"{label}: 'oauth.callbackPort' must be a port number")
    return OAuthSettings(True, text("clientId"), text("clientSecret"), port, text("scope"))


class AsWritten(Mapping[str, str]):
    """No environment: every ``${VAR}`` and ``${VAR:-default}`` is kept as the file wrote it.
    The trust question shows a project's servers this way (``tether.session.trust_items``): the
    user sees which of their secrets a server would be given rather than the secret itself, and
    a default (``${UNSET:-other args}``) is part of what is granted, so changing it is a change."""

    def __getitem__(self, name: str) -> str:
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def expand(value: str, env: Mapping[str, str], where: str) -> str:
    """``${VAR}`` and ``${VAR:-default}`` from ``env``; an unset ``${VAR}`` is an error."""
    if isinstance(env, AsWritten):
        return value

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
