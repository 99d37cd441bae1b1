"""Each MCP server's last listing (tools, prompts, whether it has resources), kept between runs.

A model call needs the servers' tools, and a server's own start is usually the slowest part of a
run: a Python server imports its SDK (about a second here), a Node one starts Node, and tether
imports the MCP SDK too (``tether.mcp.sdk``). Measured with one Python server, ``tether -p``
cost 9.7× the CPU of a run without servers when it waited for the server. With the listing
kept from the server's last start, a session offers the tools at once and starts the server
only when something of it is used (``McpServers``): a run that calls none of its tools pays
nothing for it.

A listing is kept under a key made of everything that decides what the server is: transport,
command (its resolved file and that file's modification time), arguments (and the modification
time of those naming files), environment, working folder, URL and headers, and tether's version.
Change any of them and the key changes, so the server is started and waited for as a new one
would be (its failure reported as ever). A server that fails to start loses its entry, so the
next run waits for it again; one that lists other tools than kept replaces the entry. A start
whose prompts were not listed (``prompts/list`` failed or timed out) is kept with why
(``unlisted_prompts``), not as a listing without prompts: the next session says why they are
missing, and the server's next start (when first used) lists them again. Secrets in
``env`` or ``headers`` enter only the key's hash; the file holds what the server itself said.

Files are ``<folder>/<key>.json`` (``mcp-tools`` in tether's data folder), written whole to a
temporary name and renamed, so a reader never sees half a file; an unreadable one counts as none.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tether.mcp.config import McpServerConfig
from tether.mcp.connection import ToolInfo
from tether.mcp.prompts import PromptArgument, PromptInfo
from tether.own_files import make_own_folder

FORMAT = 2
"""In the key: a listing kept by an older format (2: a listing's ``unlistedPrompts``) is not read."""


@dataclass(frozen=True, slots=True)
class Listing:
    """What a server said about itself at its last start."""

    tools: tuple[ToolInfo, ...]
    has_resources: bool
    prompts: tuple[PromptInfo, ...]
    unlisted_prompts: str | None = None
    """Why the prompts were not listed (``McpConnection.unlisted_prompts``): ``prompts`` is then
    not the server's word that it has none."""


def cache_key(config: McpServerConfig) -> str:
    """The hash of everything that decides the server's listing (see the module docstring)."""
    from tether._version import __version__

    base = config.cwd or Path.cwd()
    command: list[Any] = []
    if config.command is not None:
        found = shutil.which(config.command, path=config.env.get("PATH", os.environ.get("PATH")))
        command = [config.command, found, _mtime(Path(found)) if found else None]
    identity = {
        "format": FORMAT,
        "tether": __version__,
        "transport": config.transport,
        "command": command,
        "args": [[a, _mtime(base / a)] for a in config.args],  # an absolute arg replaces base
        "env": sorted(config.env.items()),
        "cwd": str(config.cwd) if config.cwd is not None else None,
        "url": config.url,
        "headers": sorted(config.headers.items()),
    }
    return hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:32]


def _mtime(path: Path) -> int | None:
    """A file's modification time; ``None`` for anything else (a flag, a folder, nothing)."""
    try:
        return path.stat().st_mtime_ns if path.is_file() else None
    except (OSError, ValueError):
        return None


def read_listing(folder: Path, key: str) -> Listing | None:
    """The listing kept under ``key``; ``None`` when there is none or it cannot be read."""
    try:
        data = json.loads((folder / f"{key}.json").read_bytes())
        return Listing(
            tools=tuple(
                ToolInfo(t["name"], t["description"], t["inputSchema"], t["readOnly"], t["leftOut"])
                for t in data["tools"]
            ),
            has_resources=bool(data["hasResources"]),
            prompts=tuple(
                PromptInfo(
                    p["name"],
                    p["description"],
                    tuple(PromptArgument(a["name"], a["description"], a["required"]) for a in p["arguments"]),
                )
                for p in data["prompts"]
            ),
            unlisted_prompts=_text_or_none(data["unlistedPrompts"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _text_or_none(value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"expected text, got {type(value).__name__}")
    return value


def write_listing(folder: Path, key: str, listing: Listing) -> None:
    """Keep ``listing`` under ``key``; a folder that cannot be written keeps nothing (the next run
    then waits for the server, as without a cache)."""
    data = {
        "tools": [
            {
                "name": t.name,
                "description": t.description,
                "inputSchema": t.input_schema,
                "readOnly": t.read_only,
                "leftOut": t.left_out,
            }
            for t in listing.tools
        ],
        "hasResources": listing.has_resources,
        "prompts": [
            {
                "name": p.name,
                "description": p.description,
                "arguments": [
                    {"name": a.name, "description": a.description, "required": a.required}
                    for a in p.arguments
                ],
            }
            for p in listing.prompts
        ],
        "unlistedPrompts": listing.unlisted_prompts,
    }
    target = folder / f"{key}.json"
    staging = folder / f"{key}.{os.getpid()}.tmp"
    try:
        make_own_folder(folder)
        staging.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        staging.replace(target)
    except (OSError, TypeError, ValueError):  # a schema that is not JSON cannot be kept either
        with contextlib.suppress(OSError):
            staging.unlink()


def forget_listing(folder: Path, key: str) -> None:
    with contextlib.suppress(OSError):
        (folder / f"{key}.json").unlink()
