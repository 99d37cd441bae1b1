"""The error of an MCP configuration, apart from the file finder (``files``) and the reader
(``config``) that both raise it: the finder loads the reader only when a file exists."""

from __future__ import annotations

from tether.errors import UserError


class McpConfigError(UserError, ValueError):
    """An MCP configuration that cannot be used; the message names the file and the server."""
