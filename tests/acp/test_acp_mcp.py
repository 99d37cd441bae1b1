"""The editor's MCP servers: ``session/new`` and ``session/load`` ``mcpServers`` become the
session's, and their tools are called like tether's own (real stdio server, scripted model)."""

from __future__ import annotations

import asyncio
import json
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
    done = [e["update"] for e in for_call(client.log, call_id) if "update" in e][-1]
    assert done["status"] == "completed", done
    return "".join(c["content"]["text"] for c in done["content"] if c["content"]["type"] == "text")


async def test_editor_mcp_servers_serve_tools_in_new_and_loaded_sessions(acp_env: AcpEnv) -> None:
    script = acp_env.script("new", [tool_reply("mcp__toy_box__env", {}, "m1"), text_reply("ok")])
    client = EditorClient(permission_choices=["allow_once", "allow_once"])
    async with acp_env.agent(client, script) as conn:
        init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        caps = init.agent_capabilities
        assert caps is not None and caps.mcp_capabilities is not None
        assert (caps.mcp_capabilities.http, caps.mcp_capabilities.sse) == (True, True)
        # an SSE server that is not there fails on its own; the session and the other server work
        sse = SseMcpServer(type="sse", name="old", url="http://127.0.0.1:9/sse", headers=[])
        session = await conn.new_session(cwd=str(acp_env.project), mcp_servers=[toy_server("new"), sse])
        assert session.field_meta is None
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


async def test_two_editor_servers_named_alike_once_escaped_are_both_kept(acp_env: AcpEnv) -> None:
    """``toy box`` and ``toy_box`` are both ``toy_box`` as tool-name prefixes: the second took the
    first's place without a word. Both serve now, the second as ``toy_box_2``, and a note names
    both."""
    calls = [tool_reply("mcp__toy_box__env", {}, "a1"), tool_reply("mcp__toy_box_2__env", {}, "b1")]
    script = acp_env.script("s", [*calls, text_reply("ok")])
    client = EditorClient(permission_choices=["allow_once", "allow_once"])
    second = toy_server("second").model_copy(update={"name": "toy_box"})
    async with acp_env.agent(client, script) as conn:
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(acp_env.project), mcp_servers=[toy_server("first"), second])
        assert session.field_meta is not None
        assert session.field_meta["tether"]["notice"] == (
            "the editor's MCP servers 'toy box' and 'toy_box' are both named 'toy_box' once escaped: "
            "the second is 'toy_box_2'"
        )
        await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[acp.text_block("env")]), 60)
    assert call_text(client, "a1").startswith("first ")
    assert call_text(client, "b1").startswith("second ")


async def test_an_mcp_tool_call_is_a_permission_request_unless_the_server_says_read_only(
    acp_env: AcpEnv,
) -> None:
    calls: list[tuple[str, str, dict[str, int]]] = [
        ("r1", "mcp__toy_box__add", {"a": 1, "b": 2}),
        ("p1", "mcp__toy_box__pid", {}),
    ]
    calls += [("p2", "mcp__toy_box__pid", {}), ("p3", "mcp__toy_box__pid", {})]
    replies = [tool_reply(name, arguments, call_id) for call_id, name, arguments in calls]
    script = acp_env.script("s", [*replies, text_reply("ok")])
    client = EditorClient(permission_choices=["reject_once", "allow_always"])
    async with acp_env.agent(client, script) as conn:
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(acp_env.project), mcp_servers=[toy_server("m")])
        await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[acp.text_block("go")]), 60)
    asked = [e["permission"] for e in client.log if "permission" in e]
    # add is read-only; the first pid call is rejected, the second allowed always, the third not asked
    assert [a["toolCallId"] for a in asked] == ["p1", "p2"]
    assert asked[0]["rawInput"] == {} and "pid" in asked[0]["title"]
    assert call_text(client, "r1") == "3"
    assert [e["update"]["status"] for e in for_call(client.log, "p1") if "update" in e][-1] == "failed"
    assert call_text(client, "p2") == call_text(client, "p3")  # the same server process


async def test_bad_mcp_entries_and_an_untrusted_project_file_are_a_notice_not_a_failed_session(
    acp_env: AcpEnv,
) -> None:
    config = acp_env.home / "config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "toy": {"command": sys.executable, "args": [str(TOY)], "env": {"TOY_MARK": "user"}},
                    "needs.key": {"command": "x", "env": {"KEY": "${TETHER_TEST_UNSET_KEY}"}},
                    "off": {"type": "websocket", "enabled": False},
                }
            }
        )
    )
    (acp_env.project / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"repo": {"command": "repo-server"}}})
    )
    script = acp_env.script("s", [tool_reply("mcp__toy__env", {}, "e1"), text_reply("ok")])
    client = EditorClient(permission_choices=["allow_once"])
    async with acp_env.agent(client, script) as conn:
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        # the editor's own bad entry (an env name with '=') is skipped too: it failed session/new
        bad = McpServerStdio(name="bad", command="x", args=[], env=[EnvVariable(name="A=B", value="1")])
        session = await conn.new_session(cwd=str(acp_env.project), mcp_servers=[bad])
        assert session.field_meta is not None
        notice = session.field_meta["tether"]["notice"]
        assert "the editor's MCP server 'bad': 'env' key 'A=B' is not an environment variable" in notice
        assert (
            "server 'needs.key': 'env.KEY': environment variable TETHER_TEST_UNSET_KEY is not set" in notice
        )
        assert f"{acp_env.project / '.mcp.json'}: not trusted" in notice and "'off'" not in notice
        await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[acp.text_block("env")]), 60)
        assert call_text(client, "e1").startswith("user ")
