"""MCP tools over RPC: nobody answers approval questions in RPC mode, so a call of a tool the
server does not mark read-only is refused like ``bash``, unless the server runs with ``--yes``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from rpc_support import RpcEnv, text_reply

pytestmark = pytest.mark.subprocess

TOY = Path(__file__).resolve().parents[1] / "mcp" / "toy_server.py"


def calls(*names: str) -> dict[str, Any]:
    return {
        "content": [
            {
                "type": "toolCall",
                "id": f"call_{i}",
                "name": name,
                "arguments": {"a": 1, "b": 2} if "add" in name else {},
            }
            for i, name in enumerate(names)
        ]
    }


async def test_a_risky_mcp_call_is_refused_without_yes_and_a_read_only_one_runs(rpc: RpcEnv) -> None:
    config = rpc.home / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"toy": {"command": sys.executable, "args": [str(TOY)]}}}))
    for yes in ((), ("--yes",)):
        rpc.script([calls("mcp__toy__add", "mcp__toy__pid"), text_reply("done")])
        async with rpc.spawn("--no-session", *yes, "--mcp-config", str(config)) as client:
            assert (await client.prompt("go"))["status"] == "completed"
            added, pid = [m for m in await client.get_messages() if m["role"] == "toolResult"]
        assert (added["isError"], added["content"][0]["text"]) == (False, "3")
        if yes:
            assert not pid["isError"] and pid["content"][0]["text"].isdigit()
        else:
            assert pid["isError"] and "rerun with --yes" in pid["content"][0]["text"]
