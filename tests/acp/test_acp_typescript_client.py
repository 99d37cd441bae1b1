"""Interoperability: the official TypeScript SDK's client (``@agentclientprotocol/sdk``) drives
``tether --mode acp``: initialize, a new session, a prompt with embedded context that streams a
thought, a tool call needing permission and an answer, then ``session/list``.

The Node script is ``ts_client/client.mjs``; its dependency is installed with ``npm ci`` into the
git-ignored ``ts_client/node_modules`` the first time.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from acp_support import AcpEnv, text_reply

pytestmark = [pytest.mark.node, pytest.mark.subprocess]

CLIENT_DIR = Path(__file__).parent / "ts_client"


def ensure_sdk_installed() -> None:
    if (CLIENT_DIR / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json").is_file():
        return
    npm = shutil.which("npm")
    assert npm is not None, "npm is needed to install the TypeScript ACP SDK"
    done = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund"],
        cwd=CLIENT_DIR,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_the_typescript_sdk_client_holds_a_session(acp_env: AcpEnv) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    ensure_sdk_installed()
    script = acp_env.script(
        "ts",
        [
            {
                "content": [
                    {"type": "thinking", "chunks": ["Let me look"]},
                    {
                        "type": "toolCall",
                        "id": "b1",
                        "name": "bash",
                        "arguments": {"command": "echo hi", "escalate": True},
                    },
                ]
            },
            text_reply("It says ", "alpha."),
        ],
    )
    done = subprocess.run(
        [node, str(CLIENT_DIR / "client.mjs"), json.dumps(acp_env.command()), str(acp_env.project)],
        env=acp_env.env(TETHER_SCRIPTED=str(script)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)

    assert result["init"]["protocolVersion"] == 1
    assert result["init"]["agentCapabilities"]["loadSession"] is True
    session_id = result["session"]["sessionId"]
    assert result["prompt"] == {"stopReason": "end_turn"}
    assert [s["sessionId"] for s in result["listed"]["sessions"]] == [session_id]

    log = result["log"]
    trail = [
        entry["update"]["sessionUpdate"] + ":" + entry["update"].get("status", "")
        if "update" in entry
        else "permission"
        for entry in log
    ]
    assert trail == [
        "agent_thought_chunk:",
        "tool_call:pending",
        "permission",
        "tool_call_update:in_progress",
        "tool_call_update:",  # live output
        "tool_call_update:completed",
        "agent_message_chunk:",
        "agent_message_chunk:",
    ]
    assert log[2]["options"] == ["allow_once", "allow_always", "reject_once"]
    assert log[5]["update"]["content"][0]["content"]["text"] == "hi\n"
    assert "".join(e["update"]["content"]["text"] for e in log[-2:]) == "It says alpha."
    assert result["exitCode"] == 0
