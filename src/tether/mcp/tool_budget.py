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
A tool over the budget is *deferred*, as Claude Code's tool search does: not declared, but found
by the model with the search tool (``tether.mcp.tool_search``: one slot of the budget), and
declared from the model's next call on. The tools the model found come first in the budget (the
latest ones when they outnumber it), the listing order fills the rest, so a request never holds
more than the budget; they stay found for the rest of the session. The session says once per
server how many were deferred, naming the first ones; a tool the user chose away is not news and
is only listed by ``/mcp``. With no room for the search tool and one found tool (a budget under
two) the tools over it are simply left out, as before there was a search.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from tether.mcp.tool_search import SEARCH_TOOL

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


SEARCH_ROOM = 2
"""The smallest budget that defers: the search tool and one tool it found."""


@dataclass(slots=True)
class Share:
    """One server's part of the budget."""

    offered: list[ToolInfo] = field(default_factory=lambda: [])
    left_out: dict[str, str] = field(default_factory=lambda: {})
    """Tool name -> why it is never offered (the server's own reasons, the user's choice)."""
    over: list[ToolInfo] = field(default_factory=lambda: [])
    """The tools the budget left out, in listing order: deferred (found by the search tool)
    when the budget has ``SEARCH_ROOM``, else left out."""
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


def shares(
    servers: Iterable[tuple[McpServerConfig, Sequence[ToolInfo]]],
    budget: int,
    found: Sequence[tuple[str, str]] = (),
) -> tuple[dict[str, Share], bool]:
    """Each server's share of ``budget`` tools, in the order given, and whether the tools over it
    are deferred (the search tool then takes one slot, and the ``found`` (server, tool) pairs,
    latest last, come first)."""
    servers = list(servers)
    away = {config.name: _chosen_away(config, listed) for config, listed in servers}
    split = _split(servers, budget, away, set())
    if budget < SEARCH_ROOM or not any(share.over for share in split.values()):
        return split, False
    room = budget - 1
    listed_names = {config.name: {info.name for info in listed} for config, listed in servers}
    kept: set[tuple[str, str]] = set()
    for server, tool in reversed(found):
        if len(kept) == room:
            break
        if tool in listed_names.get(server, ()) and tool not in away[server]:
            kept.add((server, tool))
    return _split(servers, room, away, kept), True


def _chosen_away(config: McpServerConfig, listed: Sequence[ToolInfo]) -> dict[str, str]:
    """The tools never offered, with why: the server's own reasons, then the entry's choice."""
    away: dict[str, str] = {}
    for info in listed:
        if info.left_out is not None:
            away[info.name] = info.left_out
        elif config.enabled_tools is not None and not _matches(info.name, config.enabled_tools):
            away[info.name] = "not in enabledTools"
        elif _matches(info.name, config.disabled_tools):
            away[info.name] = "in disabledTools"
    return away


def _split(
    servers: list[tuple[McpServerConfig, Sequence[ToolInfo]]],
    budget: int,
    away: dict[str, dict[str, str]],
    kept: set[tuple[str, str]],
) -> dict[str, Share]:
    """``budget`` tools: the ``kept`` ones, then each server's in listing order up to its
    ``maxTools`` (the kept ones count for no server's ``maxTools``: the model asked for them)."""
    left = budget - len(kept)
    found: dict[str, Share] = {}
    for config, listed in servers:
        share = found[config.name] = Share(listed=len(listed), left_out=away[config.name])
        cap = min(left, config.max_tools) if config.max_tools is not None else left
        share.limit = (
            f"maxTools {config.max_tools}"
            if config.max_tools is not None and config.max_tools < left
            else f"{budget} MCP tools a request"
        )
        taken = 0
        for info in listed:
            if info.name in share.left_out:
                continue
            if (config.name, info.name) in kept:
                share.offered.append(info)
            elif taken < cap:
                share.offered.append(info)
                taken += 1
            else:
                share.over.append(info)
        left -= taken
    return found


def note(server: str, share: Share, deferred: bool) -> str | None:
    """The one line saying which of ``server``'s tools the budget ``deferred`` (or left out), if any."""
    if not share.over:
        return None
    named = ", ".join(info.name for info in share.over[:NAMED])
    more = f" and {len(share.over) - NAMED} more" if len(share.over) > NAMED else ""
    how = (
        f"the model finds them with {SEARCH_TOOL} (/mcp lists them; to choose which are sent"
        if deferred
        else "/mcp lists them; choose"
    )
    return (
        f"MCP server {server!r}: {len(share.over)} of its {share.listed} tools "
        f"{'deferred' if deferred else 'left out'}, over the budget ({share.limit}): {named}{more} "
        f'({how} with "enabledTools", "disabledTools" or "maxTools" in its mcp.json entry, or '
        f'"mcp": {{"maxTools": N}} in settings.json{")" if deferred else ""})'
    )


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatchcase(name, pattern) for pattern in patterns)
