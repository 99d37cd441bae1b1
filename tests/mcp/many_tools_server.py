"""An MCP server listing many tools, built with the SDK's own server API, for the tool budget
tests: ``python many_tools_server.py COUNT`` serves ``tool_0000`` ... over stdio, each adding
its number to ``x`` (so a test can tell which one ran)."""

from __future__ import annotations

import sys
from collections.abc import Callable

from mcp.server.mcpserver import MCPServer

server = MCPServer("many")


def numbered(number: int) -> Callable[[int], str]:
    def tool(x: int) -> str:
        return f"tool {number}: {x + number}"

    return tool


for number in range(int(sys.argv[1])):
    server.add_tool(numbered(number), name=f"tool_{number:04d}", description=f"Adds {number} to x.")

if __name__ == "__main__":
    print("many: serving stdio", file=sys.stderr, flush=True)
    server.run("stdio")
