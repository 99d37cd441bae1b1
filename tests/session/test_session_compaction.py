"""Compaction and branch summaries, driven by a scripted model."""

from __future__ import annotations

from typing import Any, cast

import pytest

from session_helpers import MODEL, assistant, call, result, text, user
from tether.agent import Agent
from tether.session import (
    AgentSession,
    CompactionError,
    CompactionSettings,
    Session,
    SessionManager,
    compact,
    context_tokens,
    estimate_tokens,
    is_context_overflow,
    should_compact,
    summarize_branch,
)
from tether.session.compaction import NothingToCompactError, serialize_for_summary
from tether.testing.scripted import ScriptedModel, reply
from tether.wire import AssistantMessage

WORDS = "lorem ipsum dolor sit amet " * 40  # ~1080 chars, ~270 tokens


def _long_session(manager: SessionManager, turns: int) -> tuple[Session, list[str]]:
    s = manager.create("/p", model=MODEL)
    ids: list[str] = []
    for i in range(turns):
        ids.append(s.append_message(user(f"question {i}: {WORDS}")))
        ids.append(s.append_message(assistant(text(f"reading {i}"), call(f"c{i}", path=f"f{i}"))))
        ids.append(s.append_message(result(f"c{i}", f"contents {i}: {WORDS}")))
        ids.append(s.append_message(assistant(text(f"answer {i}: {WORDS}"))))
    return s, ids


def scripted(*replies: str) -> ScriptedModel:
    return ScriptedModel([reply(r) for r in replies], model=MODEL)


def _prompt_of(model: ScriptedModel, i: int) -> str:
    return cast(str, model.requests[i].context["messages"][0]["content"])


def test_threshold_uses_reported_usage_plus_estimates() -> None:
    msgs = [user("x" * 400), assistant(text("ok"), tokens=5_000), user("y" * 4_000)]
    assert estimate_tokens(msgs[2]) == 1_000
    assert context_tokens(msgs) == 6_000
    assert context_tokens(msgs[:1]) == 100  # no usage yet: estimates only
    settings = CompactionSettings(reserve_tokens=16_384)
    assert not should_compact(80_000, 100_000, settings)
    assert should_compact(90_000, 100_000, settings)
    assert not should_compact(90_000, 100_000, CompactionSettings(enabled=False))
    assert not should_compact(90_000, None, settings)


def test_the_context_keeps_its_token_count_as_it_grows(manager: SessionManager) -> None:
    """The count a session keeps per added message is what counting its context afresh gives,
    across replies with and without usage, a failed reply, a branch and a reopen."""
    s = manager.create("/p", model=MODEL)

    def agrees() -> None:
        assert s.context.tokens.total == context_tokens(s.messages)

    first = s.append_message(user("x" * 400))
    agrees()
    s.append_message(assistant(text("no usage reported")))  # estimated, like the prompt
    agrees()
    s.append_message(assistant(text("ok"), tokens=5_000))
    agrees()
    s.append_message(user("y" * 4_000))
    s.append_message(assistant(text("failed"), stop="error", tokens=9_000))  # usage not taken
    agrees()
    assert s.context.tokens.total == 5_000 + 1_000 + estimate_tokens(s.messages[-1])
    assert s.context.tokens.plus([user("z" * 40)]) == s.context.tokens.total + 10
    s.branch(first)
    agrees()
    assert s.context.tokens.total == 100
    session_id = s.id
    s.close()
    reopened = manager.open(session_id)
    assert reopened.context.tokens.total == context_tokens(reopened.messages) == 100
    reopened.close()


@pytest.mark.parametrize(
    ("error", "overflow"),
    [
        ("prompt is too long: 213462 tokens > 200000 maximum", True),
        ("This model's maximum context length is 128000 tokens. However, you requested 130000", True),
        ('{"error":{"code":"context_length_exceeded"}}', True),
        ("Your input exceeds the context window of this model", True),
        ("The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", True),
        ("rate limit exceeded, retry later", False),
        ("overloaded_error", False),
    ],
)
def test_overflow_errors_are_recognised(error: str, overflow: bool) -> None:
    failed = cast(AssistantMessage, {**assistant(text("")), "stopReason": "error", "errorMessage": error})
    assert is_context_overflow(failed) is overflow


def test_silent_overflow_is_recognised_from_usage() -> None:
    ok = cast(AssistantMessage, assistant(text("fine"), tokens=120_000))
    assert is_context_overflow(ok, context_window=100_000)
    assert not is_context_overflow(ok, context_window=200_000)


async def test_compact_summarises_the_old_part_and_keeps_recent_tokens(manager: SessionManager) -> None:
    s, ids = _long_session(manager, turns=12)
    before = list(s.messages)
    model = scripted("SUMMARY ONE")
    res = await compact(s, MODEL, model, settings=CompactionSettings(keep_recent_tokens=2_000))
    assert res.summary == "SUMMARY ONE"
    kept_from = ids.index(cast(str, res.first_kept_entry_id))
    assert s.messages[0]["role"] == "compactionSummary"
    assert s.messages[1:] == before[kept_from:]
    assert s.messages[1]["role"] != "toolResult"
    kept_tokens = sum(estimate_tokens(m) for m in before[kept_from:])
    assert kept_tokens >= 2_000 and kept_tokens - estimate_tokens(before[kept_from]) < 2_000 + 600
    assert res.tokens_after < res.tokens_before
    # The summariser saw exactly the compacted messages, and the current model was used.
    prompt = _prompt_of(model, 0)
    assert prompt.startswith(f"<conversation>\n{serialize_for_summary(before[:kept_from])}\n</conversation>")
    assert "<previous-summary>" not in prompt
    # Resume sees the same context.
    s.close()
    assert manager.open(s.id).messages == s.messages


async def test_second_compaction_updates_the_summary_instead_of_nesting(manager: SessionManager) -> None:
    s, _ = _long_session(manager, turns=10)
    model = scripted("SUMMARY ONE", "SUMMARY TWO")
    settings = CompactionSettings(keep_recent_tokens=2_000)
    await compact(s, MODEL, model, settings=settings)
    for i in range(10, 16):
        s.append_message(user(f"question {i}: {WORDS}"))
        s.append_message(assistant(text(f"answer {i}: {WORDS}")))
    await compact(s, MODEL, model, settings=settings)
    prompt = _prompt_of(model, 1)
    conversation, rest = prompt.split("</conversation>")
    assert "SUMMARY ONE" not in conversation  # not nested as a message
    assert "<previous-summary>\nSUMMARY ONE\n</previous-summary>" in rest
    assert "question 0:" not in conversation  # already covered by the previous summary
    summaries = [m for m in s.messages if m["role"] == "compactionSummary"]
    assert [m["summary"] for m in summaries] == ["SUMMARY TWO"]  # type: ignore[typeddict-item]


async def test_cut_never_separates_a_tool_call_from_its_result(manager: SessionManager) -> None:
    s = manager.create("/p")
    s.append_message(user("start " + WORDS))
    s.append_message(assistant(call("c1")))
    s.append_message(result("c1", "x" * 8_000))  # ~2,000 tokens: the budget is reached on it
    s.append_message(assistant(text("end")))
    res = await compact(s, MODEL, scripted("S"), settings=CompactionSettings(keep_recent_tokens=1_500))
    kept = s.messages[1:]
    assert [m["role"] for m in kept] == ["assistant", "toolResult", "assistant"]
    assert res.first_kept_entry_id == s.context.entry_ids[1]


async def test_instructions_reach_the_summariser(manager: SessionManager) -> None:
    s, _ = _long_session(manager, turns=4)
    model = scripted("S")
    await compact(
        s,
        MODEL,
        model,
        instructions="focus on file paths",
        settings=CompactionSettings(keep_recent_tokens=500),
    )
    assert "Additional instructions: focus on file paths" in _prompt_of(model, 0)
    assert model.requests[0].context.get("systemPrompt")


async def test_failed_summary_persists_nothing(manager: SessionManager) -> None:
    s, _ = _long_session(manager, turns=4)
    count = len(s.entries())
    with pytest.raises(CompactionError, match="summarising failed: provider down"):
        await compact(
            s,
            MODEL,
            ScriptedModel([reply(error="provider down")], model=MODEL),
            settings=CompactionSettings(keep_recent_tokens=500),
        )
    assert len(s.entries()) == count
    with pytest.raises(
        NothingToCompactError, match=r"nothing to compact yet: the conversation \(\d+ tokens\)"
    ):
        await compact(s, MODEL, scripted("S"), settings=CompactionSettings(keep_recent_tokens=10**9))


async def test_branch_summary_covers_only_the_branch_being_left(manager: SessionManager) -> None:
    s = manager.create("/p")
    q = s.append_message(user("shared question"))
    s.append_message(assistant(text("shared answer")))
    s.append_message(user("branch-only idea"))
    s.append_message(assistant(text("branch-only reply")))
    model = scripted("BRANCH SUMMARY")
    leaf = await summarize_branch(s, q, MODEL, model)
    prompt = _prompt_of(model, 0)
    assert "branch-only idea" in prompt and "shared question" not in prompt
    entry: dict[str, Any] = s.entry(cast(str, leaf))
    assert entry["type"] == "branch_summary" and entry["parentId"] == q
    assert [m["role"] for m in s.messages] == ["user", "branchSummary"]


async def test_a_compaction_lists_the_files_read_and_changed_as_pi_does(manager: SessionManager) -> None:
    """pi 1.6's ``details``: files only read apart from changed ones, sorted, carried over from
    the compaction before."""
    s = manager.create("/p", model=MODEL)
    s.append_message(user("start " + WORDS))
    s.append_message(assistant(call("c1", name="read", path="b.py"), call("c2", name="read", path="a.py")))
    s.append_message(result("c1", "b"))
    s.append_message(result("c2", "a"))
    s.append_message(assistant(call("c3", name="edit", path="b.py")))
    s.append_message(result("c3", "edited"))
    s.append_message(user("more " + WORDS))
    s.append_message(assistant(text("end " + WORDS)))
    settings = CompactionSettings(keep_recent_tokens=300)
    first = await compact(s, MODEL, scripted("S1"), settings=settings)
    assert first.details == {"readFiles": ["a.py"], "modifiedFiles": ["b.py"]}
    assert s.entry(first.entry_id)["details"] == first.details
    s.append_message(assistant(call("c4", name="write", path="c.py")))
    s.append_message(result("c4", "written"))
    s.append_message(user("again " + WORDS))
    s.append_message(assistant(text("done " + WORDS)))
    second = await compact(s, MODEL, scripted("S2"), settings=settings)
    assert second.details == {"readFiles": ["a.py"], "modifiedFiles": ["b.py", "c.py"]}


async def test_after_a_compaction_the_context_counts_no_reply_it_kept(manager: SessionManager) -> None:
    """A reply the compaction kept reported the context before it (70% of the window): until a
    reply after the compaction reports, the context is estimated, kept replies too, by their
    place after the summary. The status line showed the old 70% (``stats``)."""
    s = manager.create("/p", model=MODEL)
    for i in range(8):
        s.append_message(user(f"question {i}: {WORDS}"))
        s.append_message(assistant(text(f"answer {i}: {WORDS}"), tokens=70_000))
    await compact(s, MODEL, scripted("SUMMARY"), settings=CompactionSettings(keep_recent_tokens=1_000))
    assert s.messages[-1]["role"] == "assistant"  # kept, with its usage of 70,000
    estimated = sum(estimate_tokens(m) for m in s.messages)
    assert s.context.tokens.total == estimated < 5_000
    core = AgentSession(Agent(model=MODEL, stream_fn=scripted()), s)
    assert core.stats().context_tokens == estimated
    s.append_message(user("more"))
    assert s.context.tokens.total == estimated + estimate_tokens(user("more"))
    s.close()
    reopened = manager.open(s.id)
    assert reopened.context.tokens.total == estimated + estimate_tokens(user("more"))
    reopened.append_message(assistant(text("after"), tokens=3_000))
    assert reopened.context.tokens.total == 3_000
    await core.close()
    reopened.close()
