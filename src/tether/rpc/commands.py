"""The RPC protocol's commands (client -> server), one typed dict each, and the aliases their
fields share.

Apart from the frames the server writes (``tether.rpc.protocol``, which pairs each command with
the ``data`` of its response in ``COMMANDS`` and re-exports these names) because they are the
half a client writes and the server validates (``PARAMS``: unknown keys dropped, types strict);
read ``protocol``'s docstring for the protocol as a whole.
"""

from __future__ import annotations

from typing import Annotated, Literal, NotRequired

from typing_extensions import TypedDict

from tether.wire import Doc, ImageContent
from tether.wire.records import CLOSED, record

PARAMS = CLOSED
"""Command parameters: unknown keys are dropped (a newer client may send more), types are strict."""

QueueMode = Annotated[
    Literal["all", "one-at-a-time"],
    Doc("`all`: deliver every queued message at once; `one-at-a-time`: one per turn."),
]
StreamingBehavior = Annotated[
    Literal["steer", "followUp"],
    Doc("How a prompt sent while the agent runs is queued: as steering or as a follow-up."),
]
ThinkingChoice = Annotated[
    Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"],
    Doc("A reasoning level; the server clamps it to what the model supports."),
]
RequestId = Annotated[
    str | int | float,
    Doc(
        "Chosen by the client; echoed as sent in the response (and in prompt_result). pi's clients "
        "send strings; JSON-RPC habits send numbers, which are echoed as numbers."
    ),
]

# -- commands (client -> server) -----------------------------------------------------------------


@record(PARAMS)
class PromptCommand(TypedDict):
    """Send a user prompt. While the agent runs, ``streamingBehavior`` is required."""

    id: NotRequired[RequestId]
    type: Literal["prompt"]
    message: str
    images: NotRequired[list[ImageContent]]
    streamingBehavior: NotRequired[StreamingBehavior]


@record(PARAMS)
class SteerCommand(TypedDict):
    """Queue a message for the next model call (after the current tool calls finish)."""

    id: NotRequired[RequestId]
    type: Literal["steer"]
    message: str
    images: NotRequired[list[ImageContent]]


@record(PARAMS)
class FollowUpCommand(TypedDict):
    """Queue a message for when the agent would otherwise stop."""

    id: NotRequired[RequestId]
    type: Literal["follow_up"]
    message: str
    images: NotRequired[list[ImageContent]]


@record(PARAMS)
class AbortCommand(TypedDict):
    """Abort the current run (model call, tools, retry wait)."""

    id: NotRequired[RequestId]
    type: Literal["abort"]


@record(PARAMS)
class ClearQueueCommand(TypedDict):
    """Take back every queued steering and follow-up message (answered with their texts)."""

    id: NotRequired[RequestId]
    type: Literal["clear_queue"]


@record(PARAMS)
class NewSessionCommand(TypedDict):
    """Start a fresh session with the same model and settings."""

    id: NotRequired[RequestId]
    type: Literal["new_session"]
    parentSession: NotRequired[
        Annotated[
            str, Doc("The session this one starts from (an id or a sessionFile), recorded as its parent.")
        ]
    ]


@record(PARAMS)
class GetStateCommand(TypedDict):
    id: NotRequired[RequestId]
    type: Literal["get_state"]


@record(PARAMS)
class GetMessagesCommand(TypedDict):
    id: NotRequired[RequestId]
    type: Literal["get_messages"]


@record(PARAMS)
class SetModelCommand(TypedDict):
    id: NotRequired[RequestId]
    type: Literal["set_model"]
    provider: str
    modelId: str


@record(PARAMS)
class CycleModelCommand(TypedDict):
    """Switch to the next usable model (``null`` data when there is only one)."""

    id: NotRequired[RequestId]
    type: Literal["cycle_model"]


@record(PARAMS)
class GetAvailableModelsCommand(TypedDict):
    id: NotRequired[RequestId]
    type: Literal["get_available_models"]


@record(PARAMS)
class SetThinkingLevelCommand(TypedDict):
    """Set the reasoning level; it is clamped to what the model supports."""

    id: NotRequired[RequestId]
    type: Literal["set_thinking_level"]
    level: ThinkingChoice


@record(PARAMS)
class CycleThinkingLevelCommand(TypedDict):
    id: NotRequired[RequestId]
    type: Literal["cycle_thinking_level"]


@record(PARAMS)
class GetAvailableThinkingLevelsCommand(TypedDict):
    """The thinking levels the current model accepts (``["off"]`` without reasoning)."""

    id: NotRequired[RequestId]
    type: Literal["get_available_thinking_levels"]


@record(PARAMS)
class SetSteeringModeCommand(TypedDict):
    id: NotRequired[RequestId]
    type: Literal["set_steering_mode"]
    mode: QueueMode


@record(PARAMS)
class SetFollowUpModeCommand(TypedDict):
    id: NotRequired[RequestId]
    type: Literal["set_follow_up_mode"]
    mode: QueueMode


@record(PARAMS)
class CompactCommand(TypedDict):
    """Summarise the older part of the conversation now."""

    id: NotRequired[RequestId]
    type: Literal["compact"]
    customInstructions: NotRequired[str]


@record(PARAMS)
class SetAutoCompactionCommand(TypedDict):
    id: NotRequired[RequestId]
    type: Literal["set_auto_compaction"]
    enabled: bool


@record(PARAMS)
class SetAutoRetryCommand(TypedDict):
    id: NotRequired[RequestId]
    type: Literal["set_auto_retry"]
    enabled: bool


@record(PARAMS)
class AbortRetryCommand(TypedDict):
    """Cancel the wait before an automatic retry."""

    id: NotRequired[RequestId]
    type: Literal["abort_retry"]


@record(PARAMS)
class BashCommand(TypedDict):
    """Run a shell command; its output joins the context of the next model call. The output
    streams meanwhile as ``bash_execution_update`` events carrying this command's ``id``."""

    id: NotRequired[RequestId]
    type: Literal["bash"]
    command: str
    excludeFromContext: NotRequired[
        Annotated[bool, Doc("Keep the output in the session but out of the model's context.")]
    ]


@record(PARAMS)
class AbortBashCommand(TypedDict):
    id: NotRequired[RequestId]
    type: Literal["abort_bash"]


@record(PARAMS)
class GetSessionStatsCommand(TypedDict):
    id: NotRequired[RequestId]
    type: Literal["get_session_stats"]


@record(PARAMS)
class ExportHtmlCommand(TypedDict):
    """Write the session as a self-contained HTML page."""

    id: NotRequired[RequestId]
    type: Literal["export_html"]
    outputPath: NotRequired[str]


@record(PARAMS)
class ExportCommand(TypedDict):
    """tether: write the session (every branch) as a JSONL export."""

    id: NotRequired[RequestId]
    type: Literal["export"]
    outputPath: NotRequired[str]


@record(PARAMS)
class SwitchSessionCommand(TypedDict):
    """Continue another stored session."""

    id: NotRequired[RequestId]
    type: Literal["switch_session"]
    sessionPath: Annotated[
        str,
        Doc(
            "The `sessionFile` `get_state` reported for it, or a session id (as listed by `tether sessions`)."
        ),
    ]


@record(PARAMS)
class ForkCommand(TypedDict):
    """Copy the session up to just before a user message into a new session and continue there."""

    id: NotRequired[RequestId]
    type: Literal["fork"]
    entryId: Annotated[str, Doc("A user message's entry id (see get_fork_messages).")]


@record(PARAMS)
class CloneCommand(TypedDict):
    """Copy the active branch, as it is now, into a new session and continue there."""

    id: NotRequired[RequestId]
    type: Literal["clone"]


@record(PARAMS)
class GetForkMessagesCommand(TypedDict):
    id: NotRequired[RequestId]
    type: Literal["get_fork_messages"]


@record(PARAMS)
class GetLastAssistantTextCommand(TypedDict):
    id: NotRequired[RequestId]
    type: Literal["get_last_assistant_text"]


@record(PARAMS)
class SetSessionNameCommand(TypedDict):
    id: NotRequired[RequestId]
    type: Literal["set_session_name"]
    name: str


@record(PARAMS)
class GetCommandsCommand(TypedDict):
    """Commands a prompt may invoke with ``/name`` (tether has none yet: an empty list)."""

    id: NotRequired[RequestId]
    type: Literal["get_commands"]


@record(PARAMS)
class GetEntriesCommand(TypedDict):
    """The session's entries in append order, every branch, in pi's entry shapes."""

    id: NotRequired[RequestId]
    type: Literal["get_entries"]
    since: NotRequired[Annotated[str, Doc("Only the entries appended after this entry id.")]]


@record(PARAMS)
class GetTreeCommand(TypedDict):
    """The session's entries as a tree of ``{entry, children, label?, labelTimestamp?}`` nodes."""

    id: NotRequired[RequestId]
    type: Literal["get_tree"]


MessageUpdateMode = Annotated[
    Literal["full", "delta"],
    Doc(
        "`delta` (default): pi 1.x's form, without the cumulative `message` and `partial` "
        "snapshots; `full`: as pi 0.73 sends it (the snapshots), with pi 1.x's fields added."
    ),
]


@record(PARAMS)
class SetEventFilterCommand(TypedDict):
    """tether: choose which events to receive and how big ``message_update`` frames are."""

    id: NotRequired[RequestId]
    type: Literal["set_event_filter"]
    exclude: NotRequired[Annotated[list[str], Doc("Event types not to send (responses always come).")]]
    messageUpdate: NotRequired[MessageUpdateMode]


@record(PARAMS)
class ShutdownCommand(TypedDict):
    """tether: abort any run, finish the session write, answer, and exit 0."""

    id: NotRequired[RequestId]
    type: Literal["shutdown"]


@record(PARAMS)
class ExtensionUiResponse(TypedDict):
    """The client's answer to an ``extension_ui_request`` dialog (``select``, ``confirm``,
    ``input``, ``editor``), matched by ``id``; ``cancelled`` dismisses it. Answered like a command (pi
    answers nothing; a pi client ignores the response)."""

    id: str
    type: Literal["extension_ui_response"]
    value: NotRequired[str]
    confirmed: NotRequired[bool]
    cancelled: NotRequired[bool]
