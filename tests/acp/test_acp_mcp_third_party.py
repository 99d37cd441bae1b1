"""Third-party MCP servers an editor sends in ``session/new``: ``mcp-server-time`` (PyPI) and the
reference filesystem and everything servers (npm) over stdio, called by the scripted model through
``tether --mode acp`` driven by the ACP SDK's client."""

from __future__ import annotations

import asyncio
import json
import shutil
from typing import Any

import acp
import pytest
from acp.schema import AcpMcpServer, EnvVariable, HttpMcpServer, McpServerStdio, SseMcpServer
from acp_support import AcpEnv, EditorClient, for_call, text_reply

from mcp_packages import everything_server, filesystem_server, time_server

pytestmark = [
    pytest.mark.node,
    pytest.mark.subprocess,
    pytest.mark.skipif(shutil.which("npm") is None, reason="needs npm for the npm servers"),
]


def editor_server(name: str, entry: dict[str, Any]) -> McpServerStdio:
    """An ``mcpServers`` entry as an editor sends it over ACP."""
    return McpServerStdio(
        name=name,
        command=entry["command"],
        args=entry["args"],
        env=[EnvVariable(name=k, value=v) for k, v in entry.get("env", {}).items()],
    )


def call_text(client: EditorClient, call_id: str) -> str:
    done = [e["update"] for e in for_call(client.log, call_id) if "update" in e][-1]
    assert done["status"] == "completed", done
    return "".join(c["content"]["text"] for c in done["content"] if c["content"]["type"] == "text")


async def test_editor_sends_three_third_party_servers_and_their_tools_are_called(acp_env: AcpEnv) -> None:
    files = acp_env.project / "files"
    files.mkdir()
    calls = [
        (
            "t1",
            "mcp__time__convert_time",
            {"source_timezone": "UTC", "time": "23:15", "target_timezone": "UTC"},
        ),
        ("f1", "mcp__fs__write_file", {"path": str(files / "from-editor.txt"), "content": "acp"}),
        ("e1", "mcp__everything__get-sum", {"a": 40, "b": 2}),
    ]
    script = acp_env.script(
        "s",
        [
            {
                "content": [
                    {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}
                    for call_id, name, arguments in calls
                ]
            },
            text_reply("ok"),
        ],
    )
    client = EditorClient(permission_choices=["allow_once"])
    servers: list[HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio] = [
        editor_server("time", time_server()),
        editor_server("fs", filesystem_server(files)),
        editor_server("everything", everything_server()),
    ]
    async with acp_env.agent(client, script) as conn:
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(acp_env.project), mcp_servers=servers)
        done = await asyncio.wait_for(
            conn.prompt(session_id=session.session_id, prompt=[acp.text_block("go")]), 120
        )
        assert done.stop_reason == "end_turn"
    assert json.loads(call_text(client, "t1"))["target"]["datetime"].split("T")[1].startswith("23:15")
    # the write (not read-only, unlike the other two) was a permission request first
    assert [e["permission"]["toolCallId"] for e in client.log if "permission" in e] == ["f1"]
    assert "from-editor.txt" in call_text(client, "f1")
    assert (files / "from-editor.txt").read_text() == "acp"
    assert call_text(client, "e1") == "The sum of 40 and 2 is 42."
