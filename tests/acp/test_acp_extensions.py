"""The example extensions inside an editor: ``tether --mode acp -e ...`` driven by the SDK's client
side. The editor sees the user's commands (``available_commands_update``), answers the rm guard's
question as a permission request, and gets a command's answer and the custom provider's replies
as agent messages."""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path

import acp
import pytest
from acp_support import AcpEnv, EditorClient, text_reply, tool_reply

pytestmark = pytest.mark.subprocess

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "extensions"
NAMES = ("rm_guard", "word_count", "todo_command", "date_hook", "echo_provider")


async def turn(conn: acp.core.ClientSideConnection, session_id: str, text: str) -> str:
    response = await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[acp.text_block(text)]), 60)
    return response.stop_reason


def message_text(client: EditorClient) -> str:
    return "".join(
        u["content"]["text"] for u in client.updates() if u["sessionUpdate"] == "agent_message_chunk"
    )


def tool_statuses(client: EditorClient, call_id: str) -> list[str]:
    return [
        e["update"]["status"]
        for e in client.log
        if e.get("update", {}).get("toolCallId") == call_id and "status" in e["update"]
    ]


async def test_example_extensions_in_an_editor(acp_env: AcpEnv) -> None:
    project = acp_env.project
    (project / "build").mkdir()
    (project / "notes.txt").write_text("a bb ccc dddd eeeee")
    (project / "app.py").write_text("x = 1  # TODO: rename\n")
    prompts = acp_env.home / "config" / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "review.md").write_text("---\ndescription: Review a file\n---\nReview $1")
    script = acp_env.script(
        "s",
        [
            tool_reply("bash", {"command": "rm -rf build"}, "b1"),
            text_reply("kept"),
            tool_reply("bash", {"command": "rm -rf build"}, "b2"),
            text_reply("removed"),
            tool_reply("count_words", {"path": "notes.txt", "min_length": 3}, "w1"),
            text_reply("counted"),
        ],
    )
    client = EditorClient(permission_choices=["reject_once", "allow_once"])
    args = [arg for name in NAMES for arg in ("-e", str(EXAMPLES / f"{name}.py"))]
    async with acp_env.agent(client, script, "--yes", *args) as conn:
        await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION, client_capabilities=client.capabilities()
        )
        created = await conn.new_session(cwd=str(project), mcp_servers=[])
        session_id = created.session_id
        (model_option,) = [o for o in created.config_options or [] if o.id == "model"]
        assert "echo/echo-1" in [c.value for c in model_option.options]  # the extension's model
        for _ in range(50):  # sent right after the response
            if client.updates():
                break
            await asyncio.sleep(0.05)
        (announced,) = client.updates()
        assert announced["sessionUpdate"] == "available_commands_update"
        assert [(c["name"], c["description"]) for c in announced["availableCommands"]] == [
            ("todos", "List TODO/FIXME lines; /todos fix asks the agent to fix the first"),
            ("review", "Review a file"),
        ]
        client.clear()

        # rm_guard: the question is a permission request; rejected, then allowed
        assert await turn(conn, session_id, "clean up") == "end_turn"
        (asked,) = [e for e in client.log if "permission" in e]
        assert asked["permission"]["title"] == "Allow dangerous command? rm -rf build"
        assert [o["optionId"] for o in asked["options"]] == ["allow_once", "reject_once"]
        assert tool_statuses(client, "b1")[-1] == "failed" and (project / "build").is_dir()
        assert await turn(conn, session_id, "clean up, really") == "end_turn"
        assert tool_statuses(client, "b2")[-1] == "completed" and not (project / "build").exists()
        client.clear()

        # word_count: a tool with its own parameters
        assert await turn(conn, session_id, "count") == "end_turn"
        done = [e["update"] for e in client.log if e.get("update", {}).get("toolCallId") == "w1"][-1]
        assert done["status"] == "completed"
        assert done["content"][0]["content"]["text"] == "notes.txt: 3 words of at least 3 letters"
        client.clear()

        # todo_command: its answer is an agent message
        assert await turn(conn, session_id, "/todos") == "end_turn"
        assert message_text(client) == "app.py:1: x = 1  # TODO: rename\n"
        client.clear()

        # echo_provider + date_hook: the extension's model echoes the date the hook added
        await conn.set_config_option(session_id=session_id, config_id="model", value="echo/echo-1")
        assert await turn(conn, session_id, "what day is it?") == "end_turn"
        assert message_text(client) == f"echo: (Today's date: {datetime.date.today().isoformat()})"


SHOWY = """
def setup(api):
    @api.command("show")
    async def show(args, ctx):
        ctx.ui.set_title("tether - showy")
        ctx.ui.set_status("k", "busy")  # ACP has no status line, widget or input box: dropped
        ctx.ui.set_widget("k", ["a line"])
        ctx.ui.set_editor_text("draft")
        text = await ctx.ui.editor("Long note", "draft")
        return f"editor={text} mode={ctx.mode}"
"""


async def test_display_calls_in_an_editor(acp_env: AcpEnv) -> None:
    """``set_title`` is the session's title (``session_info_update``); status, widget and input-box
    text have no place in ACP and are dropped; ``editor`` is dismissed with a notice."""
    extension = acp_env.home / "showy.py"
    extension.write_text(SHOWY)
    script = acp_env.script("s", [])
    client = EditorClient()
    async with acp_env.agent(client, script, "-e", str(extension)) as conn:
        await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION, client_capabilities=client.capabilities()
        )
        created = await conn.new_session(cwd=str(acp_env.project), mcp_servers=[])
        for _ in range(50):
            if client.updates():
                break
            await asyncio.sleep(0.05)
        client.clear()
        assert await turn(conn, created.session_id, "/show") == "end_turn"
        kinds = [u["sessionUpdate"] for u in client.updates()]
        titles = [u.get("title") for u in client.updates() if u["sessionUpdate"] == "session_info_update"]
        said = message_text(client)
    assert titles == ["tether - showy"]
    assert set(kinds) <= {"session_info_update", "agent_message_chunk"}
    assert "Long note: an editor cannot be asked for text; nothing entered" in said
    assert "editor=None mode=acp" in said


TREE_GUARD = """
from tether.session import SessionBeforeResult
from tether.session.extensions.host import SessionChangeCancelled

def setup(api):
    @api.on("session_before_tree")
    async def ask(event):
        if not await api.ui.confirm("Move in the tree?", str(event["preparation"]["targetId"])):
            return SessionBeforeResult(cancel=True, reason="the editor said no")

    @api.command("back")
    async def back(args, ctx):
        first = next(e for e in ctx.session.session.entries() if e["type"] == "message")
        try:
            await ctx.navigate_tree(first["id"])
        except SessionChangeCancelled as exc:
            return str(exc)
        return f"moved back; {len(ctx.session.agent.messages)} message(s) now"
"""


async def test_a_move_in_the_tree_asks_the_editor(acp_env: AcpEnv) -> None:
    """``session_before_tree`` in an editor: the hook's question is a permission request; a
    reject cancels the move (the command says why), an allow lets it happen."""
    extension = acp_env.home / "tree_guard.py"
    extension.write_text(TREE_GUARD)
    script = acp_env.script("s", [text_reply("one"), text_reply("two")])
    client = EditorClient(permission_choices=["reject_once", "allow_once"])
    async with acp_env.agent(client, script, "-e", str(extension)) as conn:
        await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION, client_capabilities=client.capabilities()
        )
        created = await conn.new_session(cwd=str(acp_env.project), mcp_servers=[])
        session_id = created.session_id
        assert await turn(conn, session_id, "first") == "end_turn"
        assert await turn(conn, session_id, "second") == "end_turn"
        client.clear()
        assert await turn(conn, session_id, "/back") == "end_turn"
        refused = message_text(client)
        client.clear()
        assert await turn(conn, session_id, "/back") == "end_turn"
        moved = message_text(client)
        asked = [e["permission"]["title"].split(" ")[:4] for e in client.log if "permission" in e]
    assert asked == [["Move", "in", "the", "tree?"]]  # (the log was cleared after the first one)
    assert "cancelled by extension tree_guard: the editor said no" in refused
    assert "moved back; 1 message(s) now" in moved


PICKER = """
def setup(api):
    @api.command("pick")
    async def pick(args, ctx):
        return f"picked={await ctx.ui.select('Pick one', ['a', 'b', 'c', 'd'])}"
"""


async def test_a_select_answered_with_an_option_it_did_not_offer_picks_nothing(acp_env: AcpEnv) -> None:
    """An extension's ``select`` is a permission request whose option ids are the choices'
    indexes: an answer naming another id is no choice. A digit of another script passed
    ``isdigit``: "²" raised ValueError in the extension, "٣" (Arabic-Indic three) picked "d"."""
    extension = acp_env.home / "picker.py"
    extension.write_text(PICKER)
    script = acp_env.script("s", [])
    client = EditorClient(permission_choices=["1", "²", "٣", "4"])
    async with acp_env.agent(client, script, "-e", str(extension)) as conn:
        await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION, client_capabilities=client.capabilities()
        )
        created = await conn.new_session(cwd=str(acp_env.project), mcp_servers=[])
        said: list[str] = []
        for _ in range(4):
            client.clear()
            assert await turn(conn, created.session_id, "/pick") == "end_turn"
            said.append(message_text(client))
    assert said == ["picked=b\n", "picked=None\n", "picked=None\n", "picked=None\n"]
