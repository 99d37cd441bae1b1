"""Narrowing for tests that know which member of a union they hold.

A transcript is a list of ``AgentMessage`` (a union over roles) and content is a list of blocks
(text, images, tool calls ...), so the type checker cannot follow ``message["stopReason"]`` or
``block["text"]`` where the test knows it holds an assistant message or a text block. These say so;
each checks what it claims, so a wrong guess fails on its line, showing the value, rather than as
a ``KeyError`` further on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from typing_extensions import TypeIs

from tether.wire import (
    AgentMessage,
    AssistantContent,
    AssistantMessage,
    AssistantMessageEvent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
)


def as_assistant(message: AgentMessage) -> AssistantMessage:
    assert message["role"] == "assistant", message
    return message


def as_tool_result(message: AgentMessage) -> ToolResultMessage:
    assert message["role"] == "toolResult", message
    return message


def done_message(event: AssistantMessageEvent) -> AssistantMessage:
    """The final message of a stream's last event, which the test knows is ``done``."""
    assert event["type"] == "done", event
    return event["message"]


def block_text(block: AssistantContent | UserContent) -> str:
    """The text of a block the test knows is a text block."""
    assert block["type"] == "text", block
    return block["text"]


def as_tool_call(block: AssistantContent) -> ToolCall:
    assert block["type"] == "toolCall", block
    return block


def as_thinking(block: AssistantContent) -> ThinkingContent:
    assert block["type"] == "thinking", block
    return block


def error_text(message: AssistantMessage) -> str:
    """The ``errorMessage`` of an answer the test knows carries one (it failed or was aborted)."""
    assert "errorMessage" in message, message
    return message["errorMessage"]


def is_json_object(value: object) -> TypeIs[dict[str, Any]]:
    """``isinstance(value, dict)`` for parsed JSON, whose objects have string keys (a bare
    isinstance leaves the checker with a dict of unknown keys and values)."""
    return isinstance(value, dict)


def is_json_array(value: object) -> TypeIs[list[Any]]:
    """``isinstance(value, list)`` for parsed JSON, whose arrays hold any JSON value (a bare
    isinstance leaves the checker with a list of unknown items)."""
    return isinstance(value, list)


def content_of(message: AgentMessage) -> object:
    """The content of a message the test knows has one (a user's, an assistant's, a tool
    result's ...; not a bash execution's or a summary's)."""
    assert "content" in message, message
    fields: Mapping[str, object] = message
    return fields["content"]
