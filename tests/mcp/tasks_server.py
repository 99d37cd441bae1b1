"""A minimal MCP server on protocol 2025-11-25, hand-written (newline-delimited JSON-RPC over
stdio), whose ``research`` tool requires task-augmented execution (``execution.taskSupport:
"required"``, a field the SDK's own server drops on its newer protocol) next to a plain ``echo``."""

from __future__ import annotations

import json
import sys
from typing import Any

TOOLS: list[dict[str, Any]] = [
    {
        "name": "research",
        "description": "Only runs as a task.",
        "inputSchema": {"type": "object", "properties": {}},
        "execution": {"taskSupport": "required"},
    },
    {
        "name": "echo",
        "description": "Echo the text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
]


def answer(request: dict[str, Any]) -> dict[str, Any] | None:
    method = request.get("method")
    if "id" not in request:
        return None  # a notification
    if method == "initialize":
        result: object = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}},
            "serverInfo": {"name": "tasks", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        arguments: dict[str, Any] = request.get("params", {}).get("arguments", {})
        result = {"content": [{"type": "text", "text": f"echo: {arguments.get('text')}"}]}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": f"no {method}"}}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


for line in sys.stdin:
    if line.strip():
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
