"""The editor's MCP servers: ``session/new`` and ``session/load`` ``mcpServers`` become the
session's, and their tools are called like tether's own (real stdio server, scripted model)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import acp
import pytest
from acp.schema import EnvVariable, McpServerStdio, SseMcpServer
from acp_support import AcpEnv, EditorClient, for_call, text_reply, tool_reply

pytestmark = pytest.mark.subprocess

TOY = Path(__file__).resolve().parents[1] / "mcp" / "toy_server.py"


def toy_server(mark: str) -> McpServerStdio:
    return McpServerStdio(
        name="toy box",
        command=sys.executable,
        args=[str(TOY)],
        env=[EnvVariable(name="TOY_MARK", value=mark)],
    )


def call_text(client: EditorClient, call_id: str) -> str:
    done = [e["update"] for e in for_call(client.log, call_id)][-1]
    assert done["status"] == "completed", done
    return "".join(c["content"]["text"] for c in done["content"] if c["content"]["type"] == "text")


async def test_editor_mcp_servers_serve_tools_in_new_and_loaded_sessions(acp_env: AcpEnv) -> None:
    script = acp_env.script("new", [tool_reply("mcp__toy_box__env", {}, "m1"), text_reply("ok")])
    client = EditorClient()
    async with acp_env.agent(client, script) as conn:
        init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        caps = init.agent_capabilities
        assert caps is not None and caps.mcp_capabilities is not None
        assert (caps.mcp_capabilities.http, caps.mcp_capabilities.sse) == (True, False)
        sse = SseMcpServer(type="sse", name="old", url="http://127.0.0.1:9/sse", headers=[])
        session = await conn.new_session(cwd=str(acp_env.project), mcp_servers=[toy_server("new"), sse])
        assert session.field_meta == {
            "tether": {"mcpServers": "partly unsupported (SSE, ACP)", "ignored": ["old"]}
        }
        await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[acp.text_block("env")]), 60)
        assert call_text(client, "m1").startswith("new ")
    # a new process loads the session with the editor's servers of now
    script = acp_env.script("load", [tool_reply("mcp__toy_box__env", {}, "m2"), text_reply("ok")])
    async with acp_env.agent(client, script) as conn:
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        await conn.load_session(
            cwd=str(acp_env.project), session_id=session.session_id, mcp_servers=[toy_server("loaded")]
        )
        await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[acp.text_block("env")]), 60)
        assert call_text(client, "m2").startswith("loaded ")
