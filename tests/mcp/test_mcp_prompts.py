"""MCP prompts as slash commands (``/mcp__<server>__<prompt> args``), against the toy server
(the SDK's own server API): listed by ``/mcp`` and ``/help``, arguments in order or by name, the
prompt's messages sent as the user's message (an assistant example marked, an image kept), and
an unknown prompt or a missing argument told in one line without a model call."""

from __future__ import annotations

from typing import Any

from tests.mcp.conftest import toy

from tether.agent import Agent
from tether.mcp import McpServers
from tether.mcp.prompts import PromptArgument, PromptArgumentsError, PromptInfo, parse_arguments
from tether.session import AgentSession
from tether.session.commands import runs_here, user_commands
from tether.testing.scripted import ScriptedModel, reply

REVIEW = PromptInfo("review", "", (PromptArgument("path", "", True), PromptArgument("focus", "", False)))


def test_arguments_in_order_by_name_and_quoted() -> None:
    assert parse_arguments(REVIEW, "app.py") == {"path": "app.py"}
    assert parse_arguments(REVIEW, 'app.py "error handling"') == {"path": "app.py", "focus": "error handling"}
    assert parse_arguments(REVIEW, "focus=speed src/a.py") == {"focus": "speed", "path": "src/a.py"}
    assert parse_arguments(REVIEW, "a.py the rest of it") == {"path": "a.py", "focus": "the rest of it"}
    for bad, said in (("", "review needs path"), ('"open', "No closing quotation")):
        try:
            parse_arguments(REVIEW, bad)
        except PromptArgumentsError as exc:
            assert said in str(exc)
        else:
            raise AssertionError(f"{bad!r} was accepted")


def user_content(model: ScriptedModel, request: int) -> Any:
    messages = model.requests[request].context["messages"]
    return [m for m in messages if m["role"] == "user"][-1]["content"]


async def test_prompts_run_as_the_users_message() -> None:
    model = ScriptedModel([reply("reviewed"), reply("described")])
    core = AgentSession(Agent(model=model.model, stream_fn=model), mcp=McpServers([toy()]), owns=("mcp",))
    notices: list[str] = []
    core.subscribe(lambda e: notices.append(e["message"]) if e["type"] == "notice" else None)
    try:
        assert not runs_here(core, "/mcp__toy__review a.py")  # for submit, not the built-in commands
        await core.submit("/mcp__toy__review app.py security")
        await core.submit("/mcp__toy__show a cat")
        await core.submit("/mcp__toy__review")  # a required argument missing: no model call
        await core.submit("/mcp__toy__nope")
        assert core.mcp is not None
        status = core.mcp.statuses()[0]
        listed = dict(user_commands(core))
    finally:
        await core.close()
    assert len(model.requests) == 2
    assert user_content(model, 0) == [{"type": "text", "text": "Review app.py, looking for security."}]
    shown = user_content(model, 1)
    assert shown[:2] == [
        {"type": "text", "text": "Describe a cat."},
        {"type": "text", "text": "(assistant) A short description."},
    ]
    assert shown[2]["type"] == "image" and shown[2]["mimeType"] == "image/png"
    assert notices == [
        "review needs path (usage: <path> [focus]; or name=value)",
        "/mcp__toy__nope: no such MCP prompt (MCP prompts: /mcp__toy__review, /mcp__toy__show)",
    ]
    assert status.prompts == ("/mcp__toy__review <path> [focus]", "/mcp__toy__show <subject>")
    assert listed["mcp__toy__review"] == "Review a file for one concern"
