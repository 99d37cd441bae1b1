"""Transcript wire types of seed 000 (``reference/seeds/000-wire.txt``): content blocks, usage,
agent messages, streaming events.

Every type here is an *open record*: a ``TypedDict`` whose pydantic config keeps unknown keys
(``extra="allow"``), so a message written by a newer producer survives a decode/encode round trip
untouched, and one written by an older producer (missing fields the seed added later) still
decodes: ``tether.wire.codec`` checks only the union discriminator and the types of the fields
present. The required keys here are what producers must write (the type checker and the JSON
Schema bundle hold tether's own code to them). Values are plain dicts at run time: building a
message costs a dict literal, and encoding is plain JSON serialisation.

Validation is strict (no coercion), so a decoded value equals the value that was read.
The seed's ``number`` is ``int | float`` for the same reason: ``1`` must stay ``1``, not ``1.0``.
"""

from typing import Annotated, Any, Literal, NotRequired

from typing_extensions import TypedDict

from tether.wire.doc import Doc
from tether.wire.records import OPEN, Tag, record

Number = int | float
"""The seed's ``number``: JSON numbers keep their integer-ness through a round trip."""

JsonObject = dict[str, Any]
"""The seed's ``Record``: an arbitrary JSON object, passed through as it is."""

Attribution = Annotated[
    Literal["user", "agent"], Doc("Who initiated a message, for billing and attribution.")
]
StopReason = Literal["stop", "length", "toolUse", "error", "aborted"]


@record(OPEN)
class TextContent(TypedDict):
    type: Literal["text"]
    text: str
    textSignature: NotRequired[str]


@record(OPEN)
class ThinkingContent(TypedDict):
    type: Literal["thinking"]
    thinking: str
    thinkingSignature: NotRequired[str]
    itemId: NotRequired[str]
    narration: NotRequired[
        Annotated[
            bool,
            Doc(
                "Prose the model addressed to the user, returned by the provider as thinking; "
                "present it as answer text."
            ),
        ]
    ]


@record(OPEN)
class RedactedThinkingContent(TypedDict):
    type: Literal["redactedThinking"]
    data: str


@record(OPEN)
class ImageContent(TypedDict):
    """Inline image; also the shape hosts send with prompts."""

    type: Literal["image"]
    data: Annotated[str, Doc("Base64-encoded image bytes.")]
    mimeType: str
    detail: NotRequired[Literal["auto", "low", "high", "original"]]
    url: NotRequired[str]
    providerFile: NotRequired[JsonObject]


@record(OPEN)
class ToolCall(TypedDict):
    type: Literal["toolCall"]
    id: str
    name: str
    arguments: JsonObject
    thoughtSignature: NotRequired[str]
    intent: NotRequired[str]
    rawBlock: NotRequired[str]
    customWireName: NotRequired[str]
    providerMetadata: NotRequired[JsonObject]


# `from` is a Python keyword, so these two use the functional TypedDict form.
FallbackContent = record(OPEN)(
    TypedDict(
        "FallbackContent",
        {"type": Literal["fallback"], "from": JsonObject, "to": JsonObject},
    )
)
FallbackContent.__doc__ = (
    "Anthropic server-side fallback boundary marker; consumers other than Anthropic ignore it."
)


@record(OPEN)
class AnthropicServerToolContent(TypedDict):
    type: Literal["anthropicServerTool"]
    block: JsonObject


UserContent = Annotated[TextContent | ImageContent, Tag("type")]
MessageContent = Annotated[str | list[UserContent], Doc("Message content: plain text or content blocks.")]
AssistantContent = Annotated[
    TextContent
    | ThinkingContent
    | RedactedThinkingContent
    | FallbackContent
    | AnthropicServerToolContent
    | ImageContent
    | ToolCall,
    Tag("type"),
]


@record(OPEN)
class UsageCost(TypedDict):
    input: Number
    output: Number
    cacheRead: Number
    cacheWrite: Number
    total: Number


@record(OPEN)
class Usage(TypedDict):
    input: int
    output: int
    cacheRead: int
    cacheWrite: int
    totalTokens: int
    contextTokens: NotRequired[int]
    premiumRequests: NotRequired[Number]
    reasoningTokens: NotRequired[int]
    orchestration: NotRequired[JsonObject]
    cttl: NotRequired[JsonObject]
    server: NotRequired[JsonObject]
    credits: NotRequired[JsonObject]
    cost: UsageCost


ParentIrc = record(OPEN)(
    TypedDict(
        "ParentIrc",
        {
            "from": Annotated[str, Doc("Sending parent agent id.")],
            "body": Annotated[str, Doc("Message body as the parent wrote it.")],
        },
    )
)
ParentIrc.__doc__ = (
    "Parent-agent IRC message carried by a steer; render it instead of the model-facing `content` envelope."
)


@record(OPEN)
class UserMessage(TypedDict):
    role: Literal["user"]
    content: MessageContent
    parentIrc: NotRequired[ParentIrc]
    synthetic: NotRequired[bool]
    steering: NotRequired[bool]
    liveSteered: NotRequired[bool]
    historyRewriteAt: NotRequired[Number]
    attribution: NotRequired[Attribution]
    providerPayload: NotRequired[JsonObject]
    timestamp: Number


@record(OPEN)
class DeveloperMessage(TypedDict):
    role: Literal["developer"]
    content: MessageContent
    attribution: NotRequired[Attribution]
    synthetic: NotRequired[bool]
    userInitiated: NotRequired[bool]
    providerPayload: NotRequired[JsonObject]
    timestamp: Number


@record(OPEN)
class AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: list[AssistantContent]
    api: str
    provider: str
    model: str
    responseId: NotRequired[str]
    upstreamProvider: NotRequired[str]
    upstreamModel: NotRequired[str]
    usage: Usage
    stopReason: StopReason
    errorMessage: NotRequired[str]
    errorStatus: NotRequired[int]
    errorId: NotRequired[Number]
    providerPayload: NotRequired[JsonObject]
    timestamp: Number
    duration: NotRequired[Number]
    ttft: NotRequired[Number]
    completedAt: NotRequired[Number]


@record(OPEN)
class ToolResultMessage(TypedDict):
    role: Literal["toolResult"]
    toolCallId: str
    toolName: str
    content: list[UserContent]
    details: NotRequired[Any]
    isError: bool
    attribution: NotRequired[Attribution]
    prunedAt: NotRequired[Number]
    useless: NotRequired[bool]
    timestamp: Number


@record(OPEN)
class BashExecutionMessage(TypedDict):
    role: Literal["bashExecution"]
    command: str
    output: str
    exitCode: NotRequired[int]
    cancelled: bool
    truncated: bool
    images: NotRequired[list[ImageContent]]
    meta: NotRequired[JsonObject]
    timestamp: Number
    excludeFromContext: NotRequired[bool]


@record(OPEN)
class PythonExecutionMessage(TypedDict):
    role: Literal["pythonExecution"]
    code: str
    output: str
    exitCode: NotRequired[int]
    cancelled: bool
    truncated: bool
    meta: NotRequired[JsonObject]
    timestamp: Number
    excludeFromContext: NotRequired[bool]


@record(OPEN)
class CustomMessage(TypedDict):
    role: Literal["custom"]
    customType: str
    content: MessageContent
    display: bool
    details: NotRequired[Any]
    attribution: NotRequired[Attribution]
    timestamp: Number


@record(OPEN)
class HookMessage(TypedDict):
    role: Literal["hookMessage"]
    customType: str
    content: MessageContent
    display: bool
    details: NotRequired[Any]
    attribution: NotRequired[Attribution]
    timestamp: Number


@record(OPEN)
class BranchSummaryMessage(TypedDict):
    role: Literal["branchSummary"]
    summary: str
    fromId: str
    timestamp: Number


@record(OPEN)
class CompactionSummaryMessage(TypedDict):
    role: Literal["compactionSummary"]
    summary: str
    shortSummary: NotRequired[str]
    tokensBefore: int
    tokensAfter: NotRequired[int]
    method: NotRequired[str]
    providerPayload: NotRequired[JsonObject]
    timestamp: Number


@record(OPEN)
class FileMentionItem(TypedDict):
    path: str
    content: str
    lineCount: NotRequired[int]
    byteSize: NotRequired[int]
    skippedReason: NotRequired[Literal["tooLarge", "binary"]]
    image: NotRequired[ImageContent]


@record(OPEN)
class FileMentionMessage(TypedDict):
    role: Literal["fileMention"]
    files: list[FileMentionItem]
    timestamp: Number


AgentMessage = Annotated[
    UserMessage
    | DeveloperMessage
    | AssistantMessage
    | ToolResultMessage
    | BashExecutionMessage
    | PythonExecutionMessage
    | CustomMessage
    | HookMessage
    | BranchSummaryMessage
    | CompactionSummaryMessage
    | FileMentionMessage,
    Tag("role"),
    Doc("A transcript message, discriminated by `role`."),
]

Message = UserMessage | AssistantMessage | ToolResultMessage
"""What a provider understands: the three roles every LLM API has (pi-ai's ``Message``)."""


@record(OPEN)
class AssistantStartEvent(TypedDict):
    type: Literal["start"]
    partial: AssistantMessage


@record(OPEN)
class AssistantTextStartEvent(TypedDict):
    type: Literal["text_start"]
    contentIndex: int
    partial: AssistantMessage


@record(OPEN)
class AssistantTextDeltaEvent(TypedDict):
    type: Literal["text_delta"]
    contentIndex: int
    delta: str
    partial: AssistantMessage


@record(OPEN)
class AssistantTextEndEvent(TypedDict):
    type: Literal["text_end"]
    contentIndex: int
    content: str
    partial: AssistantMessage


@record(OPEN)
class AssistantThinkingStartEvent(TypedDict):
    type: Literal["thinking_start"]
    contentIndex: int
    partial: AssistantMessage


@record(OPEN)
class AssistantThinkingDeltaEvent(TypedDict):
    type: Literal["thinking_delta"]
    contentIndex: int
    delta: str
    partial: AssistantMessage


@record(OPEN)
class AssistantThinkingEndEvent(TypedDict):
    type: Literal["thinking_end"]
    contentIndex: int
    content: str
    partial: AssistantMessage


@record(OPEN)
class AssistantImageEndEvent(TypedDict):
    type: Literal["image_end"]
    contentIndex: int
    content: ImageContent
    partial: AssistantMessage


@record(OPEN)
class AssistantToolCallStartEvent(TypedDict):
    type: Literal["toolcall_start"]
    contentIndex: int
    partial: AssistantMessage


@record(OPEN)
class AssistantToolCallDeltaEvent(TypedDict):
    type: Literal["toolcall_delta"]
    contentIndex: int
    delta: str
    partial: AssistantMessage


@record(OPEN)
class AssistantToolCallEndEvent(TypedDict):
    type: Literal["toolcall_end"]
    contentIndex: int
    toolCall: ToolCall
    partial: AssistantMessage


@record(OPEN)
class AssistantDoneEvent(TypedDict):
    type: Literal["done"]
    reason: Literal["stop", "length", "toolUse"]
    message: AssistantMessage


@record(OPEN)
class AssistantErrorEvent(TypedDict):
    type: Literal["error"]
    reason: Literal["aborted", "error"]
    error: AssistantMessage


AssistantStreamingEvent = (
    AssistantStartEvent
    | AssistantTextStartEvent
    | AssistantTextDeltaEvent
    | AssistantTextEndEvent
    | AssistantThinkingStartEvent
    | AssistantThinkingDeltaEvent
    | AssistantThinkingEndEvent
    | AssistantImageEndEvent
    | AssistantToolCallStartEvent
    | AssistantToolCallDeltaEvent
    | AssistantToolCallEndEvent
)
"""Every event but the terminal two (``done``, ``error``): each carries ``partial``."""

AssistantMessageEvent = Annotated[
    AssistantStreamingEvent | AssistantDoneEvent | AssistantErrorEvent,
    Tag("type"),
    Doc("Streaming update for one assistant message, discriminated by `type`."),
]
