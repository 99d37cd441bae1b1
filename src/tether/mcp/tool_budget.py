"""How many MCP tools go with a request, and which.

Every declared tool is sent with every model call. A server listing thousands of tools would
make every request fail (OpenAI takes at most 128 tools) or cost tens of thousands of tokens a
turn and leave the model choosing among too many. So the servers share a budget,
``MCP_TOOL_BUDGET`` tools in all, in configuration order and each server's tools in the order
it listed them; the three resource tools (``tether.mcp.resources``) come on top.

A server's ``mcp.json`` entry chooses (Codex's settings under the file's camelCase names):
``enabledTools`` (patterns, ``*`` and ``?``: only those), ``disabledTools`` (patterns: never
those), ``maxTools`` (at most that many of its tools, to leave the budget to the next server).
A tool over the budget is left out with a reason ``/mcp`` shows, and the session says once per
server how many were left out, naming the first ones and how to choose; a tool the user chose
away is not news and is only listed by ``/mcp``.

Claude Code and pi (``deferred`` exposure) can also leave tools undeclared until a search tool
loads them for the next model call; tether's loop declares a run's tools when the run starts,
so a choice in the entry is the way to reach a tool past the budget.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tether.mcp.config import McpServerConfig
    from tether.mcp.connection import ToolInfo

MCP_TOOL_BUDGET = 100
"""The servers' own tools declared to the model in all: under OpenAI's 128 with the built-in
tools and the resource tools added."""

NAMED = 5
"""Tools a note names before it says how many more there are."""


@dataclass(slots=True)
class Share:
    """One server's part of the budget."""

    offered: list[ToolInfo] = field(default_factory=lambda: [])
    left_out: dict[str, str] = field(default_factory=lambda: {})
    """Tool name -> why it is not offered (the server's own reasons, the user's choice, the budget)."""
    over: list[str] = field(default_factory=lambda: [])
    """The tools left out by the budget alone, in listing order."""
    listed: int = 0
    limit: str = ""
    """Which limit they went over (``maxTools 10`` or the budget)."""


def shares(servers: Iterable[tuple[McpServerConfig, Sequence[ToolInfo]]]) -> dict[str, Share]:
    """Each server's share of ``MCP_TOOL_BUDGET``, in the order given."""
    left = MCP_TOOL_BUDGET
    found: dict[str, Share] = {}
    for config, listed in servers:
        share = found[config.name] = Share(listed=len(listed))
        cap = min(left, config.max_tools) if config.max_tools is not None else left
        share.limit = (
            f"maxTools {config.max_tools}"
            if config.max_tools is not None and config.max_tools < left
            else f"{MCP_TOOL_BUDGET} MCP tools a request"
        )
        for info in listed:
            if info.left_out is not None:
                share.left_out[info.name] = info.left_out
            elif config.enabled_tools is not None and not _matches(info.name, config.enabled_tools):
                share.left_out[info.name] = "not in enabledTools"
            elif _matches(info.name, config.disabled_tools):
                share.left_out[info.name] = "in disabledTools"
            elif len(share.offered) < cap:
                share.offered.append(info)
            else:
                share.left_out[info.name] = f"over the budget ({share.limit})"
                share.over.append(info.name)
        left -= len(share.offered)
    return found


def note(server: str, share: Share) -> str | None:
    """The one line saying which of ``server``'s tools the budget left out, if any."""
    if not share.over:
        return None
    named = ", ".join(share.over[:NAMED])
    more = f" and {len(share.over) - NAMED} more" if len(share.over) > NAMED else ""
    return (
        f"MCP server {server!r}: {len(share.over)} of its {share.listed} tools left out, over the "
        f'budget ({share.limit}): {named}{more} (/mcp lists them; choose with "enabledTools", '
        '"disabledTools" or "maxTools" in its mcp.json entry)'
    )


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatchcase(name, pattern) for pattern in patterns)
