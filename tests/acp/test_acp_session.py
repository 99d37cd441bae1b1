"""A whole editor session with ``tether --mode acp`` (scripted model), driven by the SDK's client.

initialize → new session → prompts streaming text, thought and tool-call updates in order →
permission requests answered reject, then allow → cancel while a command runs → a new process
loads the session and replays its history → the same session continues from the CLI.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import acp
import pytest
from acp_support import (
    AcpEnv,
    EditorClient,
    kinds,
    status_trail,
    text_reply,
    thinking_reply,
    tool_reply,
)

from tether.session import SessionManager
from tether.store import default_db_path

pytestmark = pytest.mark.subprocess

TURN_TIMEOUT = 30


def stored_messages(acp_env: AcpEnv, session_id: str) -> list[dict[str, Any]]:
    with SessionManager.at(default_db_path({"TETHER_HOME": str(acp_env.home)})) as sessions:
        return [dict(m) for m in sessions.open(session_id, readonly=True).messages]


async def prompt(conn: acp.core.ClientSideConnection, session_id: str, text: str) -> str:
    response = await asyncio.wait_for(
        conn.prompt(session_id=session_id, prompt=[acp.text_block(text)]), TURN_TIMEOUT
    )
    return response.stop_reason


async def test_full_session_then_load_in_a_new_process(acp_env: AcpEnv) -> None:
    notes = acp_env.project / "notes.txt"
    notes.write_text("alpha\nbeta\n")
    edit = {"path": "notes.txt", "old_string": "beta", "new_string": "gamma"}
    script = acp_env.script(
        "first",
        [
            thinking_reply("Thinking about it", "Hello", " there"),
            tool_reply("read", {"path": "notes.txt"}, "r1"),
            tool_reply("edit", edit, "e1"),
            tool_reply("edit", edit, "e2"),
            text_reply("Fixed."),
            tool_reply("bash", {"command": "sleep 30", "escalate": True}, "b1"),  # outside the sandbox: asks
            text_reply("(the loop asks once more after the abort: the model sees it and stops)"),
        ],
    )
    client = EditorClient(permission_choices=["reject_once", "allow_once", "allow_always"])
    async with acp_env.agent(client, script) as conn:
        init = await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION, client_capabilities=client.capabilities()
        )
        assert init.protocol_version == acp.PROTOCOL_VERSION
        caps = init.agent_capabilities
        assert caps is not None and caps.load_session
        assert caps.prompt_capabilities is not None
        assert caps.prompt_capabilities.image and caps.prompt_capabilities.embedded_context
        assert [m.id for m in init.auth_methods or []] == ["environment"]
        assert init.agent_info is not None and init.agent_info.name == "tether"

        session = await conn.new_session(cwd=str(acp_env.project), mcp_servers=[])
        session_id = session.session_id
        assert session.modes is not None and session.modes.current_mode_id == "ask"
        assert {m.id for m in session.modes.available_modes} == {"ask", "auto"}
        categories = [
            option.root.category if hasattr(option, "root") else option.category
            for option in session.config_options or []
        ]  # type: ignore[union-attr]
        assert "mode" in categories and "model" in categories

        # 1. Text and thinking stream in order; the user's prompt is not echoed back.
        assert await prompt(conn, session_id, "hello") == "end_turn"
        updates = client.updates()
        assert kinds(updates) == ["agent_thought_chunk", "agent_message_chunk", "agent_message_chunk"]
        assert [u["content"]["text"] for u in updates] == ["Thinking about it", "Hello", " there"]
        client.clear()

        # 2. Tool calls: read; an edit the user rejects; the same edit allowed once.
        assert await prompt(conn, session_id, "fix the notes") == "end_turn"
        log = client.log
        assert status_trail(log, "r1") == ["pending", "in_progress", "completed"]
        assert status_trail(log, "e1") == ["pending", "permission", "failed"]
        assert status_trail(log, "e2") == ["pending", "permission", "in_progress", "completed"]
        read_start = next(e["update"] for e in log if e.get("update", {}).get("toolCallId") == "r1")
        assert read_start["kind"] == "read" and read_start["title"] == "Read notes.txt"
        assert read_start["locations"] == [{"path": str(notes)}]
        read_done = [e["update"] for e in log if e.get("update", {}).get("toolCallId") == "r1"][-1]
        assert read_done["content"][0]["content"]["text"] == "1\talpha\n2\tbeta"

        permission = next(e for e in log if "permission" in e)
        assert [o["kind"] for o in permission["options"]] == ["allow_once", "allow_always", "reject_once"]
        assert permission["permission"]["content"] == [
            {"type": "diff", "path": str(notes), "oldText": "alpha\nbeta\n", "newText": "alpha\ngamma\n"}
        ]
        edit_done = [e["update"] for e in log if e.get("update", {}).get("toolCallId") == "e2"][-1]
        assert edit_done["content"] == permission["permission"]["content"]
        assert edit_done["locations"] == [{"path": str(notes), "line": 2}]
        assert notes.read_text() == "alpha\ngamma\n"
        assert kinds(client.updates())[-1] == "agent_message_chunk"
        assert "user_message_chunk" not in kinds(client.updates())
        rejected = [m for m in stored_messages(acp_env, session_id) if m.get("toolCallId") == "e1"]
        assert rejected[0]["isError"] and "declined" in rejected[0]["content"][0]["text"]
        client.clear()

        # 3. Auto mode; a command (which still asks) is allowed, then cancelled while it runs.
        await conn.set_session_mode(session_id=session_id, mode_id="auto")
        mode_updates = client.updates()
        assert kinds(mode_updates) == ["current_mode_update", "config_option_update"]
        assert mode_updates[0]["currentModeId"] == "auto"
        assert mode_updates[1]["configOptions"][0]["currentValue"] == "auto"

        def cancel_when_running(update: dict[str, Any]) -> None:
            if update.get("toolCallId") == "b1" and update.get("status") == "in_progress":
                asyncio.get_running_loop().create_task(conn.cancel(session_id=session_id))

        client.on_update = cancel_when_running
        assert await prompt(conn, session_id, "run something slow") == "cancelled"
        assert status_trail(client.log, "b1") == ["pending", "permission", "in_progress", "failed"]
        client.on_update = None

    # 4. A new process loads the session and replays the conversation, user turns included.
    replay_client = EditorClient()
    later = acp_env.script("second", [text_reply("Welcome back")])
    async with acp_env.agent(replay_client, later) as conn:
        await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION, client_capabilities=replay_client.capabilities()
        )
        loaded = await conn.load_session(cwd=str(acp_env.project), session_id=session_id, mcp_servers=[])
        assert loaded is not None and loaded.modes is not None
        history = replay_client.updates()
        assert [(u["sessionUpdate"], u.get("toolCallId"), u.get("status")) for u in history] == [
            ("user_message_chunk", None, None),
            ("agent_thought_chunk", None, None),
            ("agent_message_chunk", None, None),
            ("user_message_chunk", None, None),
            ("tool_call", "r1", "pending"),
            ("tool_call_update", "r1", "completed"),
            ("tool_call", "e1", "pending"),
            ("tool_call_update", "e1", "failed"),
            ("tool_call", "e2", "pending"),
            ("tool_call_update", "e2", "completed"),
            ("agent_message_chunk", None, None),
            ("user_message_chunk", None, None),
            ("tool_call", "b1", "pending"),
            ("tool_call_update", "b1", "failed"),
        ]
        texts = [u["content"]["text"] for u in history if isinstance(u.get("content"), dict)]
        assert texts[:3] == ["hello", "Thinking about it", "Hello there"]
        assert "Fixed." in texts and "run something slow" in texts
        replay_client.clear()
        assert await prompt(conn, session_id, "are you back?") == "end_turn"
        assert [u["content"]["text"] for u in replay_client.updates()] == ["Welcome back"]

    # 5. It is an ordinary tether session: listed, and resumable from the CLI.
    env = acp_env.env(TETHER_SCRIPTED=str(acp_env.script("third", [text_reply("From the CLI")])))
    listing = subprocess.run(
        [sys.executable, "-m", "tether.cli", "sessions"],
        cwd=acp_env.project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert session_id in listing.stdout, listing.stderr
    resumed = subprocess.run(
        [sys.executable, "-m", "tether.cli", "--resume", session_id, "-p", "and now?"],
        cwd=acp_env.project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "From the CLI"
    assert [m["role"] for m in stored_messages(acp_env, session_id)][-4:] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]
