"""What ``/session`` and the status line show: counts, tokens, cost and context use.

Tokens and cost add up the usage every assistant message reported; context use is the same
estimate compaction decides on (the last reported usage plus the messages after it), so the
percentage a user sees is the one that triggers a compaction.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tether.session.budget import context_tokens
from tether.wire import AgentMessage, ModelInfo

if TYPE_CHECKING:
    from tether.store.store import SessionRecord


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


class Tally:
    """Running totals of a message list (counts, tokens, cost), extended as the list grows.

    The status line shows them after every turn: adding only the new messages keeps that cost
    independent of the session's length. A different list, a shorter one, or one whose last
    counted message was replaced (a branch, a compaction, another session) is counted afresh."""

    def __init__(self) -> None:
        self._source: Sequence[AgentMessage] | None = None
        self._reset()

    def _reset(self) -> None:
        self._last: AgentMessage | None = None
        self.count = 0
        self.user = self.assistant = self.calls = 0
        self.tokens = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
        self.cost = 0.0

    def update(self, messages: Sequence[AgentMessage]) -> Tally:
        count = self.count
        if (
            messages is not self._source
            or count > len(messages)
            or (count and messages[count - 1] is not self._last)
        ):
            self._reset()
            self._source = messages
        for message in messages[self.count :]:
            if message["role"] == "user":
                self.user += 1
            elif message["role"] == "assistant":
                self.assistant += 1
                self.calls += sum(1 for block in message["content"] if block["type"] == "toolCall")
                usage = message["usage"]
                for key in self.tokens:
                    self.tokens[key] += int(usage.get(key) or 0)
                self.cost += float(usage["cost"]["total"])
        self.count = len(messages)
        self._last = messages[-1] if messages else None
        return self


def conversation_stats(
    messages: Sequence[AgentMessage],
    model: ModelInfo | None,
    *,
    session_id: str | None = None,
    session_file: str | None = None,
    title: str | None = None,
    tally: Tally | None = None,
    compacted: int = 0,
) -> Stats:
    """The numbers ``/session`` and the status line show. ``tally``: the totals kept for this
    list so far (updated here), so only new messages are counted; ``compacted``: how many of
    ``messages`` the newest compaction left (``SessionContext.compacted``)."""
    totals = (tally or Tally()).update(messages)
    return Stats(
        session_id=session_id,
        session_file=session_file,
        title=title,
        messages=len(messages),
        user_messages=totals.user,
        assistant_messages=totals.assistant,
        tool_calls=totals.calls,
        input_tokens=totals.tokens["input"],
        output_tokens=totals.tokens["output"],
        cache_read_tokens=totals.tokens["cacheRead"],
        cache_write_tokens=totals.tokens["cacheWrite"],
        cost=totals.cost,
        context_tokens=context_tokens(messages, compacted),
        context_window=model.get("contextWindow") if model is not None else None,
    )


def format_tokens(count: int) -> str:
    """``950``, ``12.3k``, ``1.2M``: a token count at a glance."""
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k"
    return f"{count / 1_000_000:.1f}M"


@dataclass(frozen=True, slots=True)
class SessionRow:
    """One stored session as lists show it (``tether sessions``, ``/resume``)."""

    id: str
    updated: int
    title: str
    messages: int
    cost: float
    cwd: str

    @classmethod
    def of(cls, record: SessionRecord) -> SessionRow:
        title = (record.title or record.first_prompt or "(empty)").replace("\n", " ")[:60]
        return cls(record.id, record.updated, title, record.message_count, record.cost, record.cwd)

    def __str__(self) -> str:
        return f"{self.id}  {ago(self.updated):>8}  {self.messages:>4} msgs  ${self.cost:.4f}  {self.title}"


def ago(ms: int) -> str:
    """``3h ago``: how long since a millisecond timestamp."""
    seconds = max(0, time.time() - ms / 1000)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"
