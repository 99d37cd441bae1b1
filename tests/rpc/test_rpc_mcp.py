"""Third-party MCP servers over RPC: ``tether --mode rpc --mcp-config`` with ``mcp-server-time``
(PyPI) and the reference filesystem and everything servers (npm), called by the scripted model;
every frame is checked against the committed schema (``CheckedClient``)."""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest
from rpc_support import RpcEnv, text_reply

from mcp_packages import everything_server, filesystem_server, time_server

pytestmark = [
    pytest.mark.node,
    pytest.mark.subprocess,
    pytest.mark.skipif(shutil.which("npm") is None, reason="needs npm for the npm servers"),
]


def text(message: dict[str, Any]) -> str:
    return "".join(b["text"] for b in message["content"] if b["type"] == "text")


async def test_rpc_session_calls_tools_of_three_third_party_servers(rpc: RpcEnv) -> None:
    files = rpc.project.resolve() / "files"
    files.mkdir()
    (files / "a.txt").write_text("alpha")
    config = rpc.home / "servers.json"
    servers = {"time": time_server(), "fs": filesystem_server(files), "everything": everything_server()}
    config.write_text(json.dumps({"mcpServers": servers}))
    calls = [
        (
            "mcp__time__convert_time",
            {"source_timezone": "UTC", "time": "08:30", "target_timezone": "Asia/Kolkata"},
        ),
        ("mcp__fs__list_directory", {"path": str(files)}),
        ("mcp__everything__echo", {"message": "over rpc"}),
    ]
    rpc.script(
        [
            {
                "content": [
                    {"type": "toolCall", "id": f"call_{i}", "name": name, "arguments": arguments}
                    for i, (name, arguments) in enumerate(calls)
                ]
            },
            text_reply("done"),
        ]
    )
    async with rpc.spawn("--no-session", "--mcp-config", str(config)) as client:
        result = await client.prompt("go")
        assert result["status"] == "completed"
        messages = await client.get_messages()
    converted, listed, echoed = [m for m in messages if m["role"] == "toolResult"]
    assert not any(m["isError"] for m in (converted, listed, echoed))
    assert json.loads(text(converted))["target"]["datetime"].split("T")[1].startswith("14:00")
    assert text(listed) == "[FILE] a.txt"
    assert text(echoed) == "Echo: over rpc"
    assert client.process.returncode == 0
