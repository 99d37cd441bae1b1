"""Issue 15, follow-up: the model calls a session makes outside the agent loop (a compaction's
summary, a branch summary) are ``chat`` spans like the loop's, labelled ``tether.purpose``.

Their parent is the span current where the call is made: a run that compacts before its next
model call has the summary's span under its ``invoke_agent``, next to the loop's own calls; a
compaction or a branch summary the user asks for between runs (and the overflow recovery, which
runs after the failed run ended) is a trace of its own, tied to the run by the conversation id.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode
from telemetry_support import Otel, parent_of, span_id

from tether.agent import Agent
from tether.session import AgentSession, CompactionSettings, SessionManager, Settings
from tether.session.compaction import CompactionError
from tether.testing.scripted import ScriptedModel, reply
from tether.wire import ModelInfo

WORDS = "alpha beta gamma delta " * 50


def _session(otel: Otel, tmp_path: Path, model: ScriptedModel, settings: Settings) -> AgentSession:
    manager = SessionManager.at(tmp_path / "sessions.db")
    agent = Agent(model=model.model, stream_fn=model, instrumentation=otel.instrumentation())
    return AgentSession(agent, manager.create("/p"), settings=settings, sessions=manager)


def _summary_spans(otel: Otel) -> list[ReadableSpan]:
    return [s for s in otel.spans() if s.attributes and "tether.purpose" in s.attributes]


async def test_a_compaction_before_a_model_call_is_a_chat_span_of_the_run(otel: Otel, tmp_path: Path) -> None:
    small: ModelInfo = {**ScriptedModel().model, "contextWindow": 2_000}
    model = ScriptedModel([reply(f"answer {i}: {WORDS}") for i in range(8)], model=small)
    settings = Settings(compaction=CompactionSettings(reserve_tokens=500, keep_recent_tokens=200))
    core = _session(otel, tmp_path, model, settings)
    for i in range(8):
        otel.exporter.clear()
        model.push(reply("THE SUMMARY"))  # used only when this run compacts
        await core.prompt(f"question {i}: {WORDS}")
        if core.compactions:
            break
    assert core.compactions == 1
    spans = otel.spans()
    run = next(s for s in spans if s.name == "invoke_agent tether")
    (summary,) = _summary_spans(otel)
    loop_calls = [s for s in spans if s.name.startswith("chat ") and s is not summary]
    assert summary.name == f"chat {small['id']}" and summary.kind is SpanKind.CLIENT
    assert parent_of(summary) == span_id(run)  # under the run, before the loop's call it made room for
    assert [parent_of(s) for s in loop_calls] == [span_id(run)]
    assert summary.start_time is not None and loop_calls[0].start_time is not None
    assert summary.start_time < loop_calls[0].start_time
    attributes = dict(summary.attributes or {})
    assert attributes["tether.purpose"] == "compaction"
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.conversation.id"] == core.session_id
    assert attributes["gen_ai.request.model"] == small["id"]
    assert "tether.turn" not in attributes  # not one of the loop's turns
    assert summary.status.status_code is StatusCode.UNSET
    await core.close()


async def _three_turns(otel: Otel, tmp_path: Path) -> tuple[ScriptedModel, AgentSession]:
    """A stored session of three long turns, ready for a summary of its first ones."""
    model = ScriptedModel([reply(f"answer {i}: {WORDS}") for i in range(3)])
    core = _session(otel, tmp_path, model, Settings(compaction=CompactionSettings(keep_recent_tokens=300)))
    for i in range(3):
        await core.prompt(f"question {i}: {WORDS}")
    return model, core


async def test_a_manual_compaction_and_a_branch_summary_are_traces_of_their_own(
    otel: Otel, tmp_path: Path
) -> None:
    model, core = await _three_turns(otel, tmp_path)
    session = core.session
    assert session is not None
    target = session.path()[3]["id"]

    otel.exporter.clear()
    model.push(reply("MANUAL SUMMARY"))
    await core.compact()
    model.push(reply("BRANCH SUMMARY"))
    assert await core.branch(target, summarize=True) == "BRANCH SUMMARY"
    compaction, branch = _summary_spans(otel)
    assert [s.name for s in otel.spans()] == [compaction.name, branch.name]  # no run span around them
    assert (compaction.attributes or {})["tether.purpose"] == "compaction"
    assert (branch.attributes or {})["tether.purpose"] == "branch_summary"
    assert parent_of(compaction) is None and parent_of(branch) is None
    assert all(
        (s.attributes or {})["gen_ai.conversation.id"] == core.session_id for s in (compaction, branch)
    )

    otel.exporter.clear()  # a summary that fails fails its span, as a loop call does
    model.push(reply(error="529 overloaded_error: Overloaded"))
    model.push(reply(f"more: {WORDS}"))
    await core.prompt(f"more: {WORDS}")
    otel.exporter.clear()
    model.push(reply(error="boom"))
    with pytest.raises(CompactionError, match="summarising failed: boom"):
        await core.compact()
    (failed,) = _summary_spans(otel)
    assert failed.status.status_code is StatusCode.ERROR
    assert (failed.attributes or {})["error.type"] == "_OTHER"
    await core.close()


async def test_the_overflow_recovery_summary_is_traced_between_the_two_runs(
    otel: Otel, tmp_path: Path
) -> None:
    model, core = await _three_turns(otel, tmp_path)
    otel.exporter.clear()
    model.push(
        reply(error="This model's maximum context length is 8192 tokens"), reply("SUMMARY"), reply("ok")
    )
    await core.prompt("last one")
    assert core.compactions == 1
    spans = otel.spans()
    (summary,) = _summary_spans(otel)
    runs = [s for s in spans if s.name == "invoke_agent tether"]
    assert len(runs) == 2  # the run that overflowed, and the one that continued after the summary
    failed_run, continued = runs
    assert failed_run.end_time is not None and summary.start_time is not None
    assert failed_run.end_time <= summary.start_time
    assert summary.end_time is not None and continued.start_time is not None
    assert summary.end_time <= continued.start_time
    assert parent_of(summary) is None
    assert (summary.attributes or {})["gen_ai.conversation.id"] == core.session_id
    await core.close()


async def test_no_span_without_instrumentation(otel: Otel, tmp_path: Path) -> None:
    model = ScriptedModel([reply(f"answer: {WORDS}"), reply(f"again: {WORDS}"), reply("SUMMARY")])
    with SessionManager.at(tmp_path / "sessions.db") as manager:
        settings = Settings(compaction=CompactionSettings(keep_recent_tokens=300))
        core = AgentSession(
            Agent(model=model.model, stream_fn=model), manager.create("/p"), settings=settings
        )
        await core.prompt(f"question: {WORDS}")
        await core.prompt(f"another: {WORDS}")
        await core.compact()
        assert core.compactions == 1
        await core.close()
    assert otel.spans() == []
