"""Session statistics: sums of reported usage, counts, and context use as compaction sees it."""

from __future__ import annotations

from typing import Any

from tether.session.budget import context_tokens
from tether.session.stats import conversation_stats
from tether.testing.scripted import SCRIPTED_MODEL


def assistant(text: str, tokens: tuple[int, int, int, int], cost: float, calls: int = 0) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    content += [{"type": "toolCall", "id": f"c{i}", "name": "ls", "arguments": {}} for i in range(calls)]
    i, o, r, w = tokens
    return {
        "role": "assistant",
        "content": content,
        "api": "x",
        "provider": "x",
        "model": "x",
        "usage": {
            "input": i,
            "output": o,
            "cacheRead": r,
            "cacheWrite": w,
            "totalTokens": i + o + r + w,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost},
        },
        "stopReason": "stop",
        "timestamp": 1,
    }


def test_sums_counts_and_context() -> None:
    messages: list[Any] = [
        {"role": "user", "content": "hi", "timestamp": 1},
        assistant("a", (100, 20, 0, 50), 0.01, calls=2),
        {"role": "user", "content": "more", "timestamp": 2},
        assistant("b", (200, 30, 150, 0), 0.02),
    ]
    stats = conversation_stats(messages, SCRIPTED_MODEL, session_id="s1", title="t")
    assert (stats.messages, stats.user_messages, stats.assistant_messages, stats.tool_calls) == (4, 2, 2, 2)
    assert (stats.input_tokens, stats.output_tokens, stats.cache_read_tokens, stats.cache_write_tokens) == (
        300,
        50,
        150,
        50,
    )
    assert abs(stats.cost - 0.03) < 1e-12
    assert stats.context_tokens == context_tokens(messages) > 0
    assert stats.context_percent == 100.0 * stats.context_tokens / 100_000


def test_no_window_no_percentage() -> None:
    model: Any = {**SCRIPTED_MODEL, "contextWindow": None}
    assert conversation_stats([], model).context_percent is None


def test_a_tally_counts_only_new_messages_and_starts_over_on_another_list() -> None:
    from tether.session.stats import Tally

    messages: list[Any] = [
        {"role": "user", "content": "hi", "timestamp": 1},
        assistant("a", (1, 2, 0, 0), 0.5),
    ]
    tally = Tally()
    first = conversation_stats(messages, SCRIPTED_MODEL, tally=tally)
    assert (first.messages, first.output_tokens, tally.count) == (2, 2, 2)
    messages.append(assistant("b", (1, 3, 0, 0), 0.25, calls=1))
    grown = conversation_stats(messages, SCRIPTED_MODEL, tally=tally)
    assert grown == conversation_stats(messages, SCRIPTED_MODEL)  # the same as counting afresh
    assert (grown.assistant_messages, grown.tool_calls, grown.output_tokens, grown.cost) == (2, 1, 5, 0.75)
    messages[-1] = assistant("c", (1, 7, 0, 0), 0.0)  # the last counted one replaced: afresh
    assert conversation_stats(messages, SCRIPTED_MODEL, tally=tally) == conversation_stats(
        messages, SCRIPTED_MODEL
    )
    branch = messages[:1]  # another (shorter) list: afresh
    assert conversation_stats(branch, SCRIPTED_MODEL, tally=tally).assistant_messages == 0
