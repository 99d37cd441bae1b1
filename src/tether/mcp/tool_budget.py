"""How many MCP tools go with a request, and which.

Every declared tool is sent with every model call. A server listing thousands of tools would
make every request fail (OpenAI takes at most 128 tools) or cost tens of thousands of tokens a
turn and leave the model choosing among too many. So the servers share a budget: what a request
of the run's model may declare (``tool_limit``: its API's ``ApiProvider.max_tools``) less the
agent's own tools and the three resource tools (``tether.mcp.resources``), or the user's
``mcp.maxTools`` setting, in configuration order and each server's tools in the order it listed
them. The session works it out before each prompt (``McpServers.fit``), so a model of another
API gets its own budget from the next prompt on.

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

DEFAULT_TOOL_LIMIT = 128
"""The tools a request declares at most when its API documents no limit (Anthropic's Messages
API, the local model, a provider registered without one): OpenAI's limit, so the tools a session
offers still fit when it switches to an OpenAI model, and every tool declared costs tokens on
every turn (Anthropic: 50 tools take 10-20K tokens, and choosing gets worse past 30-50 tools)."""

ASSUMED_OWN_TOOLS = 28
"""The agent's own tools the budget leaves room for until ``McpServers.fit`` says how many there
are: a bare ``Agent`` given ``servers.tools()`` (docs/library.md), ``tether mcp list``. Without it
the servers took all of ``DEFAULT_TOOL_LIMIT``, and an agent with 5 tools of its own sent OpenAI
133 tools, which it refuses (``array_above_max_length``) on every request. 28 is the room the
fixed budget of 100 MCP tools used to leave; tether's built-in tools are 7."""

RESOURCE_TOOLS = 3
"""The tools of ``tether.mcp.resources``, declared when a server has resources."""

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


def tool_limit(api: str) -> int:
    """The most tools a request to a model of ``api`` may declare (``DEFAULT_TOOL_LIMIT`` when the
    API documents none, or no provider serves it)."""
    from tether.ai.registry import get_provider  # the providers load with the first request anyway

    provider = get_provider(api)
    limit = provider.max_tools if provider is not None else None
    return limit if limit is not None else DEFAULT_TOOL_LIMIT


def budget(limit: int, taken: int, resources: bool, max_tools: int | None) -> int:
    """The servers' own tools a request declares: ``max_tools`` (the ``mcp.maxTools`` setting)
    when set, else what ``limit`` leaves beside ``taken`` tools of the agent's own and the
    resource tools (when a server has ``resources``)."""
    if max_tools is not None:
        return max_tools
    return max(limit - taken - (RESOURCE_TOOLS if resources else 0), 0)


def shares(servers: Iterable[tuple[McpServerConfig, Sequence[ToolInfo]]], budget: int) -> dict[str, Share]:
    """Each server's share of ``budget`` tools, in the order given."""
    left = budget
    found: dict[str, Share] = {}
    for config, listed in servers:
        share = found[config.name] = Share(listed=len(listed))
        cap = min(left, config.max_tools) if config.max_tools is not None else left
        share.limit = (
            f"maxTools {config.max_tools}"
            if config.max_tools is not None and config.max_tools < left
            else f"{budget} MCP tools a request"
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
        '"disabledTools" or "maxTools" in its mcp.json entry, or "mcp": {"maxTools": N} in settings.json)'
    )


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatchcase(name, pattern) for pattern in patterns)
