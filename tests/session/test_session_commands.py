"""Slash commands and the core's session behaviour on a real ``AgentSession`` (scripted model, real
session store in a temporary home)."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest

from narrowing import block_text
from tether.session import SessionEvent
from tether.session.agent_session import AgentSession
from tether.session.budget import CompactionSettings, context_tokens
from tether.session.commands import COMMANDS, execute, parse
from tether.session.factory import SessionChoice, create_agent_session
from tether.session.settings import Settings
from tether.testing.scripted import SCRIPTED_MODEL
from tether.wire import AgentMessage


def text_reply(*chunks: str) -> dict[str, Any]:
    """A scripted reply in the conformance scenario format."""
    return {"content": [{"type": "text", "chunks": list(chunks)}]}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "project").mkdir()
    return tmp_path


@pytest.fixture
async def core(home: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[AgentSession]:
    path = home / "script.json"
    replies = [text_reply(f"answer {i}") for i in range(1, 4)] + [text_reply("SUMMARY: we said hello.")]
    path.write_text(json.dumps({"responses": replies}))
    monkeypatch.setenv("TETHER_SCRIPTED", str(path))
    settings = replace(Settings(), compaction=CompactionSettings(keep_recent_tokens=0))
    rt = create_agent_session(cwd=home / "project", settings=settings, session=SessionChoice())
    yield rt
    await rt.close()


def test_parse() -> None:
    assert parse("/model a/b c") == ("model", "a/b c")
    assert parse("/HELP") == ("help", "")
    assert parse("hello /model") is None
    assert parse("//not a command") is None


async def test_help_lists_every_command(core: AgentSession) -> None:
    text = (await execute(core, "/help")).text
    for name in COMMANDS:
        if name != "exit":
            assert f"/{name}" in text
    unknown = await execute(core, "/frobnicate")
    assert unknown.error and "/help" in unknown.text
    assert (await execute(core, "/quit")).quit


async def test_model_and_thinking(core: AgentSession) -> None:
    assert "scripted/script" in (await execute(core, "/model")).text
    switched = await execute(core, "/model anthropic/claude-sonnet-4-5")
    assert not switched.error and core.model["id"] == "claude-sonnet-4-5"
    clamped = await execute(core, "/thinking xhigh")
    assert core.thinking_level == "high"
    assert "not supported" in clamped.text
    assert (await execute(core, "/thinking loud")).error
    bad = await execute(core, "/model nosuch/model-x")
    assert bad.error and "nosuch" in bad.text
    assert core.session is not None
    assert core.session.context.model is not None
    assert core.session.context.model.model_id == "claude-sonnet-4-5"
    assert core.session.context.thinking_level == "high"


async def test_session_name_export(core: AgentSession, home: Path) -> None:
    await core.prompt("hello")
    assert not (await execute(core, "/name greeting")).error
    stats = (await execute(core, "/session")).text
    assert "greeting" in stats and "messages  2 (user 1, assistant 1" in stats and "sessions.db" in stats
    exported = await execute(core, "/export out.jsonl")
    lines = (home / "project" / "out.jsonl").read_text().splitlines()
    assert not exported.error and len(lines) >= 3 and json.loads(lines[0])
    await execute(core, "/export page.html")
    page = (home / "project" / "page.html").read_text()
    assert "<title>greeting</title>" in page and "answer 1" in page
    assert (await execute(core, "/export notes.txt")).error
    default = await execute(core, "/export")  # as pi: the HTML page by default
    written = home / "project" / f"tether-session-{core.session_id}.html"
    assert default.text == f"exported to {written}" and "<title>greeting</title>" in written.read_text()


async def test_an_export_that_cannot_be_written_is_the_commands_error(core: AgentSession, home: Path) -> None:
    """A folder that is not there, a FIFO: ``/export`` says it could not write the file, as its
    other errors are said; the OSError went past ``execute`` to the front end's catch-all ("✗
    Error: OSError: ..." in the terminal)."""
    await core.prompt("hello")
    fifo = home / "project" / "pipe.jsonl"
    os.mkfifo(fifo)
    for target in (home / "project" / "gone" / "out.jsonl", fifo):
        result = await execute(core, f"/export {target}")
        assert result.error and result.text.startswith(f"/export: cannot write {target}: "), result.text


async def test_new_resume_fork(core: AgentSession) -> None:
    await core.prompt("first")
    first = core.session_id
    assert (await execute(core, "/new")).text.startswith("new session")
    assert core.session_id != first and core.messages == []
    listing = (await execute(core, "/resume")).text
    assert first is not None and first in listing
    resumed = await execute(core, f"/resume {first}")
    assert not resumed.error and core.session_id == first and len(core.messages) == 2
    forked = await execute(core, "/fork")
    assert not forked.error and core.session_id != first
    assert [m["role"] for m in core.messages] == ["user", "assistant"]


@pytest.mark.parametrize("number", ["\u00b2", "\u0661"])
async def test_resume_takes_a_number_in_ascii_digits_only(core: AgentSession, number: str) -> None:
    """``/resume ²`` passed ``isdigit()`` and failed in ``int()`` ("/resume: invalid literal for
    int() with base 10"), and ``/resume ١`` (Arabic-Indic one) resumed the first session listed.
    Either is a session id, which no session has."""
    await core.prompt("first")
    first = core.session_id
    await execute(core, "/new")
    resumed = await execute(core, f"/resume {number}")
    assert resumed.error and resumed.text == f"/resume: no session {number!r}", resumed.text
    assert core.session_id != first


async def test_tree_and_branch(core: AgentSession) -> None:
    await core.prompt("one")
    await core.prompt("two")
    tree = (await execute(core, "/tree")).text
    assert "user: one" in tree and "user: two" in tree and "<- you are here" in tree
    assert core.session is not None
    first_answer = next(
        e["id"]
        for e in core.session.path()
        if e.get("type") == "message" and e["message"]["role"] == "assistant"
    )
    moved = await execute(core, f"/tree {first_answer}")
    assert not moved.error
    assert [m["role"] for m in core.messages] == ["user", "assistant"]
    assert (await execute(core, "/tree NOPE")).error


async def test_compact_summarises_with_the_current_model(core: AgentSession) -> None:
    await core.prompt("one")
    await core.prompt("two")
    await core.prompt("three")
    result = await execute(core, "/compact keep it short")
    assert not result.error, result.text
    assert "SUMMARY: we said hello." in result.text
    assert core.messages[0]["role"] == "compactionSummary"


async def test_no_session_commands_explain_themselves(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = home / "s.json"
    path.write_text(json.dumps([text_reply("x")]))
    monkeypatch.setenv("TETHER_SCRIPTED", str(path))
    rt = create_agent_session(cwd=home / "project", settings=Settings(), session=SessionChoice(persist=False))
    try:
        result = await execute(rt, "/fork")
        assert result.error and "--no-session" in result.text
        assert "not saved" in (await execute(rt, "/session")).text
    finally:
        await rt.close()


async def start_with(
    home: Path, monkeypatch: pytest.MonkeyPatch, replies: list[dict[str, object]], **compaction: Any
) -> AgentSession:
    path = home / "auto.json"
    path.write_text(json.dumps({"responses": replies}))
    monkeypatch.setenv("TETHER_SCRIPTED", str(path))
    settings = replace(Settings(), compaction=CompactionSettings(**compaction))
    return create_agent_session(cwd=home / "project", settings=settings, session=SessionChoice())


async def test_threshold_compaction_before_a_model_call(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The threshold sits between the first request's size and the second's: only the second
    request compacts first, with the current model, then goes out."""
    first: list[AgentMessage] = [{"role": "user", "content": "first", "timestamp": 0}]
    # an assistant message with only what context_tokens reads
    second = cast(
        list[AgentMessage],
        [*first, {"role": "assistant", "content": [{"type": "text", "text": "first answer"}]}, first[0]],
    )
    threshold = (context_tokens(first) + context_tokens(second)) // 2
    assert context_tokens(first) <= threshold < context_tokens(second)
    replies = [text_reply("first answer"), text_reply("SUMMARY of the start."), text_reply("second answer")]
    window = SCRIPTED_MODEL["contextWindow"] or 0
    rt = await start_with(home, monkeypatch, replies, reserve_tokens=window - threshold, keep_recent_tokens=0)
    events: list[str] = []
    rt.subscribe(lambda e: events.append(e["type"]))
    try:
        await rt.prompt("first")
        assert "compaction_start" not in events
        await rt.prompt("first")
        assert events.count("compaction_start") == events.count("compaction_end") == 1
        last = rt.last_assistant()
        assert last is not None and last["content"] == [{"type": "text", "text": "second answer"}]
        assert rt.session is not None
        assert rt.session.messages[0]["role"] == "compactionSummary"
    finally:
        await rt.close()


async def test_context_overflow_compacts_and_retries(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    replies: list[dict[str, object]] = [
        text_reply("early answer"),
        {"content": [], "error": "prompt is too long: 250000 tokens > 200000 maximum"},
        text_reply("SUMMARY: early talk."),
        text_reply("answer after compaction"),
    ]
    rt = await start_with(home, monkeypatch, replies, keep_recent_tokens=0)
    try:
        await rt.prompt("early")
        await rt.prompt("a very long question")
        last = rt.last_assistant()
        assert last is not None and last["stopReason"] == "stop"
        assert block_text(last["content"][0]) == "answer after compaction"
        assert rt.session is not None
        roles = [m["role"] for m in rt.session.messages]
        assert roles[0] == "compactionSummary" and roles[-1] == "assistant"
        assert all(m.get("stopReason") != "error" for m in rt.session.messages)  # the failure is off the path
    finally:
        await rt.close()


async def test_tree_summary_leaves_a_branch_summary(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    replies = [text_reply("one"), text_reply("two"), text_reply("BRANCH SUMMARY: we tried two.")]
    rt = await start_with(home, monkeypatch, replies)
    try:
        await rt.prompt("first")
        await rt.prompt("second")
        assert rt.session is not None
        first_answer = [e["id"] for e in rt.session.path() if e.get("type") == "message"][1]
        result = await execute(rt, f"/tree {first_answer} --summary")
        assert not result.error, result.text
        assert "BRANCH SUMMARY: we tried two." in result.text
        assert [m["role"] for m in rt.messages] == ["user", "assistant", "branchSummary"]
    finally:
        await rt.close()


async def test_print_mode_streams_every_answer_once(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Streaming (a terminal on stdout): deltas as they come, one newline per answer, no repeat."""
    import io

    from tether.cli.headless import run_print

    (home / "project" / "a.txt").write_text("alpha")
    replies: list[dict[str, object]] = [
        {
            "content": [
                {"type": "text", "chunks": ["Let me ", "look."]},
                {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "a.txt"}},
            ]
        },
        text_reply("It says ", "alpha."),
    ]
    rt = await start_with(home, monkeypatch, replies)
    out, err = io.StringIO(), io.StringIO()
    try:
        assert await run_print(rt, ["read a.txt"], out, err, stream=True) == 0
    finally:
        await rt.close()
    assert out.getvalue() == "Let me look.\nIt says alpha.\n"
    assert err.getvalue() == "[tool] read\n"


async def test_steering_that_arrives_as_the_run_ends_is_run_not_parked(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Typed just as the agent finished (after the loop's last poll): the run goes on with it."""
    rt = await start_with(home, monkeypatch, [text_reply("done"), text_reply("late answer")])
    queues: list[SessionEvent] = []

    def late(event: SessionEvent) -> None:
        if event["type"] == "agent_end" and not queues:
            rt.steer("one more thing")
        if event["type"] == "queue_update":
            queues.append(event)

    rt.subscribe(late)
    try:
        await rt.prompt("start")
        texts = [m.get("content") for m in rt.messages if m["role"] == "user"]
        assert texts == ["start", "one more thing"]
        last = rt.last_assistant()
        assert last is not None and last["content"] == [{"type": "text", "text": "late answer"}]
        assert queues[-1] == {"type": "queue_update", "steering": [], "followUp": []}
        assert not rt.is_running
    finally:
        await rt.close()


async def test_resuming_a_session_another_writer_holds_is_a_clear_error(
    core: AgentSession, home: Path
) -> None:
    await core.prompt("mine")
    held = core.session_id
    other = create_agent_session(cwd=home / "project", settings=Settings(), session=SessionChoice())
    try:
        result = await execute(other, f"/resume {held}")
        assert result.error and "open for writing" in result.text
        # Issue 14.10: no "open it read-only", which no front end offers; what does exist instead:
        assert "read-only" not in result.text and f"tether sessions follow {held}" in result.text
        assert other.session_id != held  # still in its own session
    finally:
        await other.close()


async def test_branch_summary_follows_custom_instructions(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the navigator's "summarise with custom instructions" calls: the instructions reach
    the summariser's request; ``None`` as the target goes back before the first entry."""
    from tether.testing.scripted import ScriptedModel

    replies = [text_reply("one"), text_reply("two"), text_reply("SUMMARY in French.")]
    rt = await start_with(home, monkeypatch, replies)
    try:
        await rt.prompt("first")
        await rt.prompt("second")
        assert rt.session is not None
        first_answer = [e["id"] for e in rt.session.path() if e.get("type") == "message"][1]
        summary = await rt.branch(first_answer, summarize=True, instructions="Write it in French.")
        assert summary == "SUMMARY in French."
        model = rt.agent.stream_fn
        assert isinstance(model, ScriptedModel)
        assert "Write it in French." in json.dumps(model.requests[-1].context)
        assert await rt.branch(None, summarize=False) is None
        assert rt.messages == [] and rt.session.leaf_id is None
    finally:
        await rt.close()
