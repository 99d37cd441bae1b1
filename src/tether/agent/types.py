"""Types of the agent loop (seed 001, ``reference/seeds/001-agent-loop.txt``): events, the context
it runs on, its configuration and hooks.

Events are plain dicts typed as ``TypedDict``s with the seed's camelCase keys, like every wire
value in tether: a listener can forward them to a UI or over RPC as they are. The context, the
configuration and the hook payloads are Python-side objects, so they are snake_case dataclasses.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from typing_extensions import TypedDict

from tether.agent.context import AgentContext as AgentContext
from tether.agent.tool import AgentTool, AgentToolResult, ToolExecutionMode
from tether.ai.abort import AbortSignal
from tether.ai.types import SimpleStreamOptions
from tether.telemetry import Instrumentation
from tether.wire import (
    AgentMessage,
    AssistantMessageEvent,
    Message,
    ModelInfo,
)
from tether.wire.events import (
    AgentStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    ToolExecutionStartEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from tether.wire.records import type_tags

if TYPE_CHECKING:
    from tether.agent.hooks import (
        AfterToolCallContext,
        AfterToolCallResult,
        BeforeToolCallContext,
        BeforeToolCallResult,
        TurnContext,
    )

# -- events -----------------------------------------------------------------------------------


class AgentEndEvent(TypedDict):
    """Last event of a run; ``messages`` are all the messages the run added."""

    type: Literal["agent_end"]
    messages: list[AgentMessage]


class MessageUpdateEvent(TypedDict):
    """Only for assistant messages while they stream."""

    type: Literal["message_update"]
    message: AgentMessage
    assistantMessageEvent: AssistantMessageEvent


class ToolExecutionUpdateEvent(TypedDict):
    type: Literal["tool_execution_update"]
    toolCallId: str
    toolName: str
    args: Any
    partialResult: AgentToolResult[Any]


class ToolExecutionEndEvent(TypedDict):
    """Parallel calls end in completion order, not in the order the model wrote them."""

    type: Literal["tool_execution_end"]
    toolCallId: str
    toolName: str
    result: AgentToolResult[Any]
    isError: bool


AgentEvent = (
    AgentStartEvent
    | AgentEndEvent
    | TurnStartEvent
    | TurnEndEvent
    | MessageStartEvent
    | MessageUpdateEvent
    | MessageEndEvent
    | ToolExecutionStartEvent
    | ToolExecutionUpdateEvent
    | ToolExecutionEndEvent
)

AGENT_EVENT_TYPES = type_tags(AgentEvent)
"""The loop's event vocabulary (its ``type`` values), declared by ``AgentEvent`` alone."""

Emit = Callable[[AgentEvent], Awaitable[None]]
"""The loop's event sink. The loop awaits it, so a slow listener slows the loop (back-pressure)."""

# -- configuration ----------------------------------------------------------------------------


LLM_ROLES = frozenset({"user", "assistant", "toolResult"})
"""The roles every provider understands."""


def default_convert_to_llm(messages: list[AgentMessage]) -> list[Message]:
    """Keep what every provider understands: user, assistant and tool-result messages."""
    return [m for m in messages if m["role"] in LLM_ROLES]  # pyright: ignore[reportReturnType]


MessagePoll = Callable[[], Awaitable[list[AgentMessage]]]


@dataclass(slots=True, kw_only=True)
class AgentLoopConfig:
    """How a run talks to the model and decides what to do next.

    Every hook is optional except ``model``. Hooks must not raise; if one does anyway, the run
    ends with an assistant error message naming the hook (tool hooks give an error tool result).
    """

    model: ModelInfo
    options: SimpleStreamOptions = field(default_factory=SimpleStreamOptions)
    """Passed to the stream function on every call (with the run's signal and resolved API key):
    thinking level (``reasoning``), service tier, temperature, session id, ..."""

    convert_to_llm: Callable[[list[AgentMessage]], list[Message] | Awaitable[list[Message]]] = (
        default_convert_to_llm
    )
    transform_context: (
        Callable[[list[AgentMessage], AbortSignal | None], list[AgentMessage] | Awaitable[list[AgentMessage]]]
        | None
    ) = None
    """Applied to the transcript before ``convert_to_llm`` on every model call (pruning, injection)."""
    get_system_prompt: Callable[[], str] | None = None
    """Resolved before every model call; overrides ``AgentContext.system_prompt``."""
    get_volatile_context: Callable[[], str | None] | None = None
    """Resolved before every model call; overrides ``AgentContext.volatile_context``."""
    get_tools: Callable[[], Sequence[AgentTool]] | None = None
    """Synchronous; resolved before every model call, overrides ``AgentContext.tools`` for that call
    and the tool calls it makes: a tool made available during a run (an MCP tool the model found
    with ``search_mcp_tools``) is declared and callable from the run's next model call on."""
    get_api_key: Callable[[str], str | Awaitable[str | None] | None] | None = None
    """Called with the model's provider before every model call (short-lived tokens)."""

    should_stop_after_turn: Callable[[TurnContext], bool | Awaitable[bool]] | None = None
    """After ``turn_end``: true ends the run before any queue is polled."""
    should_stop_before_turn: Callable[[], bool] | None = None
    """Synchronous; after a completed turn, before polling for more work. Never before the first turn."""
    get_steering_messages: MessagePoll | None = None
    """Polled before the first turn and after each turn; its messages go before the next model call."""
    get_follow_up_messages: MessagePoll | None = None
    """Polled when the agent would stop (no tool calls left, no steering)."""
    get_continuation_messages: (
        Callable[[TurnContext, AbortSignal | None], Awaitable[list[AgentMessage]]] | None
    ) = None
    """Polled when follow-ups came back empty: host-owned continuation (explicit follow-ups win)."""

    tool_execution: ToolExecutionMode = "parallel"
    before_tool_call: (
        Callable[[BeforeToolCallContext, AbortSignal | None], Awaitable[BeforeToolCallResult | None]] | None
    ) = None
    after_tool_call: (
        Callable[[AfterToolCallContext, AbortSignal | None], Awaitable[AfterToolCallResult | None]] | None
    ) = None

    instrumentation: Instrumentation | None = None
    """Record the run as OpenTelemetry spans and metrics; ``None``: as ``tether.telemetry.instrument``
    set for the process, if it did."""
