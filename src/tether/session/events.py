"""What an ``AgentSession`` tells its listeners: the agent's events plus the session's own.

The session-level events carry the names and fields of pi's RPC protocol (``queue_update``,
``compaction_start``/``compaction_end``, ``auto_retry_start``/``auto_retry_end``), so the RPC
server forwards them as they are. ``Run`` is one prompt's run: await it for the messages it
added, or iterate it for its events.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NotRequired, cast

from typing_extensions import TypedDict

from tether.agent import AgentEvent
from tether.wire import AgentMessage

if TYPE_CHECKING:
    from tether.session.session import Session

CompactionReason = Literal["manual", "threshold", "overflow"]


class QueueUpdateEvent(TypedDict):
    """The pending steering and follow-up texts changed (queued, delivered, or put back)."""

    type: Literal["queue_update"]
    steering: list[str]
    followUp: list[str]


class CompactionStartEvent(TypedDict):
    type: Literal["compaction_start"]
    reason: CompactionReason


class CompactionSummary(TypedDict):
    summary: str
    firstKeptEntryId: str | None
    tokensBefore: int
    tokensAfter: NotRequired[int]


class CompactionEndEvent(TypedDict):
    type: Literal["compaction_end"]
    reason: CompactionReason
    result: CompactionSummary | None
    """``None``: nothing was compacted (``errorMessage`` says why)."""
    aborted: bool
    willRetry: bool
    """The failed request is retried on the compacted context (overflow recovery)."""
    errorMessage: NotRequired[str]


class AutoRetryStartEvent(TypedDict):
    type: Literal["auto_retry_start"]
    attempt: int
    maxAttempts: int
    delayMs: int
    errorMessage: str


class AutoRetryEndEvent(TypedDict):
    type: Literal["auto_retry_end"]
    success: bool
    attempt: int
    finalError: NotRequired[str]


SessionEvent = (
    AgentEvent
    | QueueUpdateEvent
    | CompactionStartEvent
    | CompactionEndEvent
    | AutoRetryStartEvent
    | AutoRetryEndEvent
)

Listener = Callable[[SessionEvent], Awaitable[None] | None]
"""Called with every event, in subscription order; an awaitable result is awaited (back-pressure)."""


@dataclass(frozen=True, slots=True)
class QueueSnapshot:
    """The texts waiting in each queue, oldest first."""

    steering: tuple[str, ...]
    follow_up: tuple[str, ...]


def message_text(message: AgentMessage) -> str:
    content = cast(Any, message).get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            b.get("text", "") for b in cast(list[dict[str, Any]], content) if b.get("type") == "text"
        )
    return ""


def compaction_end(
    reason: CompactionReason,
    result: CompactionSummary | None,
    *,
    will_retry: bool = False,
    aborted: bool = False,
    error: str | None = None,
) -> CompactionEndEvent:
    event: CompactionEndEvent = {
        "type": "compaction_end",
        "reason": reason,
        "result": result,
        "aborted": aborted,
        "willRetry": will_retry,
    }
    if result is None:
        event["errorMessage"] = error or "nothing to compact: the context is already as small as it gets"
    return event


def newest_compaction_end(
    reason: CompactionReason, compacted: Session | None, will_retry: bool
) -> CompactionEndEvent:
    """``compaction_end`` with the newest compaction entry of ``compacted`` (``None``: none ran)."""
    result: CompactionSummary | None = None
    if compacted is not None:
        entry = next((e for e in reversed(compacted.path()) if e["type"] == "compaction"), None)
        if entry is not None:
            keys = ("summary", "firstKeptEntryId", "tokensBefore", "tokensAfter")
            result = cast(CompactionSummary, {k: entry.get(k) for k in keys if k in entry})
    return compaction_end(reason, result, will_retry=will_retry)


class Run:
    """One run of an ``AgentSession``, started on first use.

    ``await run`` runs it to the end and gives the messages it added (the prompt, replies, tool
    results, retries). ``async for event in run`` runs it and yields its events as they happen;
    leaving the loop early aborts the run once Python closes the iterator (on the event loop's
    next turn, or at once inside ``contextlib.aclosing``). Either way, a second run cannot start until this one
    has settled.
    """

    def __init__(
        self,
        start: Callable[[], asyncio.Future[list[AgentMessage]]],
        subscribe: Callable[[Listener], Callable[[], None]],
        abort: Callable[[], None],
    ) -> None:
        self._start = start
        self._subscribe = subscribe
        self._abort = abort
        self._future: asyncio.Future[list[AgentMessage]] | None = None

    def __await__(self) -> Generator[Any, None, list[AgentMessage]]:
        return self._started().__await__()

    async def __aiter__(self) -> AsyncIterator[SessionEvent]:
        if self._future is not None:
            raise RuntimeError("this run has already started: iterate it before awaiting it")
        events: asyncio.Queue[SessionEvent | None] = asyncio.Queue()
        unsubscribe = self._subscribe(events.put_nowait)
        future = self._started()
        future.add_done_callback(lambda _: events.put_nowait(None))
        try:
            while (event := await events.get()) is not None:
                yield event
            future.result()  # a run that raised raises here too
        finally:
            unsubscribe()
            if not future.done():
                self._abort()
                await asyncio.gather(future, return_exceptions=True)

    def start(self) -> asyncio.Future[list[AgentMessage]]:
        """Start the run now, without waiting for it (a host that answers first, then streams)."""
        return self._started()

    def _started(self) -> asyncio.Future[list[AgentMessage]]:
        if self._future is None:
            self._future = self._start()
        return self._future
