"""``AgentSession``'s wiring of a stored session into the loop: recording, settings entries, prompt
hooks, lowering, compaction and overflow recovery, with the scripted model of ``tether.testing``."""

from __future__ import annotations

from typing import Any, cast

from narrowing import content_of
from session_helpers import ECHO, assistant, text, user
from tether.agent import Agent, AgentTool
from tether.session import (
    AgentSession,
    CompactionSettings,
    PromptEditor,
    Session,
    SessionEvent,
    SessionManager,
    Settings,
)
from tether.session.convert import COMPACTION_PREFIX
from tether.session.events import AgentEndSessionEvent
from tether.session.prompt import PromptHook
from tether.testing.scripted import SCRIPTED_MODEL, ScriptedModel, reply, tool_call
from tether.wire import ModelInfo


def _core(
    session: Session,
    model: ModelInfo,
    stream_fn: ScriptedModel,
    *,
    tools: list[AgentTool] | None = None,
    hooks: list[PromptHook] | None = None,
    compaction: CompactionSettings | None = None,
) -> AgentSession:
    agent = Agent(model=model, stream_fn=stream_fn, tools=tools or [])
    settings = Settings(compaction=compaction or CompactionSettings())
    return AgentSession(agent, session, settings=settings, hooks=hooks or [])


def _small_model(window: int) -> ModelInfo:
    return cast(ModelInfo, {**SCRIPTED_MODEL, "contextWindow": window})


async def test_a_run_is_recorded_and_resumes_identically(manager: SessionManager) -> None:
    s = manager.create("/p", system_prompt="You are terse.", thinking_level="high")
    model = ScriptedModel([reply(tool_call("echo", {"text": "hi"})), reply("done")])
    events: list[SessionEvent] = []

    async def listen(event: SessionEvent) -> None:
        events.append(event)

    rt = _core(s, model.model, model, tools=[ECHO])
    rt.subscribe(listen)
    added = await rt.prompt("say hi")
    assert [m["role"] for m in added] == ["user", "assistant", "toolResult", "assistant"]
    assert s.messages == added
    assert all(i is not None for i in s.message_ids(added))
    # Settings entries reached the request.
    request = model.requests[0]
    assert request.context.get("systemPrompt") == "You are terse."
    assert request.options is not None and request.options.reasoning == "high"
    assert request.options.session_id == s.id
    assert events[0]["type"] == "agent_start"
    end = cast(AgentEndSessionEvent, events[-2])  # a session's agent_end, which says willRetry
    assert end["type"] == "agent_end" and end["willRetry"] is False
    assert events[-1] == {"type": "agent_settled", "aborted": False}
    # The model used was recorded as a settings entry before the run.
    assert [e["type"] for e in s.path()][:3] == [
        "thinking_level_change",
        "system_prompt_change",
        "model_change",
    ]
    await rt.close()
    resumed = manager.open(s.id)
    assert resumed.messages == added
    assert [e["type"] for e in resumed.replay() if e["type"] in ("turn_start", "turn_end")] == [
        e["type"] for e in events if e["type"] in ("turn_start", "turn_end")
    ]
    # Continuing the resumed session sends the whole history.
    model.push(reply("again"))
    rt2 = _core(resumed, model.model, model, tools=[ECHO])
    await rt2.prompt("once more")
    assert len(model.requests[-1].context["messages"]) == len(added) + 1


async def test_prompt_hooks_change_the_request_but_not_the_session(manager: SessionManager) -> None:
    s = manager.create("/p")

    def remind(editor: PromptEditor) -> None:
        editor.append_to("last-user", [text("(reminder: be brief)")])
        editor.append({"role": "user", "parts": [text("Transient note")]})
        first = editor.messages[0]
        cast(dict[str, Any], first)["content"] = "tampered"

    model = ScriptedModel([reply("ok")])
    rt = _core(s, model.model, model, hooks=[remind])
    await rt.prompt("question")
    sent = model.requests[0].context["messages"]
    assert sent[0]["content"] == "tampered"
    assert sent[-1]["content"] == [text("Transient note")]
    assert [m["content"] for m in s.messages if m["role"] == "user"] == ["question"]
    assert [m["content"] for m in manager.open(s.id, readonly=True).messages if m["role"] == "user"] == [
        "question"
    ]


async def test_host_messages_are_lowered_for_the_model(manager: SessionManager) -> None:
    s = manager.create("/p")
    s.append_message(cast(Any, {"role": "bashExecution", "command": "ls", "output": "a.txt", "exitCode": 0,
                               "cancelled": False, "truncated": False, "timestamp": 1}))  # fmt: skip
    s.append_message(
        cast(
            Any,
            {"role": "custom", "customType": "x.note", "content": "ctx", "display": False, "timestamp": 2},
        )
    )
    model = ScriptedModel([reply("seen")])
    await _core(s, model.model, model).prompt("what did I run?")
    sent = model.requests[0].context["messages"]
    assert [m["role"] for m in sent] == ["user", "user", "user"]
    assert "<command>\nls\n</command>" in cast(str, sent[0]["content"])
    assert sent[1]["content"] == "ctx"


async def test_threshold_compaction_happens_before_the_model_call(manager: SessionManager) -> None:
    s = manager.create("/p")
    words = "alpha beta gamma delta " * 50  # ~1150 chars
    model = ScriptedModel([reply(f"answer {i}: {words}") for i in range(3)])
    small = _small_model(3_000)
    settings = CompactionSettings(reserve_tokens=1_000, keep_recent_tokens=700)
    rt = _core(s, small, model, compaction=settings)
    for i in range(3):
        await rt.prompt(f"question {i}: {words}")
    assert rt.compactions == 0  # ~1,700 tokens so far: under 3,000 - 1,000
    model.push(reply("THE SUMMARY"), reply("final"))
    await rt.prompt(f"question 3: {words}")
    assert rt.compactions == 1
    summary_request, final_request = model.requests[-2], model.requests[-1]
    assert "<conversation>" in cast(str, summary_request.context["messages"][0]["content"])
    first = final_request.context["messages"][0]
    assert first["role"] == "user" and first["content"] == COMPACTION_PREFIX + "THE SUMMARY\n</summary>"
    assert s.messages[0]["role"] == "compactionSummary"
    assert manager.open(s.id, readonly=True).messages == s.messages


async def test_overflow_error_compacts_and_retries_once(manager: SessionManager) -> None:
    s = manager.create("/p")
    words = "alpha beta gamma delta " * 50
    model = ScriptedModel([reply(f"answer {i}: {words}") for i in range(4)])
    rt = _core(s, model.model, model, compaction=CompactionSettings(keep_recent_tokens=400))
    for i in range(4):
        await rt.prompt(f"question {i}: {words}")
    model.push(
        reply(error="prompt is too long: 250000 tokens > 200000 maximum"),
        reply("SUMMARY"),
        reply("recovered"),
    )
    added = await rt.prompt("one more")
    assert [m.get("stopReason") for m in added if m["role"] == "assistant"] == ["error", "stop"]
    assert rt.compactions == 1
    assert s.messages[0]["role"] == "compactionSummary"
    assert content_of(s.messages[-1]) == [text("recovered")]
    assert all(m.get("stopReason") != "error" for m in s.messages)  # the failed reply is off the path
    failed = [e for e in s.entries() if e["type"] == "message" and e["message"].get("stopReason") == "error"]
    assert len(failed) == 1  # ... but kept in the tree


async def test_manual_compaction_and_summarised_branching(manager: SessionManager) -> None:
    s = manager.create("/p")
    model = ScriptedModel([reply("a1"), reply("a2")])
    rt = _core(s, model.model, model, compaction=CompactionSettings(keep_recent_tokens=1))
    await rt.prompt("q1")
    first_reply = s.leaf_id
    await rt.prompt("q2")
    model.push(reply("MANUAL SUMMARY"))
    done = await rt.compact("keep the numbers")
    assert "Additional instructions: keep the numbers" in cast(
        str, model.requests[-1].context["messages"][0]["content"]
    )
    assert done.summary == "MANUAL SUMMARY" and s.messages[0]["role"] == "compactionSummary"
    model.push(reply("LEFT BRANCH"))
    summary = await rt.branch(first_reply, summarize=True)
    assert summary == "LEFT BRANCH" and s.entry(cast(str, s.leaf_id))["summary"] == "LEFT BRANCH"
    assert [m["role"] for m in s.messages] == ["user", "assistant", "branchSummary"]
    assert await rt.branch(None) is None and s.messages == [] and rt.messages == []


def test_message_ids_follow_the_context_as_it_grows_branches_and_reloads(manager: SessionManager) -> None:
    s = manager.create("/p")
    first, second = user("one"), assistant(text("two"))
    ids = s.append_messages([first, second])
    assert s.message_ids([first, second, user("elsewhere")]) == [*ids, None]
    third = user("three")
    [third_id] = s.append_messages([third])
    assert s.message_id(third) == third_id and s.message_ids([third, first]) == [third_id, ids[0]]
    s.branch(ids[0])  # the context is rebuilt without the later messages: the ids stay known here
    assert s.messages == [first]
    assert s.message_ids([first, second, third]) == [ids[0], ids[1], third_id]
    s.close()
    again = manager.open(s.id, readonly=True)  # loaded: the context's own message objects
    assert again.message_ids(again.messages) == [ids[0]]
    assert again.message_id(first) is None  # another object with equal content is not that entry
    again.close()


async def test_a_summary_the_run_started_with_stays_out_of_requests_after_a_mid_run_compaction(
    manager: SessionManager,
) -> None:
    """A run starts from a compacted session (its transcript opens with the summary the context
    made) and compacts again between tool calls: the rebuilt context no longer knows the old
    summary object, which must not come back as a message of the run, after the newest ones."""
    s = manager.create("/p")
    words = "alpha beta gamma delta " * 50
    small = _small_model(3_000)
    settings = CompactionSettings(reserve_tokens=1_000, keep_recent_tokens=700)
    model = ScriptedModel(
        [reply(f"answer {i}: {words}") for i in range(3)] + [reply("SUMMARY ONE"), reply("a3")]
    )
    first = _core(s, small, model, compaction=settings)
    for i in range(4):
        await first.prompt(f"question {i}: {words}")
    assert first.compactions == 1
    await first.close()
    s = manager.open(s.id)
    rt = _core(s, small, model, compaction=settings, tools=[ECHO])
    assert rt.messages[0]["role"] == "compactionSummary"  # the run starts with this object
    echo = tool_call("echo", {"text": words})
    model.push(reply(echo), reply(echo), reply("SUMMARY TWO"), reply("final"), reply("next answer"))
    await rt.prompt(f"question 4: {words}")
    assert rt.compactions == 1  # during the run, between tool calls
    assert "SUMMARY ONE" in cast(str, model.requests[-3].context["messages"][0]["content"])  # merged
    await rt.prompt("next")
    sent = model.requests[-1].context["messages"]
    summaries = [m for m in sent if COMPACTION_PREFIX in str(m["content"])]
    assert summaries == [sent[0]] and sent[0]["content"] == COMPACTION_PREFIX + "SUMMARY TWO\n</summary>"
    assert sent[-1]["content"] == "next"
    await rt.close()
