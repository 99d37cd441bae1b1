"""The RPC protocol's frames as typed dicts: commands in, responses and events out.

This is pi's RPC protocol (``docs/rpc.md``) spelled in Python: one JSON object per line, each
with a ``type``. A client sends *commands* (``prompt``, ``get_state``, ...; optional ``id``); the
server answers each with exactly one ``response`` frame and streams *events* (the agent events with
seed-000 messages, ``queue_update``, ``compaction_*``, ``auto_retry_*``, ``agent_settled``). tether
adds three things a pi client ignores: a ``ready`` frame on start, a ``prompt_result`` frame after
the last event of every accepted prompt, and the ``set_event_filter`` command.

One form serves pi 0.73 and pi 1.x clients: 1.x's additions (a prompt's ``disposition``,
``agent_settled``, ``agent_end.willRetry``, ``message_update.usage``, ``clear_queue``,
``get_entries``, ``get_tree``) are new fields, events and commands that 0.73 clients never read,
and 0.73's ``message_update`` snapshots stay unless ``set_event_filter`` asks for 1.x's deltas.

These definitions are the source of the schema bundle (``tether.rpc.schema``) and of the client's
types; the server validates command parameters against them. Frames the server writes are open
records (``x-open``): a client keeps keys it does not know. Commands ignore unknown keys.

The commands themselves are declared in ``tether.rpc.commands`` (the half a client writes) and
re-exported here; ``COMMANDS`` below pairs each with the ``data`` of its response.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from typing_extensions import TypedDict

from tether.rpc.commands import (
    PARAMS as PARAMS,
    AbortBashCommand as AbortBashCommand,
    AbortCommand as AbortCommand,
    AbortRetryCommand as AbortRetryCommand,
    BashCommand as BashCommand,
    ClearQueueCommand as ClearQueueCommand,
    CloneCommand as CloneCommand,
    CompactCommand as CompactCommand,
    CycleModelCommand as CycleModelCommand,
    CycleThinkingLevelCommand as CycleThinkingLevelCommand,
    ExportCommand as ExportCommand,
    ExportHtmlCommand as ExportHtmlCommand,
    ExtensionUiResponse as ExtensionUiResponse,
    FollowUpCommand as FollowUpCommand,
    ForkCommand as ForkCommand,
    GetAvailableModelsCommand as GetAvailableModelsCommand,
    GetAvailableThinkingLevelsCommand as GetAvailableThinkingLevelsCommand,
    GetCommandsCommand as GetCommandsCommand,
    GetEntriesCommand as GetEntriesCommand,
    GetForkMessagesCommand as GetForkMessagesCommand,
    GetLastAssistantTextCommand as GetLastAssistantTextCommand,
    GetMessagesCommand as GetMessagesCommand,
    GetSessionStatsCommand as GetSessionStatsCommand,
    GetStateCommand as GetStateCommand,
    GetTreeCommand as GetTreeCommand,
    MessageUpdateMode as MessageUpdateMode,
    NewSessionCommand as NewSessionCommand,
    PromptCommand as PromptCommand,
    QueueMode as QueueMode,
    RequestId as RequestId,
    SetAutoCompactionCommand as SetAutoCompactionCommand,
    SetAutoRetryCommand as SetAutoRetryCommand,
    SetEventFilterCommand as SetEventFilterCommand,
    SetFollowUpModeCommand as SetFollowUpModeCommand,
    SetModelCommand as SetModelCommand,
    SetSessionNameCommand as SetSessionNameCommand,
    SetSteeringModeCommand as SetSteeringModeCommand,
    SetThinkingLevelCommand as SetThinkingLevelCommand,
    ShutdownCommand as ShutdownCommand,
    SteerCommand as SteerCommand,
    StreamingBehavior as StreamingBehavior,
    SwitchSessionCommand as SwitchSessionCommand,
    ThinkingChoice as ThinkingChoice,
)
from tether.wire import (
    AgentMessage,
    AssistantMessageEvent,
    Doc,
    ImageContent,
    ModelInfo,
    TextContent,
    Usage,
)
from tether.wire.events import (
    AgentSettledEvent,
    AgentStartEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    CompactionReason,
    CompactionStartEvent,
    EntryAppendedEvent,
    ExtensionErrorEvent,
    MessageEndEvent,
    QueueUpdateEvent,
    SessionInfoChangedEvent,
    SummarizationRetryAttemptStartEvent,
    SummarizationRetryFinishedEvent,
    SummarizationRetryScheduledEvent,
    ThinkingLevelChangedEvent,
    ToolExecutionStartEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from tether.wire.records import OPEN, Tag, record, type_tags

PROTOCOL_VERSION = 1
"""Raised when a change would break a client written against the previous version."""

# -- command results (the ``data`` of a successful response) ------------------------------------


PromptDisposition = Annotated[
    Literal["started", "queued", "handled"],
    Doc("`started` a run, `queued` behind the running one, or `handled` without a run (pi 1.x)."),
]


@record(OPEN)
class PromptAccepted(TypedDict):
    """pi 1.x: what became of the prompt. `handled`: no run started, do not wait for agent_settled."""

    disposition: PromptDisposition
    text: NotRequired[
        Annotated[str, Doc("tether: a slash command's answer (`/tree`, `/session`), handled without a run.")]
    ]


@record(OPEN)
class QueuedAccepted(TypedDict):
    """pi 1.x: what became of a steering or follow-up message."""

    disposition: Literal["queued", "handled"]


@record(OPEN)
class ClearedQueue(TypedDict):
    steering: list[str]
    followUp: list[str]


@record(OPEN)
class EntriesResult(TypedDict):
    entries: Annotated[list[Any], Doc("Session entries in pi's shapes (docs/session-format.md).")]
    leafId: str | None


@record(OPEN)
class TreeNode(TypedDict):
    entry: Any
    children: list[TreeNode]
    label: NotRequired[str]
    labelTimestamp: NotRequired[str]


@record(OPEN)
class TreeResult(TypedDict):
    tree: list[TreeNode]
    leafId: str | None


@record(OPEN)
class CancelledResult(TypedDict):
    """pi lets extensions cancel session changes; in tether ``cancelled`` is always false."""

    cancelled: bool


@record(OPEN)
class SessionState(TypedDict):
    model: ModelInfo | None
    thinkingLevel: str
    isStreaming: bool
    isCompacting: bool
    steeringMode: QueueMode
    followUpMode: QueueMode
    sessionFile: NotRequired[
        Annotated[
            str,
            Doc(
                "This session's path, `<session database>/<session id>` (tether keeps sessions in"
                " one database); `switch_session` takes it back, as pi's clients do."
            ),
        ]
    ]
    sessionId: Annotated[str | None, Doc("Null when the run keeps no session (--no-session).")]
    sessionName: NotRequired[str]
    autoCompactionEnabled: bool
    autoRetryEnabled: bool
    messageCount: int
    pendingMessageCount: int


@record(OPEN)
class MessagesResult(TypedDict):
    messages: list[AgentMessage]


@record(OPEN)
class CycleModelResult(TypedDict):
    model: ModelInfo
    thinkingLevel: str
    isScoped: bool


@record(OPEN)
class ModelsResult(TypedDict):
    models: list[ModelInfo]


@record(OPEN)
class ThinkingLevelResult(TypedDict):
    level: str


@record(OPEN)
class ThinkingLevelsResult(TypedDict):
    levels: list[str]


@record(OPEN)
class CompactionResult(TypedDict):
    summary: str
    firstKeptEntryId: str | None
    tokensBefore: int
    tokensAfter: NotRequired[int]
    estimatedTokensAfter: NotRequired[Annotated[int, Doc("pi 1.x's name for tokensAfter.")]]
    usage: NotRequired[Annotated[Usage, Doc("What the summarising call cost (pi 1.x).")]]
    details: NotRequired[Annotated[Any, Doc("`{readFiles, modifiedFiles}` of what was summarised (pi 1.6).")]]


@record(OPEN)
class BashResult(TypedDict):
    output: str
    exitCode: NotRequired[int]
    cancelled: bool
    truncated: bool
    fullOutputPath: NotRequired[str]


@record(OPEN)
class TokenTotals(TypedDict):
    input: int
    output: int
    cacheRead: int
    cacheWrite: int
    total: int


@record(OPEN)
class ContextUsage(TypedDict):
    tokens: int | None
    contextWindow: int
    percent: int | float | None


@record(OPEN)
class SessionStats(TypedDict):
    sessionFile: NotRequired[str]
    sessionId: str | None
    userMessages: int
    assistantMessages: int
    toolCalls: int
    toolResults: int
    totalMessages: int
    tokens: TokenTotals
    cost: int | float
    contextUsage: NotRequired[ContextUsage]


@record(OPEN)
class PathResult(TypedDict):
    path: str


@record(OPEN)
class ForkResult(TypedDict):
    text: Annotated[str, Doc("The text of the user message forked before, e.g. to prefill an editor.")]
    cancelled: bool


@record(OPEN)
class ForkMessage(TypedDict):
    entryId: str
    text: str


@record(OPEN)
class ForkMessagesResult(TypedDict):
    messages: list[ForkMessage]


@record(OPEN)
class LastAssistantTextResult(TypedDict):
    text: str | None


@record(OPEN)
class CommandSourceInfo(TypedDict):
    """Where a command comes from (pi 1.x's ``SourceInfo``)."""

    path: str
    source: str
    scope: Literal["user", "project", "temporary"]
    origin: Literal["package", "top-level"]


@record(OPEN)
class SlashCommandInfo(TypedDict):
    """A command from the user's files: ``source`` is ``extension``, ``prompt`` (a template) or
    ``skill`` (named ``skill:NAME``); send ``/NAME args`` as a prompt to run it."""

    name: str
    description: NotRequired[str]
    source: str
    sourceInfo: NotRequired[CommandSourceInfo]


@record(OPEN)
class CommandsResult(TypedDict):
    commands: list[SlashCommandInfo]


@record(OPEN)
class EventFilter(TypedDict):
    exclude: list[str]
    messageUpdate: MessageUpdateMode


# -- frames the server writes ---------------------------------------------------------------------


@record(OPEN)
class ReadyFrame(TypedDict):
    """tether: the first frame; commands sent before it are buffered, not lost."""

    type: Literal["ready"]
    protocolVersion: int
    version: Annotated[str, Doc("tether's version.")]
    sessionId: str | None


@record(OPEN)
class ResponseFrame(TypedDict):
    """The one answer to a command. ``data`` is the command's result (see x-rpc.commands)."""

    id: NotRequired[RequestId]
    type: Literal["response"]
    command: Annotated[str, Doc("The command's type; `parse` when the line was not a command.")]
    success: bool
    data: NotRequired[Any]
    error: NotRequired[str]


PromptStatus = Literal["completed", "aborted", "error"]


@record(OPEN)
class ExtensionUiRequest(TypedDict):
    """An extension asks the user or shows something (pi's ``docs/rpc-extension-ui.md``).
    The dialogs ``select``, ``confirm``, ``input`` and ``editor`` wait for an
    ``extension_ui_response`` with the same ``id`` (or their ``timeout``, in milliseconds, after
    which the agent takes them as dismissed); ``notify``, ``setStatus``, ``setWidget``,
    ``setTitle`` and ``set_editor_text`` expect no answer."""

    type: Literal["extension_ui_request"]
    id: str
    method: Literal[
        "select",
        "confirm",
        "input",
        "editor",
        "notify",
        "setStatus",
        "setWidget",
        "setTitle",
        "set_editor_text",
    ]
    title: NotRequired[str]
    message: NotRequired[str]
    options: NotRequired[list[str]]
    placeholder: NotRequired[str]
    prefill: NotRequired[Annotated[str, Doc("`editor`: the text the editor starts with.")]]
    timeout: NotRequired[Annotated[int, Doc("A dialog's time limit in milliseconds.")]]
    notifyType: NotRequired[Literal["info", "warning", "error"]]
    statusKey: NotRequired[str]
    statusText: NotRequired[Annotated[str, Doc("`setStatus`: absent clears the entry of `statusKey`.")]]
    widgetKey: NotRequired[str]
    widgetLines: NotRequired[Annotated[list[str], Doc("`setWidget`: absent clears `widgetKey`.")]]
    widgetPlacement: NotRequired[Literal["aboveEditor", "belowEditor"]]
    text: NotRequired[Annotated[str, Doc("`set_editor_text`: the text for the input box.")]]


@record(OPEN)
class PromptResultFrame(TypedDict):
    """tether: sent after the last event of an accepted prompt, when its run has settled."""

    type: Literal["prompt_result"]
    id: NotRequired[RequestId]
    status: PromptStatus
    error: NotRequired[str]


@record(OPEN)
class ToolResultPayload(TypedDict):
    """A tool's result (final or partial so far): content for the model, details for UIs."""

    content: list[TextContent | ImageContent]
    details: NotRequired[Any]


# -- events -----------------------------------------------------------------------------------------
# The events are the session's vocabulary (``tether.session.events``); those whose in-process form
# is their wire form are declared once in ``tether.wire.events`` and imported above. Six are
# declared here in their wire form, which differs from the in-process one on purpose:
# ``agent_end`` (``willRetry`` optional: pi 0.73 sends none), ``message_start`` (a reply that has
# just begun says ``stopReason: "pending"``, as pi 1.6 says it; the loop's traces keep 0.73's
# ``stop``), ``message_update`` (the ``delta`` filter drops ``message`` and ``partial``),
# ``tool_execution_update``/``_end`` (a tool's result is a dataclass in process,
# ``ToolResultPayload`` on the wire) and ``compaction_end`` (its ``result`` is the ``compact``
# command's ``CompactionResult``). ``bash_execution_update`` is the RPC's own.


@record(OPEN)
class PendingReply(TypedDict):
    """An assistant message as its reply begins (pi 1.6): an ``AssistantMessage`` in every other
    field, with ``stopReason: "pending"`` (seed 000's stop reasons name only finished replies)."""

    role: Literal["assistant"]
    stopReason: Literal["pending"]


@record(OPEN)
class MessageStartEvent(TypedDict):
    type: Literal["message_start"]
    message: AgentMessage | PendingReply


@record(OPEN)
class AgentEndEvent(TypedDict):
    """One pass of the agent loop ended; ``messages`` are the messages it added. A retry or a
    queued message may start another pass: ``agent_settled`` ends the run."""

    type: Literal["agent_end"]
    messages: list[AgentMessage]
    willRetry: NotRequired[Annotated[bool, Doc("The session retries this pass on its own.")]]


@record(OPEN)
class AssistantEventDelta(TypedDict):
    """An assistant streaming event without its ``partial`` snapshot (the `delta` filter)."""

    type: str
    contentIndex: NotRequired[int]
    delta: NotRequired[str]
    id: NotRequired[Annotated[str, Doc("toolcall_start: the call's id.")]]
    toolName: NotRequired[Annotated[str, Doc("toolcall_start: the tool's name.")]]


@record(OPEN)
class MessageUpdateEvent(TypedDict):
    """An assistant message streams. ``message`` (and ``partial`` inside the nested event) only
    under the ``full`` filter."""

    type: Literal["message_update"]
    message: NotRequired[AgentMessage]
    usage: NotRequired[Annotated[Usage, Doc("The reply's latest cumulative usage (pi 1.x).")]]
    assistantMessageEvent: AssistantMessageEvent | AssistantEventDelta


@record(OPEN)
class ToolExecutionUpdateEvent(TypedDict):
    type: Literal["tool_execution_update"]
    toolCallId: str
    toolName: str
    args: Any
    partialResult: ToolResultPayload


@record(OPEN)
class ToolExecutionEndEvent(TypedDict):
    type: Literal["tool_execution_end"]
    toolCallId: str
    toolName: str
    result: ToolResultPayload
    isError: bool
    durationMs: NotRequired[Annotated[int, Doc("The call's wall time in ms (pi 1.6).")]]


@record(OPEN)
class CompactionEndEvent(TypedDict):
    """``result`` is absent when the compaction failed (``errorMessage``) or was aborted."""

    type: Literal["compaction_end"]
    reason: CompactionReason
    result: NotRequired[CompactionResult]
    aborted: bool
    willRetry: bool
    errorMessage: NotRequired[str]


@record(OPEN)
class BashExecutionUpdateEvent(TypedDict):
    """A chunk of a ``bash`` command's output, as it runs (pi 1.x)."""

    type: Literal["bash_execution_update"]
    id: NotRequired[Annotated[RequestId, Doc("The bash command's id, when it had one.")]]
    delta: str


_EventUnion = (
    AgentStartEvent
    | AgentEndEvent
    | AgentSettledEvent
    | TurnStartEvent
    | TurnEndEvent
    | MessageStartEvent
    | MessageUpdateEvent
    | MessageEndEvent
    | ToolExecutionStartEvent
    | ToolExecutionUpdateEvent
    | ToolExecutionEndEvent
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
    | BashExecutionUpdateEvent
)
"""Every event frame; listed once so ``Event`` and ``ServerFrame`` cannot drift apart."""

Event = Annotated[_EventUnion, Tag("type")]

ServerFrame = Annotated[
    ReadyFrame | ResponseFrame | PromptResultFrame | ExtensionUiRequest | _EventUnion, Tag("type")
]

COMMANDS: dict[str, tuple[type, type | None]] = {
    "prompt": (PromptCommand, PromptAccepted),
    "steer": (SteerCommand, QueuedAccepted),
    "follow_up": (FollowUpCommand, QueuedAccepted),
    "abort": (AbortCommand, None),
    "clear_queue": (ClearQueueCommand, ClearedQueue),
    "new_session": (NewSessionCommand, CancelledResult),
    "get_state": (GetStateCommand, SessionState),
    "get_messages": (GetMessagesCommand, MessagesResult),
    "set_model": (SetModelCommand, ModelInfo),
    "cycle_model": (CycleModelCommand, CycleModelResult),
    "get_available_models": (GetAvailableModelsCommand, ModelsResult),
    "set_thinking_level": (SetThinkingLevelCommand, None),
    "cycle_thinking_level": (CycleThinkingLevelCommand, ThinkingLevelResult),
    "get_available_thinking_levels": (GetAvailableThinkingLevelsCommand, ThinkingLevelsResult),
    "set_steering_mode": (SetSteeringModeCommand, None),
    "set_follow_up_mode": (SetFollowUpModeCommand, None),
    "compact": (CompactCommand, CompactionResult),
    "set_auto_compaction": (SetAutoCompactionCommand, None),
    "set_auto_retry": (SetAutoRetryCommand, None),
    "abort_retry": (AbortRetryCommand, None),
    "bash": (BashCommand, BashResult),
    "abort_bash": (AbortBashCommand, None),
    "get_session_stats": (GetSessionStatsCommand, SessionStats),
    "export_html": (ExportHtmlCommand, PathResult),
    "export": (ExportCommand, PathResult),
    "switch_session": (SwitchSessionCommand, CancelledResult),
    "fork": (ForkCommand, ForkResult),
    "clone": (CloneCommand, CancelledResult),
    "get_fork_messages": (GetForkMessagesCommand, ForkMessagesResult),
    "get_entries": (GetEntriesCommand, EntriesResult),
    "get_tree": (GetTreeCommand, TreeResult),
    "get_last_assistant_text": (GetLastAssistantTextCommand, LastAssistantTextResult),
    "set_session_name": (SetSessionNameCommand, None),
    "get_commands": (GetCommandsCommand, CommandsResult),
    "extension_ui_response": (ExtensionUiResponse, None),
    "set_event_filter": (SetEventFilterCommand, EventFilter),
    "shutdown": (ShutdownCommand, None),
}
"""Command type -> (its parameters, the ``data`` of its success response; ``None``: no data).

``cycle_model`` and ``cycle_thinking_level`` may answer ``data: null`` (nothing to cycle)."""

NULLABLE_RESULTS = frozenset({"cycle_model", "cycle_thinking_level"})

EVENT_TYPES: tuple[str, ...] = type_tags(_EventUnion)
"""Every event type a client may receive, in the order of ``Event``."""

RPC_ONLY_EVENT_TYPES = frozenset({"bash_execution_update"})
"""The events only the RPC server emits; every other event frame is one of the session's
(``tether.session.events.SESSION_EVENT_TYPES``; a test keeps the two together)."""
