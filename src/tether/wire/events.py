"""The events whose in-process form is their wire form, declared once for every layer.

The one event vocabulary is ``SessionEvent`` (``tether.session.events``): the agent loop's
events (``tether.agent.types``) plus the session's own. Those that are plain data the same in
process and on the wire live here, below both, so that the loop, the session and the RPC
protocol (whose client imports nothing but ``wire``) name the same classes; they are open
records in the schema bundle (``@record(OPEN)``). The others stay with their layer: the tool
events carry the loop's ``AgentToolResult``, ``agent_end`` gains the session's ``willRetry`` and
``compaction_end`` the session's summary, and the RPC protocol declares the wire forms of those
itself.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from typing_extensions import TypedDict

from tether.wire.doc import Doc
from tether.wire.messages import AgentMessage, JsonObject, ToolResultMessage
from tether.wire.records import OPEN, record

# -- the agent loop's ----------------------------------------------------------------------------


@record(OPEN)
class AgentStartEvent(TypedDict):
    type: Literal["agent_start"]


@record(OPEN)
class TurnStartEvent(TypedDict):
    type: Literal["turn_start"]


@record(OPEN)
class TurnEndEvent(TypedDict):
    """One assistant response and the results of its tool calls."""

    type: Literal["turn_end"]
    message: AgentMessage
    toolResults: list[ToolResultMessage]


@record(OPEN)
class MessageStartEvent(TypedDict):
    type: Literal["message_start"]
    message: AgentMessage


@record(OPEN)
class MessageEndEvent(TypedDict):
    type: Literal["message_end"]
    message: AgentMessage


@record(OPEN)
class ToolExecutionStartEvent(TypedDict):
    type: Literal["tool_execution_start"]
    toolCallId: str
    toolName: str
    args: Any
    """The raw arguments of the tool call, before preparation and validation."""


# -- the session's -------------------------------------------------------------------------------

CompactionReason = Literal["manual", "threshold", "overflow"]


@record(OPEN)
class AgentSettledEvent(TypedDict):
    """The run is over: no retry, recovery or queued message will start anything on its own.
    ``aborted``: it ended because it was aborted."""

    type: Literal["agent_settled"]
    aborted: bool


@record(OPEN)
class QueueUpdateEvent(TypedDict):
    """The pending steering and follow-up texts changed (queued, delivered, or put back)."""

    type: Literal["queue_update"]
    steering: list[str]
    followUp: list[str]


@record(OPEN)
class CompactionStartEvent(TypedDict):
    type: Literal["compaction_start"]
    reason: CompactionReason


@record(OPEN)
class AutoRetryStartEvent(TypedDict):
    type: Literal["auto_retry_start"]
    attempt: int
    maxAttempts: int
    delayMs: int
    errorMessage: str


@record(OPEN)
class AutoRetryEndEvent(TypedDict):
    type: Literal["auto_retry_end"]
    success: bool
    attempt: int
    finalError: NotRequired[str]


@record(OPEN)
class ThinkingLevelChangedEvent(TypedDict):
    """The thinking level in effect changed (a command, or a model switch that clamped it)."""

    type: Literal["thinking_level_changed"]
    level: str


@record(OPEN)
class SessionInfoChangedEvent(TypedDict):
    """The session's display name changed (pi 1.x); no ``name`` when it was cleared."""

    type: Literal["session_info_changed"]
    name: NotRequired[str]


@record(OPEN)
class EntryAppendedEvent(TypedDict):
    """An entry that is not a message joined the session (pi 1.6): what an extension stored with
    ``append_entry``. Messages are announced by their own events, never by this one."""

    type: Literal["entry_appended"]
    entry: Annotated[JsonObject, Doc("The entry in pi's shape (docs/session-format.md), as get_entries.")]


@record(OPEN)
class ExtensionErrorEvent(TypedDict):
    """An extension failed (pi 1.6): a hook, a command or a tool of the extension at
    ``extensionPath`` raised while handling ``event``. Sent every time, unlike the one
    ``notice`` a text front end shows per extension."""

    type: Literal["extension_error"]
    extensionPath: str
    event: Annotated[str, Doc("What it was handling: a hook's event name, or `/command`.")]
    error: str


@record(OPEN)
class SummarizationRetryScheduledEvent(TypedDict):
    """A summarising call (a compaction's or a branch summary's) failed for a transient reason:
    it is tried again after ``delayMs``, on the same ``settings.retry`` budget as a reply."""

    type: Literal["summarization_retry_scheduled"]
    attempt: int
    maxAttempts: int
    delayMs: int
    errorMessage: str


@record(OPEN)
class SummarizationRetryAttemptStartEvent(TypedDict):
    """The wait is over and the summarising call starts again; ``source`` says which one
    (``reason``: the compaction's, for ``compaction``)."""

    type: Literal["summarization_retry_attempt_start"]
    source: Literal["compaction", "branchSummary"]
    reason: NotRequired[CompactionReason]


@record(OPEN)
class SummarizationRetryFinishedEvent(TypedDict):
    """Retrying the summarising call is over (it worked, failed for good, or was aborted): sent
    once, after the last ``summarization_retry_*``, as pi sends it (no fields)."""

    type: Literal["summarization_retry_finished"]
