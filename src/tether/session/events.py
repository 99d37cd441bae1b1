"""What an ``AgentSession`` tells its listeners: the agent's events plus the session's own.

The session-level events carry the names and fields of pi's RPC protocol (``queue_update``,
``compaction_start``/``compaction_end``, ``auto_retry_start``/``auto_retry_end``,
``summarization_retry_*``, ``agent_settled``, ``thinking_level_changed``, ``session_info_changed``,
``entry_appended``, ``extension_error``), so the RPC server forwards them as they are (only
``notice`` is tether's own). ``agent_end`` is the agent's
event with pi 1.x's ``willRetry`` added. ``Run`` is one prompt's run: await it for the messages
it added, or iterate it for its events.

A run's last event is ``agent_settled``: ``agent_end`` closes one pass of the agent loop, but a
retry, an overflow recovery or a queued steering/follow-up message can start another pass within
the same run; ``agent_settled`` says nothing more will run on its own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NotRequired, cast

from typing_extensions import TypedDict

from tether.agent import AgentEvent
from tether.wire import AgentMessage, Usage
from tether.wire.events import (
    AgentSettledEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    CompactionReason,
    CompactionStartEvent,
    EntryAppendedEvent,
    ExtensionErrorEvent,
    QueueUpdateEvent,
    SessionInfoChangedEvent,
    SummarizationRetryAttemptStartEvent,
    SummarizationRetryFinishedEvent,
    SummarizationRetryScheduledEvent,
    ThinkingLevelChangedEvent,
)
from tether.wire.records import type_tags

if TYPE_CHECKING:
    from tether.session.session import Session


QueuedInputDisposition = Literal["handled", "queued"]
"""What became of a steering or follow-up message (pi 1.x): ``queued``; ``handled`` when
something consumed it without queueing (tether has no input handlers, so never today)."""

PromptDisposition = Literal["handled", "queued", "started"]
"""What became of a prompt: ``started`` a run, ``queued`` behind the running one, or ``handled``."""


class AgentEndSessionEvent(TypedDict):
    """One pass of the agent loop ended; ``willRetry``: the session retries it on its own
    (transient error with retries left, or a context overflow it compacts away)."""

    type: Literal["agent_end"]
    messages: list[AgentMessage]
    willRetry: bool


class CompactionSummary(TypedDict):
    summary: str
    firstKeptEntryId: str | None
    tokensBefore: int
    tokensAfter: NotRequired[int]
    estimatedTokensAfter: NotRequired[int]
    """pi 1.x's name for ``tokensAfter`` (an estimate of the rebuilt context); both are sent."""
    usage: NotRequired[Usage]
    """What the summarising call cost, when this process made it."""
    details: NotRequired[dict[str, list[str]]]
    """``{readFiles, modifiedFiles}`` of what was summarised (pi 1.6)."""


class CompactionEndEvent(TypedDict):
    type: Literal["compaction_end"]
    reason: CompactionReason
    result: NotRequired[CompactionSummary]
    """Absent when nothing was compacted (``errorMessage`` says why), as both pi versions send it."""
    aborted: bool
    willRetry: bool
    """The failed request is retried on the compacted context (overflow recovery)."""
    errorMessage: NotRequired[str]


class NoticeEvent(TypedDict):
    """Something the user should see that is not part of the conversation: an extension's
    message or failure, a run an extension stopped."""

    type: Literal["notice"]
    message: str
    command: NotRequired[str]
    """Set when this is what an extension's slash command answered (its name): print mode
    writes it to stdout, as the run's answer."""
    failure: NotRequired[bool]
    """The line that reports an extension's failure, once per extension, for text front ends;
    the ``extension_error`` event before it says the same for programs (RPC, JSON mode)."""


SessionEvent = (
    AgentEvent
    | AgentEndSessionEvent
    | AgentSettledEvent
    | QueueUpdateEvent
    | CompactionStartEvent
    | CompactionEndEvent
    | AutoRetryStartEvent
    | AutoRetryEndEvent
    | ThinkingLevelChangedEvent
    | SessionInfoChangedEvent
    | SummarizationRetryScheduledEvent
    | SummarizationRetryAttemptStartEvent
    | SummarizationRetryFinishedEvent
    | EntryAppendedEvent
    | ExtensionErrorEvent
    | NoticeEvent
)

SESSION_EVENT_TYPES = type_tags(SessionEvent)
"""The event vocabulary of every front end (the loop's events and the session's own): what an
``AgentSession`` may emit. The RPC protocol forwards all of them but ``notice`` and adds only
its own ``bash_execution_update`` (``tether.rpc.protocol.RPC_ONLY_EVENT_TYPES``)."""

Listener = Callable[[SessionEvent], Awaitable[None] | None]
"""Called with every event, in subscription order; an awaitable result is awaited (back-pressure)."""


@dataclass(frozen=True, slots=True)
class QueueSnapshot:
    """The texts waiting in each queue, oldest first."""

    steering: tuple[str, ...]
    follow_up: tuple[str, ...]


def note_lines(notice: str) -> str:
    """A notice (a ``notice`` event's message, ``AgentSession.notice``) as the front ends without
    a screen write it to stderr (print, JSON and RPC modes), as pi 1.6 writes its diagnostics:
    ``note:`` before each line, since a second line without it read as part of the first."""
    return "".join(f"note: {line}\n" for line in notice.splitlines())


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
    if result is not None:
        return {
            "type": "compaction_end",
            "reason": reason,
            "result": result,
            "aborted": aborted,
            "willRetry": will_retry,
        }
    return {
        "type": "compaction_end",
        "reason": reason,
        "aborted": aborted,
        "willRetry": will_retry,
        "errorMessage": error or "nothing to compact: the context is already as small as it gets",
    }


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
            if "tokensAfter" in result:
                result["estimatedTokensAfter"] = result["tokensAfter"]
    return compaction_end(reason, result, will_retry=will_retry)


def wire_message_update(event: Mapping[str, Any], *, snapshots: bool) -> dict[str, Any]:
    """``message_update`` as JSON and RPC output send it: pi 1.x's form (the latest ``usage``
    beside the nested event; ``toolcall_start`` names its call's ``id`` and ``toolName``), plus,
    with ``snapshots``, pi 0.73's cumulative ``message`` and ``partial`` fields. Without them the
    stream grows linearly with the reply instead of quadratically."""
    inner: dict[str, Any] = dict(event["assistantMessageEvent"])
    partial = cast(dict[str, Any], inner.get("partial") or event.get("message") or {})
    if inner.get("type") == "toolcall_start":
        blocks = cast(list[dict[str, Any]], partial.get("content") or [])
        index = inner.get("contentIndex")
        block = blocks[index] if isinstance(index, int) and 0 <= index < len(blocks) else {}
        inner.setdefault("id", block.get("id", ""))
        inner.setdefault("toolName", block.get("name", ""))
    frame: dict[str, Any] = {"type": "message_update"}
    if snapshots:
        frame["message"] = event["message"]
    else:
        inner.pop("partial", None)
    if "usage" in partial:
        frame["usage"] = partial["usage"]
    frame["assistantMessageEvent"] = inner
    return frame


class WireEvents:
    """Session events as the JSON and RPC modes send them: pi 1.6's forms of what the agent loop
    reports in pi-agent-core 0.73's (the loop's reference traces keep that form, so the additions
    are made here, at the edge):

    - ``message_update`` as ``wire_message_update`` makes it;
    - with ``pending``, an assistant ``message_start`` has ``stopReason: "pending"`` (pi 1.6: a
      reply in progress has no stop reason yet; 0.73 said ``stop`` until it knew), unless the
      reply failed before anything streamed (it starts and ends as ``error``/``aborted``, as in
      pi). JSON mode and RPC send it (the RPC's ``message_start`` admits a ``PendingReply``);
    - ``tool_execution_end`` carries ``durationMs``, the call's wall time from its
      ``tool_execution_start``.

    One per output stream: it remembers when each running call started."""

    def __init__(self, *, snapshots: bool = False, pending: bool = False) -> None:
        self.snapshots = snapshots
        self.pending = pending
        self._started: dict[str, float] = {}

    def __call__(self, event: Mapping[str, Any]) -> Mapping[str, Any]:
        kind = event["type"]
        if kind == "message_update":
            return wire_message_update(event, snapshots=self.snapshots)
        if (
            kind == "message_start"
            and self.pending
            and event["message"].get("role") == "assistant"
            and event["message"].get("stopReason") not in ("error", "aborted")
        ):
            return {**event, "message": {**event["message"], "stopReason": "pending"}}
        if kind == "tool_execution_start":
            self._started[event["toolCallId"]] = time.monotonic()
        elif kind == "tool_execution_end":
            started = self._started.pop(event["toolCallId"], None)
            if started is not None:
                return {**event, "durationMs": round((time.monotonic() - started) * 1000)}
        return event


class Run(Coroutine[Any, Any, "list[AgentMessage]"]):
    """One run of an ``AgentSession``, started on first use.

    ``await run`` runs it to the end and gives the messages it added (the prompt, replies, tool
    results, retries). ``async for event in run`` runs it and yields its events as they happen.
    Leaving the loop early (``break``, an exception, the task cancelled) aborts the run at once,
    as does cancelling a task that awaits it; the aborted run settles within about a second
    (``tether.agent.abort_grace.ABORT_GRACE``) and the session's next prompt waits for that
    instead of raising ``AgentBusyError``.

    It is a coroutine too, as ``Agent.prompt()``'s is: ``asyncio.run(core.prompt("hi"))`` and
    ``asyncio.create_task(core.prompt("hi"))`` take only coroutines, and raised "a coroutine was
    expected, got Run" (``send``/``throw``/``close`` drive one await of it).
    """

    _driven: Coroutine[Any, Any, list[AgentMessage]] | None = None
    """The await that ``send``/``throw`` drive (a task's), made at the first ``send``."""

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
        self.abort_at_start = False
        """The session was aborted before this run started: it starts aborted (pi's ``prompt()``
        starts its run on the spot, so an ``abort()`` right after it ends that run)."""

    def __await__(self) -> Generator[Any, None, list[AgentMessage]]:
        return self._wait().__await__()

    def send(self, value: Any) -> Any:
        if self._driven is None:
            self._driven = self._wait()
        return self._driven.send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None, /) -> Any:
        if self._driven is None:
            self._driven = self._wait()
        if val is None and tb is None:  # the one-argument form: the others are deprecated (3.12)
            return self._driven.throw(typ)
        return self._driven.throw(typ, val, tb)

    def close(self) -> None:
        if self._driven is not None:
            self._driven.close()

    async def _wait(self) -> list[AgentMessage]:
        future = self._started()
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            if not future.done():
                self._abort()
                future.add_done_callback(_retrieve)
            raise

    def __aiter__(self) -> RunEvents:
        if self._future is not None:
            raise RuntimeError("this run has already started: iterate it before awaiting it")
        return RunEvents(self._subscribe, self._started(), self._abort)

    def start(self) -> asyncio.Future[list[AgentMessage]]:
        """Start the run now, without waiting for it (a host that answers first, then streams)."""
        return self._started()

    def _started(self) -> asyncio.Future[list[AgentMessage]]:
        if self._future is None:
            self._future = self._start()
            if self.abort_at_start:
                self._abort()
        return self._future


class RunEvents:
    """The events of one ``Run`` as an async iterator. A plain object, not an async generator:
    one dropped after ``break`` aborts its run at once (``__del__``), where a generator would only
    be closed on a later turn of the event loop."""

    def __init__(
        self,
        subscribe: Callable[[Listener], Callable[[], None]],
        future: asyncio.Future[list[AgentMessage]],
        abort: Callable[[], None],
    ) -> None:
        self._events: asyncio.Queue[SessionEvent | None] = asyncio.Queue()
        self._future = future
        self._abort = abort
        events = self._events  # the callbacks hold the queue, not this object: dropped, it goes at once
        self._unsubscribe: Callable[[], None] | None = subscribe(events.put_nowait)
        future.add_done_callback(lambda _: events.put_nowait(None))

    def __aiter__(self) -> RunEvents:
        return self

    async def __anext__(self) -> SessionEvent:
        if self._unsubscribe is None:
            raise StopAsyncIteration
        try:
            event = await self._events.get()
        except BaseException:
            self._leave()
            raise
        if event is None:
            self._leave()
            self._future.result()  # a run that raised raises here too
            raise StopAsyncIteration
        return event

    async def aclose(self) -> None:
        """Stop listening; abort the run if it still goes, and wait until it has settled."""
        self._leave()
        await asyncio.gather(self._future, return_exceptions=True)

    def _leave(self) -> None:
        if self._unsubscribe is None:
            return
        self._unsubscribe()
        self._unsubscribe = None
        if not self._future.done():
            self._abort()
            self._future.add_done_callback(_retrieve)

    def __del__(self) -> None:
        self._leave()


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Read the outcome of a run nobody waits for any more, so asyncio does not log it."""
    if not future.cancelled():
        future.exception()
