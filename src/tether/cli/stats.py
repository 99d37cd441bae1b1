"""What ``/session`` and the status line show: counts, tokens, cost and context use.

Tokens and cost add up the usage every assistant message reported; context use is the same
estimate compaction decides on (the last reported usage plus the messages after it), so the
percentage a user sees is the one that triggers a compaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tether.session.budget import context_tokens
from tether.wire import AgentMessage, ModelInfo


@dataclass(frozen=True, slots=True)
class Stats:
    session_id: str | None
    session_file: str | None
    title: str | None
    messages: int
    user_messages: int
    assistant_messages: int
    tool_calls: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost: float
    context_tokens: int
    context_window: int | None

    @property
    def context_percent(self) -> float | None:
        if not self.context_window:
            return None
        return 100.0 * self.context_tokens / self.context_window


def conversation_stats(
    messages: Sequence[AgentMessage],
    model: ModelInfo,
    *,
    session_id: str | None = None,
    session_file: str | None = None,
    title: str | None = None,
) -> Stats:
    user = assistant = calls = 0
    tokens = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    cost = 0.0
    for message in messages:
        if message["role"] == "user":
            user += 1
        elif message["role"] == "assistant":
            assistant += 1
            calls += sum(1 for block in message["content"] if block["type"] == "toolCall")
            usage = message["usage"]
            for key in tokens:
                tokens[key] += int(usage.get(key) or 0)
            cost += float(usage["cost"]["total"])
    return Stats(
        session_id=session_id,
        session_file=session_file,
        title=title,
        messages=len(messages),
        user_messages=user,
        assistant_messages=assistant,
        tool_calls=calls,
        input_tokens=tokens["input"],
        output_tokens=tokens["output"],
        cache_read_tokens=tokens["cacheRead"],
        cache_write_tokens=tokens["cacheWrite"],
        cost=cost,
        context_tokens=context_tokens(messages),
        context_window=model.get("contextWindow"),
    )
