"""An MCP server listing many tools, built with the SDK's low-level server API, for the tool
budget tests: ``python many_tools_server.py COUNT`` serves ``tool_0000`` ... over stdio, each
adding its number to ``x`` (so a test can tell which one ran), and an empty resource list (so
the resource tools are offered, as with the SDK's high-level server). The low-level API lists
prepared ``Tool`` records: the high-level one builds a model per function, and 5,000 of them
took longer than a server's start-up timeout on a loaded machine."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
TOOLS = [
    types.Tool(name=f"tool_{number:04d}", description=f"Adds {number} to x.", input_schema=SCHEMA)
    for number in range(int(sys.argv[1]))
]


async def list_tools(_ctx: Any, _params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    number = int(params.name.removeprefix("tool_"))
    x = int((params.arguments or {})["x"])
    return types.CallToolResult(content=[types.TextContent(text=f"tool {number}: {x + number}")])


async def list_resources(
    _ctx: Any, _params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[])


server = Server("many", on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    print("many: serving stdio", file=sys.stderr, flush=True)
    anyio.run(main)
