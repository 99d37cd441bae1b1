"""A hand-written MCP server (newline-delimited JSON-RPC over stdio) that misbehaves the way a
careless or hostile server does, one way per mode (the first argument):

- ``schemas``: tools whose input schemas providers refuse, next to a sound ``echo``;
- ``many``: 10,000 tools;
- ``contents``: ``show`` returns one block of every content type, with a damaged image too;
- ``flood``: before each answer, 2,000 log notifications and 200 ``tools/list_changed``;
- ``exit``: answers ``initialize``, then exits;
- ``escapes``: tools whose names carry terminal escapes and a bidi override (one with a bad
  schema, one made the same as another's by making it safe);
- ``refuse``: refuses ``initialize`` with a message carrying the same;
- ``unlist``: answers ``tools/list`` with an object where the list of tools goes;
- ``unlisted``: answers ``initialize``, never ``tools/list``;
- ``endless``: answers a call with 2 MiB and no end of line, then waits;
- ``repeats``: ``echo`` listed three times over two pages (the last with another description),
  as a paginator repeating its pages does;
- ``huge``: ``echo`` with a 5 MB description, ``big`` with a 100 KB input schema;
- ``prompts_hang``: says it has prompts, never answers ``prompts/list``;
- ``prompts_error``: says it has prompts, answers ``prompts/list`` with an error.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

MODE = sys.argv[1] if len(sys.argv) > 1 else "schemas"
ECHO = {
    "name": "echo",
    "description": "Echo the text.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}
BAD_SCHEMAS: list[dict[str, Any]] = [
    {"name": "not_an_object", "inputSchema": {"type": "string"}},
    {"name": "bad_type", "inputSchema": {"type": "object", "properties": {"a": {"type": "strng"}}}},
    {"name": "bad_properties", "inputSchema": {"type": "object", "properties": ["a", "b"]}},
    {"name": "bad_required", "inputSchema": {"type": "object", "required": "a"}},
]
ESCAPES = "\x1b]0;owned\x07\x1b[2Jok\u202e"
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
CONTENTS: list[dict[str, Any]] = [
    {"type": "text", "text": "some text"},
    {"type": "image", "data": PIXEL, "mimeType": "image/png"},
    {"type": "image", "data": "!!! not base64 !!!", "mimeType": "image/png"},
    {"type": "image", "data": PIXEL, "mimeType": "text/html"},
    {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
    {"type": "resource_link", "uri": "file:///etc/passwd", "name": "passwd"},
    {"type": "resource", "resource": {"uri": "toy://x", "text": "embedded text"}},
    {
        "type": "resource",
        "resource": {"uri": "toy://b", "blob": "AAAA", "mimeType": "application/octet-stream"},
    },
]


def tools() -> list[dict[str, Any]]:
    if MODE == "many":
        return [{**ECHO, "name": f"echo{i}"} for i in range(10_000)]
    if MODE == "contents":
        return [{"name": "show", "inputSchema": {"type": "object"}}]
    if MODE == "schemas":
        return [ECHO, *BAD_SCHEMAS]
    if MODE == "huge":
        wide = {"type": "object", "properties": {"a": {"type": "string", "description": "y" * 100_000}}}
        return [{**ECHO, "description": "x" * 5_000_000}, {"name": "big", "inputSchema": wide}]
    if MODE == "escapes":
        twin = "".join(c if c.isalnum() else "_" for c in ESCAPES)  # the same name made safe
        bad = {"name": f"bad{ESCAPES}", "inputSchema": {"type": "string"}}
        return [ECHO, bad, {**ECHO, "name": f"x{ESCAPES}"}, {**ECHO, "name": f"x{twin}"}]
    return [ECHO]


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request: dict[str, Any]) -> dict[str, Any] | None:
    method = request.get("method")
    if "id" not in request:
        return None  # a notification
    if method == "initialize" and MODE == "refuse":
        return {"jsonrpc": "2.0", "id": request["id"], "error": {"code": 1, "message": f"no{ESCAPES}"}}
    if method == "initialize":
        result: object = {
            "protocolVersion": "2025-06-18",
            "capabilities": {
                "tools": {"listChanged": True},
                "logging": {},
                **({"prompts": {}} if MODE.startswith("prompts") else {}),
            },
            "serverInfo": {"name": "hostile", "version": "1"},
        }
    elif method == "tools/list" and MODE == "unlist":
        result = {"tools": {"echo": ECHO}}
    elif (method, MODE) in {("tools/list", "unlisted"), ("prompts/list", "prompts_hang")}:
        return None  # never answered
    elif method == "tools/list" and MODE == "repeats":
        again = {**ECHO, "description": "Echo it again."}
        second = request.get("params", {}).get("cursor") == "2"
        result = {"tools": [ECHO, again]} if second else {"tools": [ECHO], "nextCursor": "2"}
    elif method == "tools/list":
        result = {"tools": tools()}
    elif method == "tools/call":
        if MODE == "contents":
            result = {"content": CONTENTS}
        else:
            arguments: dict[str, Any] = request.get("params", {}).get("arguments", {})
            result = {"content": [{"type": "text", "text": f"echo: {arguments.get('text')}"}]}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": f"no {method}"}}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


for line in sys.stdin:
    if not line.strip():
        continue
    request = json.loads(line)
    reply = answer(request)
    if reply is None:
        continue
    if MODE == "flood" and request.get("method") != "initialize":
        for i in range(2000):
            send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/message",
                    "params": {"level": "info", "data": f"n{i}"},
                }
            )
        for _ in range(200):
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    if MODE == "endless" and request.get("method") == "tools/call":
        sys.stdout.write("x" * (2 << 20))
        sys.stdout.flush()
        time.sleep(600)
    send(reply)
    if MODE == "exit" and request.get("method") == "initialize":
        sys.exit(0)
