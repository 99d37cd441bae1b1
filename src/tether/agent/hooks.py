"""What the tool-call and turn hooks of ``AgentLoopConfig`` receive and return.

Apart from ``types`` because a run that calls no tool and sets no turn hook never builds one:
these classes load with the first tool call or hook, not with every start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tether.agent.context import AgentContext
from tether.agent.tool import AgentToolResult
from tether.wire import AgentMessage, AssistantMessage, ImageContent, TextContent, ToolCall, ToolResultMessage


@dataclass(slots=True)
class BeforeToolCallContext:
    """What ``before_tool_call`` sees: the call after its arguments were validated."""

    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: Any
    context: AgentContext


@dataclass(slots=True)
class BeforeToolCallResult:
    """``block=True`` stops the call; ``reason`` becomes the text of its error result."""

    block: bool = False
    reason: str | None = None


@dataclass(slots=True)
class AfterToolCallContext:
    """What ``after_tool_call`` sees: the executed result before any override."""

    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: Any
    result: AgentToolResult[Any]
    is_error: bool
    context: AgentContext


@dataclass(slots=True)
class AfterToolCallResult:
    """Field-by-field override of an executed result; ``None`` keeps the original field."""

    content: list[TextContent | ImageContent] | None = None
    details: Any = None
    is_error: bool | None = None
    terminate: bool | None = None


@dataclass(slots=True)
class TurnContext:
    """What ``should_stop_after_turn`` and ``get_continuation_messages`` see after a turn."""

    message: AssistantMessage
    tool_results: list[ToolResultMessage]
    context: AgentContext
    """The context after the turn's assistant message and tool results were appended."""
    new_messages: list[AgentMessage]
    """Messages this run added so far (prompts included; prior context excluded)."""
