"""``search_mcp_tools``: the tool the model finds deferred MCP tools with.

A server listing more tools than a request may declare has the rest deferred
(``tether.mcp.tool_budget``). The model is not told their schemas, only that they exist: this
tool's description says how many are deferred and from which servers, and a search by words of
a tool's name or description returns the best matches (name and description) and makes them
callable from the model's next call on, as Claude Code's tool search loads a deferred tool for
the next turn (the OpenAI Agents SDK and Codex only filter a server's tools by name:
``tool_filter``, ``enabled_tools``, which ``mcp.json`` entries have too).

Matching is plain and predictable, so the model can search again with other words: each word
of the query found in a tool's server or name counts twice, in its description once; the exact
name (``tool`` or ``mcp__server__tool``) wins; ties keep the configuration and listing order.
The result's ``details.found`` holds the (server, tool) pairs, so a resumed session finds them
again without asking the model (``McpServers.find``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tether.agent.tool import AgentTool, AgentToolResult, ToolUpdate
from tether.ai.abort import AbortSignal
from tether.errors import ToolError

if TYPE_CHECKING:
    from tether.mcp.connection import ToolInfo

SEARCH_TOOL = "search_mcp_tools"
DEFAULT_FOUND = 5
MAX_FOUND = 20
"""The most tools one search makes available: each costs its schema on every request after."""
DESCRIPTION_CHARS = 300
"""Of a found tool's description in the result: enough to choose, short enough for 20 of them."""

_WORD = re.compile(r"[a-z0-9]+")

Candidate = tuple[str, "ToolInfo", str]
"""A deferred tool: its server, what the server listed, its agent-side name."""


def search(query: str, candidates: Sequence[Candidate], limit: int) -> list[Candidate]:
    """The ``limit`` best matches of ``query`` among ``candidates`` (see the module docstring)."""
    wanted = query.strip().lower()
    words = _WORD.findall(wanted)
    scored: list[tuple[float, int, Candidate]] = []
    for index, candidate in enumerate(candidates):
        server, info, name = candidate
        if wanted in (info.name.lower(), name.lower()):
            scored.append((float("inf"), index, candidate))
            continue
        where = f"{server} {info.name}".lower()
        description = info.description.lower()
        score = sum(2 if word in where else 1 if word in description else 0 for word in words)
        if score:
            scored.append((score, index, candidate))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [candidate for _score, _index, candidate in scored[:limit]]


def search_tool(
    deferred: Callable[[], list[Candidate]], find: Callable[[list[tuple[str, str]]], list[str]]
) -> AgentTool:
    """The search tool over ``deferred()`` (the tools deferred at the time of a call); ``find``
    makes the chosen (server, tool) pairs available and returns their agent-side names."""

    async def execute(
        _id: str, params: Any, _signal: AbortSignal | None, _update: ToolUpdate | None
    ) -> AgentToolResult[Any]:
        query = params.get("query", "")
        limit = params.get("limit", DEFAULT_FOUND)
        candidates = deferred()
        if not candidates:
            raise ToolError("No MCP tools are deferred now: every MCP tool is already declared.")
        matches = search(query, candidates, min(limit, MAX_FOUND))
        if not matches:
            servers = ", ".join(dict.fromkeys(server for server, _info, _name in candidates))
            return AgentToolResult(
                content=[
                    {
                        "type": "text",
                        "text": f"No deferred MCP tool matches {query!r} ({len(candidates)} are deferred, of "
                        f"the servers {servers}): search again with other words of a tool's name or "
                        "description.",
                    }
                ],
                details={"found": []},
            )
        pairs = [(server, info.name) for server, info, _name in matches]
        names = find(pairs)
        lines = [
            f"- {name}: {_one_line(info.description) or '(no description)'}"
            for name, (_server, info, _old) in zip(names, matches, strict=True)
        ]
        text = f"{len(names)} MCP tools found; they can be called from your next step on:\n" + "\n".join(
            lines
        )
        found = [[server, tool] for server, tool in pairs]  # as the stored transcript will have it
        return AgentToolResult(content=[{"type": "text", "text": text}], details={"found": found})

    return AgentTool(
        name=SEARCH_TOOL,
        label="search MCP tools",
        description="",  # set by ``describe`` whenever the deferred tools change
        parameters={
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Words of the tool's name or description, or its exact name",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_FOUND,
                    "description": f"How many tools to make available at most (default {DEFAULT_FOUND})",
                },
            },
            "required": ["query"],
        },
        execute=execute,
    )


def describe(count: int, servers: Sequence[str]) -> str:
    """The search tool's description: the model learns here that more tools exist, and where."""
    return (
        f"Find MCP tools that are not declared yet: {count} tools of the MCP servers "
        f"{', '.join(servers)} are deferred to keep requests small. Search by words of the tool's "
        "name or description (or its exact name); the tools found can be called from your next "
        "step on. Search before telling the user a server cannot do something."
    )


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= DESCRIPTION_CHARS else line[: DESCRIPTION_CHARS - 1] + "…"
