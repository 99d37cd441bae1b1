"""A text no UTF-8 can hold (a lone surrogate: a file name that is not UTF-8, as ``os.fsdecode``
reads it; an MCP server's or an extension's ``"\\udc80"``) is stored as U+FFFD. Storing it used to
fail the append, and with it every later append of the session ("could not store session")."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from narrowing import content_of
from session_helpers import result, user
from tether.agent import Agent
from tether.session import AgentSession, SessionManager
from tether.store.entries import encode_entry
from tether.testing.scripted import ScriptedModel, reply, tool_call
from tether.tools.ls import create_ls_tool
from tether.tools.workspace import Workspace


@pytest.mark.parametrize("many", [False, True])
def test_an_entry_with_a_lone_surrogate_encodes_with_a_replacement_character(many: bool) -> None:
    entry = {"type": "message", "id": "e", "message": {"role": "user", "content": "a\udc80b \U0001f600"}}
    assert encode_entry(entry, many=many).decode() == (  # pyright: ignore[reportArgumentType]
        '{"type":"message","id":"e","message":{"role":"user","content":"a\ufffdb \U0001f600"}}'
    )


def test_a_lone_surrogate_is_stored_and_the_session_goes_on(manager: SessionManager) -> None:
    session = manager.create("/p")
    session.append_message(result("c1", "name\udcff.txt"))
    session.append_message(user("next"))
    session.close()
    reopened: list[Any] = manager.open(session.id, readonly=True).messages
    assert [m["content"] for m in reopened][-2:] == [
        [{"type": "text", "text": "name\ufffd.txt"}],
        "next",
    ]


async def test_ls_of_a_file_name_that_is_not_utf8_keeps_the_session_storing(
    manager: SessionManager, tmp_path: Path
) -> None:
    os.mkdir(tmp_path / "w")
    with open(os.path.join(os.fsencode(tmp_path / "w"), b"caf\xe9.txt"), "wb"):
        pass
    model = ScriptedModel([reply(tool_call("ls", {"path": "."})), reply("listed"), reply("again")])
    agent = Agent(model=model.model, stream_fn=model, tools=[create_ls_tool(Workspace(tmp_path / "w"))])
    core = AgentSession(agent, manager.create(str(tmp_path / "w")))
    await core.prompt("list")
    await core.prompt("more")
    session = core.session
    assert session is not None
    stored: list[Any] = manager.open(session.id, readonly=True).messages
    await core.close()
    assert [m["role"] for m in stored] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "user",
        "assistant",
    ]
    assert "caf\\xe9.txt" in stored[2]["content"][0]["text"]  # as ls shows it (tether.wire.file_names)
    assert stored[-1]["stopReason"] == "stop"


def test_a_first_prompt_or_title_with_a_lone_surrogate_keeps_the_session_storing(
    manager: SessionManager,
) -> None:
    """The session row holds the first prompt and the title as text of their own (the listing's);
    a lone surrogate there (a JavaScript client's half of an emoji, sent over RPC) failed the
    append and every later one, the entries themselves mended or not."""
    session = manager.create("/p")
    session.append_message(user("half an emoji: \ud83d"))
    session.rename("title \udcff")
    session.append_message(user("next"))
    session.close()
    reopened = manager.open(session.id, readonly=True)
    assert [content_of(m) for m in reopened.messages] == ["half an emoji: \ufffd", "next"]
    listed = {s.id: s for s in manager.list()}[session.id]
    assert (listed.first_prompt, listed.title) == ("half an emoji: \ufffd", "title \ufffd")
    reopened.close()
