"""MCP resources as three agent tools, pi's and Codex's: ``list_mcp_resources``,
``list_mcp_resource_templates`` and ``read_mcp_resource``.

They are offered while at least one server said it has resources. The lists are JSON in pi's
shape (``{"resources": [{"server", "uri", "name", ...}], "nextCursor"}``): with ``server`` one
page of that server (``cursor`` continues it), without it every page of every server with
resources. A read gives text as text and images as images; other binary contents are a line
saying what they are. Listing and reading change nothing on the server (the specification's
resources are data to read), so these tools need no approval, unlike a server's own tools.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from tether.agent.tool import AgentTool, AgentToolResult, ToolUpdate
from tether.ai.abort import AbortSignal
from tether.errors import ToolError
from tether.mcp.tools import within_budget

if TYPE_CHECKING:
    from mcp import Client

    from tether.mcp.connection import McpConnection
    from tether.wire import ImageContent, TextContent

MAX_PAGES = 100
"""Pages read from one server when listing everything: a paginator that never ends must not hang."""

_PAGE = {
    "type": "object",
    "properties": {
        "server": {"type": "string", "description": "Only this server's (one page); default: every server's"},
        "cursor": {"type": "string", "description": "The nextCursor of the previous page of this server"},
    },
}


def resource_tools(connections: Callable[[], Sequence[McpConnection]]) -> list[AgentTool]:
    """The three tools over whichever ``connections()`` have resources at the time of a call."""

    def with_resources(server: str | None) -> list[McpConnection]:
        chosen = [c for c in connections() if c.has_resources and (server is None or c.name == server)]
        if server is not None and not chosen:
            names = ", ".join(c.name for c in connections() if c.has_resources) or "none"
            raise ToolError(f"No MCP server {server!r} with resources (servers with resources: {names}).")
        return chosen

    def lister(
        key: str, fetch: Callable[[Client, str | None], Awaitable[tuple[list[Any], str | None]]]
    ) -> Any:
        async def execute(
            _id: str, params: Any, _signal: AbortSignal | None, _update: ToolUpdate | None
        ) -> AgentToolResult[Any]:
            server, cursor = params.get("server"), params.get("cursor")
            items: list[dict[str, Any]] = []
            answer: dict[str, Any] = {}
            for connection in with_resources(server):
                page_cursor = cursor if server is not None else None
                for _ in range(1 if server is not None else MAX_PAGES):
                    page, page_cursor = await connection.request(
                        f"listing {key}", lambda client, c=page_cursor: fetch(client, c)
                    )
                    items.extend({"server": connection.name, **entry} for entry in page)
                    if page_cursor is None:
                        break
                if server is not None:
                    answer["server"] = server
                    if page_cursor is not None:
                        answer["nextCursor"] = page_cursor
            answer[key] = items
            listing = within_budget(json.dumps(answer, indent=2, ensure_ascii=False))
            return _text(listing, {"count": len(items)})

        return execute

    async def resources(client: Client, cursor: str | None) -> tuple[list[Any], str | None]:
        page = await client.list_resources(cursor=cursor)
        return [_described(r, uri=r.uri) for r in page.resources], page.next_cursor

    async def templates(client: Client, cursor: str | None) -> tuple[list[Any], str | None]:
        page = await client.list_resource_templates(cursor=cursor)
        return [_described(t, uriTemplate=t.uri_template) for t in page.resource_templates], page.next_cursor

    async def read(
        _id: str, params: Any, _signal: AbortSignal | None, _update: ToolUpdate | None
    ) -> AgentToolResult[Any]:
        server, uri = params["server"], params["uri"]
        [connection] = with_resources(server)
        result = await connection.request(f"reading {uri}", lambda client: client.read_resource(uri))
        return _contents(server, uri, result.contents)

    return [
        _tool(
            "list_mcp_resources",
            "List the resources (data such as files, records or documents) of the MCP servers, as JSON.",
            _PAGE,
            lister("resources", resources),
        ),
        _tool(
            "list_mcp_resource_templates",
            "List the URI templates of resources the MCP servers can give but do not list, as JSON.",
            _PAGE,
            lister("resourceTemplates", templates),
        ),
        _tool(
            "read_mcp_resource",
            "Read one resource of an MCP server by its URI (from list_mcp_resources, a template, or a "
            "resource link in a tool result).",
            {
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "The MCP server's name"},
                    "uri": {"type": "string", "description": "The resource's URI"},
                },
                "required": ["server", "uri"],
            },
            read,
        ),
    ]


def _tool(name: str, description: str, schema: dict[str, Any], execute: Any) -> AgentTool:
    return AgentTool(
        name=name,
        label=name.replace("_", " "),
        description=description,
        parameters=schema,
        execute=execute,
        metadata={"mcp": {"resources": True, "readOnly": True}, "needs_approval": False},
    )


def _described(item: Any, **first: str) -> dict[str, Any]:
    """A resource or template in pi's JSON shape: its address first, then what describes it."""
    entry: dict[str, Any] = {**first, "name": item.name}
    for key, value in (
        ("title", item.title),
        ("description", item.description),
        ("mimeType", item.mime_type),
    ):
        if value:
            entry[key] = value
    size = getattr(item, "size", None)
    if size is not None:
        entry["size"] = size
    return entry


def _contents(server: str, uri: str, contents: Sequence[Any]) -> AgentToolResult[Any]:
    import mcp_types

    blocks: list[TextContent | ImageContent] = []
    for item in contents:
        mime = item.mime_type or ""
        if isinstance(item, mcp_types.TextResourceContents):
            blocks.append({"type": "text", "text": within_budget(item.text)})
        elif mime.startswith("image/"):
            blocks.append({"type": "image", "data": cast(str, item.blob), "mimeType": mime})
        else:
            size = len(item.blob) * 3 // 4
            blocks.append(
                {
                    "type": "text",
                    "text": f"[binary resource {item.uri} ({mime or 'unknown type'}, about {size} bytes), not shown]",
                }
            )
    if not blocks:
        blocks.append({"type": "text", "text": f"(the resource {uri} is empty)"})
    return AgentToolResult(content=blocks, details={"server": server, "uri": uri})


def _text(text: str, details: dict[str, Any]) -> AgentToolResult[Any]:
    return AgentToolResult(content=[{"type": "text", "text": text}], details=details)
