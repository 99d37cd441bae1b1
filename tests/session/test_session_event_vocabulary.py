"""One event vocabulary: what an ``AgentSession`` emits (and so what every front end forwards) is
declared by ``SessionEvent``, the loop's events in ``tether.agent.types`` and the session's in
``tether.session.events``. A run that goes through a tool call, a retry and an overflow recovery
(whose summary is retried once) emits nothing else, and no event carries a key its declaration does not name."""

from __future__ import annotations

from typing import Any, cast, get_args

from tether.agent import Agent, AgentTool, AgentToolResult
from tether.session import AgentSession, CompactionSettings, SessionManager, Settings
from tether.session.events import SESSION_EVENT_TYPES, SessionEvent, note_lines
from tether.session.settings import Retry
from tether.testing.scripted import ScriptedModel, reply, tool_call
from tether.wire.records import type_tags


def declared_keys() -> dict[str, set[str]]:
    """Event type -> every key its declarations name."""
    keys: dict[str, set[str]] = {}
    for member in get_args(SessionEvent):
        for kind in type_tags(member):
            keys.setdefault(kind, set()).update(member.__annotations__)
    return keys


async def echo(call_id: str, params: dict[str, Any], *_: Any) -> AgentToolResult[None]:
    return AgentToolResult(content=[{"type": "text", "text": str(params.get("text"))}])


ECHO = AgentTool(
    name="echo",
    label="echo",
    description="Echo the text.",
    parameters={"type": "object", "properties": {"text": {"type": "string"}}},
    execute=echo,
)


async def test_a_run_emits_only_the_vocabulary_and_only_declared_keys(manager: SessionManager) -> None:
    words = "alpha beta gamma delta " * 50
    model = ScriptedModel(
        [
            reply(tool_call("echo", {"text": "hi"})),
            reply(error="529 overloaded_error: Overloaded"),
            reply(f"answer: {words}"),
            reply(error="This model's maximum context length is 8192 tokens"),
            reply(error="503 Service Unavailable"),  # the summary's first try
            reply("SUMMARY"),
            reply("ok"),
        ]
    )
    core = AgentSession(
        Agent(model=model.model, stream_fn=model, tools=[ECHO]),
        manager.create("/p"),
        settings=Settings(
            compaction=CompactionSettings(keep_recent_tokens=100), retry=Retry(base_delay_ms=1)
        ),
    )
    events: list[dict[str, Any]] = []
    core.subscribe(lambda e: events.append(cast(dict[str, Any], e)))
    await core.prompt(f"question: {words}")
    await core.prompt("last one")
    await core.close()

    kinds = {e["type"] for e in events}
    assert {"tool_execution_end", "auto_retry_end", "compaction_end", "agent_settled"} <= kinds
    assert {
        "summarization_retry_scheduled",
        "summarization_retry_attempt_start",
        "summarization_retry_finished",
    } <= kinds
    assert any("result" in e for e in events if e["type"] == "compaction_end")  # it compacted
    assert kinds <= set(SESSION_EVENT_TYPES)
    keys = declared_keys()
    undeclared = {(e["type"], key) for e in events for key in e if key not in keys[e["type"]]}
    assert undeclared == set()


def test_a_notice_is_written_as_note_lines_each_prefixed() -> None:
    # print, JSON and RPC modes write notices so: a second line without the prefix read as part
    # of the first (a script keeps the lines starting "note:")
    assert (
        note_lines("model gone\nUsing scripted/script") == "note: model gone\nnote: Using scripted/script\n"
    )
    assert note_lines("") == ""
