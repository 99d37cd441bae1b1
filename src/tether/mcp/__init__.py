"""tether.mcp: tools from Model Context Protocol servers, on the official SDK (``mcp`` 2.x).

``McpServers`` starts a set of servers (stdio commands or streamable-HTTP URLs), adapts their
tools to ``AgentTool``s named ``mcp__<server>__<tool>`` and stops them again;
``load_mcp_servers`` reads the ``mcpServers`` files users already have (``docs/mcp.md``). An
``AgentSession`` takes an ``McpServers`` and does all of this itself; a bare ``Agent`` takes
``servers.tools()`` after ``servers.fit(tool_limit(model["api"]), len(own_tools))``. The SDK is
imported only when a server starts.
"""

# Names load on first use (module __getattr__), see tether/_lazy.py.
from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import lazy_exports

if TYPE_CHECKING:
    from tether.mcp.config import (
        McpServerConfig as McpServerConfig,
        read_mcp_file as read_mcp_file,
        server_config as server_config,
    )
    from tether.mcp.connection import McpConnection as McpConnection
    from tether.mcp.errors import McpConfigError as McpConfigError
    from tether.mcp.files import load_mcp_servers as load_mcp_servers
    from tether.mcp.servers import (
        McpServers as McpServers,
        ServerStatus as ServerStatus,
        format_statuses as format_statuses,
    )
    from tether.mcp.tool_budget import tool_limit as tool_limit
    from tether.mcp.tools import tool_name as tool_name

__getattr__, __dir__ = lazy_exports(__name__, __file__, globals())
