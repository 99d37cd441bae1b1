"""Safe defaults for library users: a default ``create_agent_session()`` gets only tools that
neither write nor execute; a program asks for the rest, and risky calls go through its approval
callback. (The CLI asks for every tool: ``tests/cli`` runs its agents with them.)"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, cast

import pytest

import tether
from tether.session.factory import SessionChoice, create_agent_session, start_session
from tether.session.options import AgentOptions, SessionOptions
from tether.session.settings import Settings
from tether.wire import ToolCall

NOWHERE = SessionChoice(persist=False)


def script(tmp_path: Path, *replies: str) -> str:
    path = tmp_path / "script.json"
    path.write_text("[" + ",".join(replies) + "]")
    return f"scripted:{path}"


def test_a_default_library_session_can_neither_write_nor_execute(tmp_path: Path) -> None:
    core = create_agent_session(AgentOptions(model=script(tmp_path)), cwd=tmp_path, session=NOWHERE)
    assert [t.name for t in core.agent.tools] == list(tether.READ_ONLY_TOOLS)


def test_the_cli_and_a_program_that_asks_get_every_tool(tmp_path: Path) -> None:
    cli = start_session(
        SessionOptions(model=script(tmp_path)), cwd=tmp_path, settings=Settings(), ask=None, session=NOWHERE
    )
    asked = create_agent_session(
        AgentOptions(model=script(tmp_path), tools=tether.coding_tools(tmp_path)),
        cwd=tmp_path,
        session=NOWHERE,
    )
    named = create_agent_session(
        AgentOptions(model=script(tmp_path), tools=tether.CODING_TOOLS), cwd=tmp_path, session=NOWHERE
    )
    for core in (cli, asked, named):
        assert [t.name for t in core.agent.tools] == list(tether.CODING_TOOLS)


async def test_risky_calls_go_through_the_programs_approval_callback(tmp_path: Path) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    arguments = json.dumps({"path": str(outside), "content": "x"})
    call = '{"content": [{"type": "toolCall", "name": "write", "arguments": ' + arguments + "}]}"
    done = '{"content": [{"type": "text", "chunks": ["ok"]}]}'
    asked: list[str] = []

    async def approve(tool_call: ToolCall, question: str) -> bool:
        asked.append(tool_call["name"])
        return False  # refused: nothing is written

    core = create_agent_session(
        AgentOptions(model=script(tmp_path, call, done), tools=tether.CODING_TOOLS),
        cwd=tmp_path,
        session=NOWHERE,
        ask=approve,
    )
    await core.prompt("write outside")
    await core.close()
    assert asked == ["write"] and not outside.exists()


async def test_closing_while_the_user_has_not_answered_withdraws_the_question(tmp_path: Path) -> None:
    """An approval callback waiting on a user who never answers (a dialog left open, then the
    program quits) held ``abort()`` and ``close()`` for ever; now the question is cancelled and
    the call refused."""
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    arguments = json.dumps({"path": str(outside), "content": "x"})
    call = '{"content": [{"type": "toolCall", "name": "write", "arguments": ' + arguments + "}]}"
    asking = asyncio.Event()
    withdrawn: list[str] = []

    async def never_answers(tool_call: ToolCall, question: str) -> bool:
        asking.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            withdrawn.append(tool_call["name"])  # the dialog can close here
            raise
        return True

    core = create_agent_session(
        AgentOptions(model=script(tmp_path, call), tools=tether.CODING_TOOLS),
        cwd=tmp_path,
        session=NOWHERE,
        ask=never_answers,
    )
    run = asyncio.ensure_future(core.prompt("write outside"))
    await asyncio.wait_for(asking.wait(), 20)
    await asyncio.wait_for(core.close(), 20)  # a regression fails here instead of hanging
    added = await run
    assert withdrawn == ["write"] and not outside.exists()
    refusal = next(m for m in added if m["role"] == "toolResult")
    assert tether.message_text(refusal) == "The run was aborted before the user approved this call."


async def test_a_tool_of_the_programs_named_as_a_built_in_one_replaces_it(tmp_path: Path) -> None:
    """Two tools of one name reached the model (a provider refuses the whole request over it) and
    the last of them ran; now the later one takes the earlier one's place, as an extension's tool
    replaces a built-in one (``docs/extensions.md``), as in pi."""

    @tether.tool
    async def read(path: str) -> str:
        """Read from the program's own store."""
        return f"stored {path}"

    call = '{"content": [{"type": "toolCall", "name": "read", "arguments": {"path": "a"}}]}'
    core = create_agent_session(
        AgentOptions(model=script(tmp_path, call, '{"content": []}')),
        cwd=tmp_path,
        session=NOWHERE,
        extra_tools=[read],
    )
    assert [t.name for t in core.agent.tools] == list(tether.READ_ONLY_TOOLS)
    assert core.agent.tools[0] is read
    added = await core.prompt("read a")
    await core.close()
    assert tether.message_text(added[2]) == "stored a"
    stream_fn = core.agent.stream_fn
    assert isinstance(stream_fn, tether.ScriptedModel)
    sent = [t["name"] for t in stream_fn.requests[0].context.get("tools", [])]
    assert sent == list(tether.READ_ONLY_TOOLS)


def test_a_programs_tool_no_provider_would_take_is_refused_at_once(tmp_path: Path) -> None:
    """As an extension's is left out (``tether.agent.tool_check``): sent as it was, every request
    of the session failed at the provider, or the run failed as "agent loop failed:
    AttributeError: 'NoneType' object has no attribute 'model_json_schema'"."""
    from tether.agent import AgentTool, AgentToolResult

    async def run(*_: object) -> AgentToolResult[None]:
        return AgentToolResult(content=[])

    @tether.tool(name="look up")
    async def look_up(term: str) -> str:
        """Look a term up."""
        return term

    no_schema = AgentTool(name="t", label="t", description="", parameters=cast(Any, None), execute=run)
    for tools, problem in (
        ([look_up], "tool 'look up': the name 'look up' is not 1-64 letters, digits, '_' or '-'"),
        ([no_schema], "tool 't': its parameters must be a JSON Schema object, not NoneType"),
    ):
        with pytest.raises(tether.SetupError) as raised:
            create_agent_session(
                AgentOptions(model=script(tmp_path)), cwd=tmp_path, session=NOWHERE, extra_tools=tools
            )
        assert str(raised.value) == problem


def test_tools_given_as_one_text_is_refused_saying_how_to_write_it(tmp_path: Path) -> None:
    """It was read letter by letter: "Unknown tool(s): r, e, a, d"."""
    with pytest.raises(tether.SetupError) as raised:
        create_agent_session(AgentOptions(model=script(tmp_path), tools=cast(Any, "read")), session=NOWHERE)
    assert str(raised.value) == "tools takes a list of names or tools: tools=['read'], not tools='read'"
