"""Extensions over RPC: ``get_commands`` lists the user's commands, extension dialogs become
``extension_ui_request`` frames answered by ``extension_ui_response``, an abort dismisses an open
dialog, and pi's own clients (0.73.1 and 1.6.0) answer the example extensions' questions.

Every frame tether's client sees is checked against the committed schema (``CheckedClient``).
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from rpc_support import RpcEnv, bash_reply, next_of, run_node_client, text_reply, tool_reply

from pi_packages import PI_073, PI_16, PiPackage, installed
from tether.rpc import RpcError

pytestmark = pytest.mark.subprocess

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "extensions"
INTEROP = Path(__file__).with_name("interop")


def example(name: str) -> str:
    return str(EXAMPLES / f"{name}.py")


async def test_models_an_extension_serves_are_listed_cycled_to_and_set(rpc: RpcEnv) -> None:
    rpc.script([])
    async with rpc.spawn("-e", example("echo_provider")) as client:
        listed = [(m["provider"], m["id"]) for m in await client.get_available_models()]
        assert listed[0] == ("scripted", "script") and ("echo", "echo-1") in listed
        cycled = await client.cycle_model()
        assert cycled is not None and (cycled["model"]["provider"], cycled["model"]["id"]) == (
            "echo",
            "echo-1",
        )
        await client.prompt("hi there")  # served by the extension's stream function
        assert await client.get_last_assistant_text() == "echo: hi there"
        await client.set_model("scripted", "script")
        assert (await client.set_model("echo", "echo-1"))["name"] == "Echo"


async def test_get_commands_lists_templates_skills_and_extension_commands(rpc: RpcEnv) -> None:
    prompts = rpc.home / "config" / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "review.md").write_text("---\ndescription: Review a file\n---\nReview $1")
    skill = rpc.project / ".agents" / "skills" / "tidy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: tidy\ndescription: Tidy things up\n---\nSort imports.\n")
    rpc.script([])  # the model is never asked: listing commands is all this does
    async with rpc.spawn("-e", example("todo_command")) as client:
        commands = await client.request("get_commands")
    assert commands["commands"] == [
        {
            "name": "todos",
            "description": "List TODO/FIXME lines; /todos fix asks the agent to fix the first",
            "source": "extension",
            "sourceInfo": {
                "path": example("todo_command"),
                "source": "extension",
                "scope": "user",
                "origin": "top-level",
            },
        },
        {
            "name": "review",
            "description": "Review a file",
            "source": "prompt",
            "sourceInfo": {
                "path": str(prompts / "review.md"),
                "source": "prompt",
                "scope": "user",
                "origin": "top-level",
            },
        },
        {
            "name": "skill:tidy",
            "description": "Tidy things up",
            "source": "skill",
            "sourceInfo": {"path": str(skill), "source": "skill", "scope": "project", "origin": "top-level"},
        },
    ]


async def test_dialogs_are_answered_and_an_abort_dismisses_one(rpc: RpcEnv) -> None:
    (rpc.project / "build").mkdir()
    rpc.script(
        [
            bash_reply("rm -rf build"),
            text_reply("kept"),
            bash_reply("rm -rf build"),
            text_reply("removed"),
            bash_reply("rm -fr build"),
            text_reply("never asked to the end"),
        ]
    )
    async with rpc.spawn("--yes", "-e", example("rm_guard")) as client:
        events = client.events()

        async def answer(confirmed: bool) -> dict[str, Any]:
            request = await next_of(events, "extension_ui_request")
            await client.answer_extension_ui(request["id"], confirmed=confirmed)
            return request

        prompt = asyncio.ensure_future(client.prompt("clean"))
        request = await answer(False)
        assert (await prompt)["status"] == "completed"
        assert {k: request[k] for k in ("method", "title", "message")} == {
            "method": "confirm",
            "title": "Allow dangerous command?",
            "message": "rm -rf build",
        }
        assert (rpc.project / "build").is_dir()

        prompt = asyncio.ensure_future(client.prompt("clean, really"))
        await answer(True)
        assert (await prompt)["status"] == "completed"
        assert not (rpc.project / "build").exists()

        prompt = asyncio.ensure_future(client.prompt("once more"))
        await next_of(events, "extension_ui_request")  # left unanswered: the abort dismisses it
        await client.abort()
        await prompt
        messages = await client.get_messages()
        results = [m for m in messages if m["role"] == "toolResult"]
        assert [r["isError"] for r in results] == [True, False, True]
        assert results[2]["content"][0]["text"] == "The user did not allow `rm -fr build`."
        # an answer to no open dialog is an error response; the server goes on
        with pytest.raises(RpcError, match="no open extension dialog with id 'py-"):
            await client.request("extension_ui_response", confirmed=True)
        assert (await client.get_state())["isStreaming"] is False


def _pi_script(rpc: RpcEnv) -> None:
    (rpc.project / "build").mkdir()
    (rpc.project / "notes.txt").write_text("a bb ccc dddd eeeee")
    (rpc.project / "app.py").write_text("x = 1  # TODO: rename\n")
    prompts = rpc.home / "config" / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "review.md").write_text("---\ndescription: Review a file\n---\nReview $1")
    rpc.script(
        [
            bash_reply("rm -rf build"),
            text_reply("kept it"),
            bash_reply("rm -rf build"),
            text_reply("removed it"),
            tool_reply("count_words", {"path": "notes.txt", "min_length": 3}),
            text_reply("counted"),
        ]
    )


def _run_pi_client(rpc: RpcEnv, pi: PiPackage) -> None:
    module = pi.package / "dist" / "index.js"
    env = rpc.env(
        TETHER_COMMAND=json.dumps([sys.executable, "-m", "tether.cli"]),
        PI_MODULE=module.as_uri(),
        EXAMPLES=str(EXAMPLES),
        TODAY=datetime.date.today().isoformat(),
        PATH=f"{Path(pi.node).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    script = INTEROP / "extension-ui.test.mjs"
    result = run_node_client(
        pi.node, script, cwd=rpc.project, env=env, timeout=300, who=f"pi {pi.version}'s client"
    )
    assert result == {
        "ok": True,
        "steps": ["get_commands", "rm_guard", "word_count", "todo_command", "echo_provider_date_hook"],
    }


@pytest.mark.node
@pytest.mark.skipif(shutil.which("node") is None or shutil.which("npm") is None, reason="needs node and npm")
def test_pi_073_client_answers_extension_dialogs(rpc: RpcEnv) -> None:
    _pi_script(rpc)
    _run_pi_client(rpc, installed(PI_073))


@pytest.mark.node
@pytest.mark.skipif(shutil.which("npm") is None, reason="needs npm (it brings its own Node 22)")
def test_pi_16_client_answers_extension_dialogs(rpc: RpcEnv) -> None:
    _pi_script(rpc)
    _run_pi_client(rpc, installed(PI_16))


async def test_an_extension_cancels_a_switch_or_fork_by_asking(rpc: RpcEnv) -> None:
    """``confirm_changes``: ``new_session``, ``switch_session`` and ``fork`` ask the client first
    (pi's ``session_before_*`` hooks); a no is pi's ``cancelled: true`` and the session stays."""
    rpc.script([text_reply("A1"), text_reply("A2")])
    async with rpc.spawn("-e", example("confirm_changes")) as client:
        events = client.events()

        async def answered(request: Any, confirmed: bool) -> tuple[dict[str, Any], dict[str, Any]]:
            pending = asyncio.ensure_future(request)
            asked = await next_of(events, "extension_ui_request")
            while asked["method"] == "notify":
                notes.append(asked["message"])
                asked = await next_of(events, "extension_ui_request")
            await client.answer_extension_ui(asked["id"], confirmed=confirmed)
            return asked, await pending

        notes: list[str] = []
        await client.prompt("question one")
        await client.prompt("question two")
        first = await client.get_state()
        asked, answer = await answered(client.new_session(), False)
        assert (asked["title"], asked["message"], answer) == (
            "Leave this conversation?",
            "for a new session",
            {"cancelled": True},
        )
        assert (await client.get_state())["sessionId"] == first["sessionId"]

        forkable = await client.get_fork_messages()
        asked, answer = await answered(client.fork(forkable[1]["entryId"]), False)
        assert asked["title"] == "Fork before this message?"
        assert answer == {"text": "question two", "cancelled": True}
        asked, answer = await answered(client.clone(), True)
        assert (asked["title"], answer) == ("Copy the session?", {"cancelled": False})
        assert (await client.get_state())["sessionId"] != first["sessionId"]
        asked, answer = await answered(client.switch_session(first["sessionFile"]), True)
        assert asked["message"] == f"for {first['sessionFile']}" and answer == {"cancelled": False}
        assert (await client.get_state())["sessionId"] == first["sessionId"]
        assert notes == [
            "cancelled by extension confirm_changes: kept the conversation",
            "cancelled by extension confirm_changes: not forked",
        ]
