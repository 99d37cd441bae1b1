"""pi's display calls over RPC: ``editor`` (with its ``timeout``), ``setStatus``, ``setWidget``,
``setTitle`` and ``set_editor_text`` as ``extension_ui_request`` frames of pi's shape (checked
against the committed schema by ``CheckedClient``), a dialog nobody answers dismissed by its
timeout on the agent's side, and ``send_message``'s custom message reaching the conversation."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import pytest
from rpc_support import RpcEnv, bash_reply, next_of, text_reply

pytestmark = pytest.mark.subprocess

NOTES = Path(__file__).resolve().parents[2] / "examples" / "extensions" / "notes.py"

SHOWY = textwrap.dedent(
    """
    def setup(api):
        @api.command("show")
        async def show(args, ctx):
            ctx.ui.set_title("tether - showy")
            ctx.ui.set_editor_text("draft")
            answer = await ctx.ui.confirm("Quick?", "answer within the limit", timeout=0.3)
            picked = await ctx.ui.select("Pick", ["a", "b"], timeout=0.3)
            return f"confirm={answer} select={picked} mode={ctx.mode} ui={ctx.has_ui}"
    """
)


def _fields(frame: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in frame.items() if k not in ("type", "id")}


async def test_editor_status_widget_and_a_note_sent_with_the_next_prompt(rpc: RpcEnv) -> None:
    rpc.script([bash_reply("true"), text_reply("ran it"), text_reply("read the note")])
    async with rpc.spawn("--yes", "-e", str(NOTES)) as client:
        events = client.events()
        ran = asyncio.ensure_future(client.prompt("run something"))
        assert _fields(await next_of(events, "extension_ui_request")) == {
            "method": "setWidget",
            "widgetKey": "notes",
            "widgetPlacement": "aboveEditor",
        }
        assert _fields(await next_of(events, "extension_ui_request")) == {
            "method": "setStatus",
            "statusKey": "notes",
            "statusText": "running bash",
        }
        assert _fields(await next_of(events, "extension_ui_request")) == {
            "method": "setStatus",
            "statusKey": "notes",
        }
        assert (await ran)["status"] == "completed"

        noting = asyncio.ensure_future(client.prompt("/note check the tests"))
        request = await next_of(events, "extension_ui_request")
        assert _fields(request) == {
            "method": "editor",
            "title": "Note for the agent",
            "prefill": "check the tests",
            "timeout": 300000,
        }
        await client.answer_extension_ui(request["id"], value="check the tests\nand the docs")
        assert _fields(await next_of(events, "extension_ui_request")) == {
            "method": "setWidget",
            "widgetKey": "notes",
            "widgetLines": ["note: check the tests", "note: and the docs"],
            "widgetPlacement": "aboveEditor",
        }
        said = await next_of(events, "extension_ui_request")
        assert (said["method"], said["message"]) == ("notify", "the note goes with your next prompt")
        await noting

        assert (await client.prompt("go on"))["status"] == "completed"
        messages = await client.get_messages()
    roles = [(m["role"], m.get("customType")) for m in messages]
    assert roles[-3:] == [("custom", "notes.note"), ("user", None), ("assistant", None)]
    assert messages[-3]["content"] == "check the tests\nand the docs"


async def test_title_editor_text_and_dialogs_that_time_out(rpc: RpcEnv) -> None:
    extension = rpc.home / "showy.py"
    extension.write_text(SHOWY)
    rpc.script([])
    async with rpc.spawn("-e", str(extension)) as client:
        events = client.events()
        showing = asyncio.ensure_future(client.prompt("/show"))
        assert _fields(await next_of(events, "extension_ui_request")) == {
            "method": "setTitle",
            "title": "tether - showy",
        }
        assert _fields(await next_of(events, "extension_ui_request")) == {
            "method": "set_editor_text",
            "text": "draft",
        }
        confirm = await next_of(events, "extension_ui_request")
        assert _fields(confirm) == {
            "method": "confirm",
            "title": "Quick?",
            "message": "answer within the limit",
            "timeout": 300,
        }
        select = await next_of(events, "extension_ui_request")  # asked once the confirm timed out
        assert (select["method"], select["options"], select["timeout"]) == ("select", ["a", "b"], 300)
        said = await next_of(events, "extension_ui_request")
        assert said["message"] == "confirm=False select=None mode=rpc ui=True"
        await showing
