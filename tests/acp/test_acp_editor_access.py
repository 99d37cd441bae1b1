"""When the editor offers ``fs/*`` and ``terminal/*``, the tools go through it, not the disk.

The test client keeps an unsaved buffer of ``notes.txt`` that differs from the file on disk: the
agent must read the buffer, write its edit back to the editor (the disk stays as it was), and run
its command in the editor's terminal.
"""

from __future__ import annotations

import asyncio
from typing import Any

import acp
import pytest
from acp_support import AcpEnv, EditorClient, status_trail, text_reply, tool_reply

pytestmark = pytest.mark.subprocess


def call_updates(client: EditorClient, call_id: str) -> list[dict[str, Any]]:
    return [u for u in client.updates() if u.get("toolCallId") == call_id]


async def test_reads_edits_and_commands_go_through_the_editor(acp_env: AcpEnv) -> None:
    notes = acp_env.project / "notes.txt"
    notes.write_text("on disk\n")
    script = acp_env.script(
        "editor",
        [
            tool_reply("read", {"path": "notes.txt"}, "r1"),
            tool_reply("edit", {"path": "notes.txt", "old_string": "unsaved", "new_string": "saved"}, "e1"),
            tool_reply("write", {"path": "new/file.txt", "content": "fresh\n"}, "w1"),
            tool_reply("bash", {"command": "echo from-the-terminal; exit 3"}, "b1"),
            tool_reply("bash", {"command": "echo again"}, "b2"),
            text_reply("All done."),
        ],
    )
    client = EditorClient(
        buffers={str(notes): "unsaved line\n"}, terminals_enabled=True, permission_choices=["allow_always"]
    )
    async with acp_env.agent(client, script) as conn:
        await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION, client_capabilities=client.capabilities()
        )
        session = await conn.new_session(cwd=str(acp_env.project), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="auto")
        response = await asyncio.wait_for(
            conn.prompt(session_id=session.session_id, prompt=[acp.text_block("go")]), 30
        )
    assert response.stop_reason == "end_turn"

    # read saw the editor's buffer, not the disk
    read_done = call_updates(client, "r1")[-1]
    assert read_done["content"][0]["content"]["text"] == "1\tunsaved line"

    # edit and write went to the editor; in auto mode edits inside the workspace do not ask
    assert status_trail(client.log, "e1") == ["pending", "in_progress", "completed"]
    assert status_trail(client.log, "w1") == ["pending", "in_progress", "completed"]
    new_file = acp_env.project / "new" / "file.txt"
    assert client.writes == [(str(notes), "saved line\n"), (str(new_file), "fresh\n")]
    assert notes.read_text() == "on disk\n"
    assert not new_file.exists()
    assert call_updates(client, "e1")[-1]["content"] == [
        {"type": "diff", "path": str(notes), "oldText": "unsaved line\n", "newText": "saved line\n"}
    ]
    assert call_updates(client, "w1")[-1]["content"] == [
        {"type": "diff", "path": str(new_file), "newText": "fresh\n"}
    ]

    # bash asked (answered: always allow), then ran in the editor's terminal, shown live in the
    # tool call; exit 3 fails it
    assert status_trail(client.log, "b1") == ["pending", "permission", "in_progress", "-", "failed"]
    assert client.commands[0][1:] == ["-c", "echo from-the-terminal; exit 3"]
    terminal = [{"type": "terminal", "terminalId": "term-1"}]
    assert call_updates(client, "b1")[2]["content"] == terminal
    assert call_updates(client, "b1")[-1]["content"] == terminal
    assert client.terminals["term-1"].output.decode() == "from-the-terminal\n"
    # "always allow" covered the next command: it ran without asking
    assert status_trail(client.log, "b2") == ["pending", "in_progress", "-", "completed"]
    assert client.commands[1][1:] == ["-c", "echo again"]


async def test_cancel_while_a_permission_request_is_open(acp_env: AcpEnv) -> None:
    """The client answers an open permission request ``cancelled`` after cancelling: the call is
    refused and the prompt reports ``cancelled``."""
    script = acp_env.script(
        "pending",
        # confined bash asks nobody; run outside the sandbox, it asks
        [tool_reply("bash", {"command": "echo never", "escalate": True}, "b1"), text_reply("not reached")],
    )
    client = EditorClient(permission_choices=[])
    async with acp_env.agent(client, script) as conn:
        await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION, client_capabilities=client.capabilities()
        )
        session = await conn.new_session(cwd=str(acp_env.project), mcp_servers=[])

        async def cancel_first() -> None:
            await conn.cancel(session_id=session.session_id)

        client.on_permission = cancel_first
        response = await asyncio.wait_for(
            conn.prompt(session_id=session.session_id, prompt=[acp.text_block("go")]), 30
        )
    assert response.stop_reason == "cancelled"
    assert status_trail(client.log, "b1") == ["pending", "permission", "failed"]


async def test_images_and_embedded_context_reach_the_conversation(acp_env: AcpEnv) -> None:
    """A prompt with an image and an embedded file is stored as one user message; loading the
    open session again replays it (text with the inlined context, then the image)."""
    script = acp_env.script("image", [text_reply("Nice picture")])
    client = EditorClient()
    async with acp_env.agent(client, script) as conn:
        await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION, client_capabilities=client.capabilities()
        )
        session = await conn.new_session(cwd=str(acp_env.project), mcp_servers=[])
        prompt = conn.prompt(
            session_id=session.session_id,
            prompt=[
                acp.text_block("What is in "),
                acp.resource_block(
                    acp.embedded_text_resource("file:///p/a.txt", "apples", mime_type="text/plain")
                ),
                acp.image_block("iVBORw0KGgo=", "image/png"),
            ],
        )
        response = await asyncio.wait_for(prompt, 30)
        assert response.stop_reason == "end_turn"
        client.clear()
        await conn.load_session(cwd=str(acp_env.project), session_id=session.session_id, mcp_servers=[])
    replayed = client.updates()
    assert [u["sessionUpdate"] for u in replayed] == [
        "user_message_chunk",
        "user_message_chunk",
        "agent_message_chunk",
    ]
    assert (
        replayed[0]["content"]["text"] == 'What is in \n<context ref="file:///p/a.txt">\napples\n</context>\n'
    )
    assert replayed[1]["content"] == {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    assert replayed[2]["content"]["text"] == "Nice picture"
