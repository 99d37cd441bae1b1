"""The opt-in content attributes: tether messages in the GenAI conventions' message shapes."""

from __future__ import annotations

import json

from tether.ai.event_stream import new_assistant_message
from tether.telemetry import content
from tether.testing.scripted import SCRIPTED_MODEL
from tether.wire import AssistantMessage, Message


def test_every_kind_of_block_has_its_part() -> None:
    answer: AssistantMessage = new_assistant_message(SCRIPTED_MODEL)
    answer["content"] = [
        {"type": "thinking", "thinking": "let me look"},
        {"type": "redactedThinking", "data": "opaque"},
        {"type": "text", "text": "Here:"},
        {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.png"}},
    ]
    answer["stopReason"] = "toolUse"
    messages: list[Message] = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            ],
            "timestamp": 0,
        },
        answer,
        {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "read",
            "content": [{"type": "text", "text": "a cat"}],
            "isError": False,
            "timestamp": 0,
        },
    ]
    assert json.loads(content.input_messages(messages)) == [
        {
            "role": "user",
            "parts": [
                {"type": "text", "content": "what is this?"},
                {"type": "blob", "modality": "image", "mime_type": "image/png", "content": "iVBORw0KGgo="},
            ],
        },
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": "let me look"},
                {"type": "redactedThinking"},  # named, never copied
                {"type": "text", "content": "Here:"},
                {"type": "tool_call", "id": "c1", "name": "read", "arguments": {"path": "a.png"}},
            ],
        },
        {
            "role": "tool",
            "parts": [
                {"type": "tool_call_response", "id": "c1", "response": [{"type": "text", "content": "a cat"}]}
            ],
        },
    ]
    assert json.loads(content.output_messages(answer))[0]["finish_reason"] == "tool_call"


def test_a_plain_text_user_message_and_tool_results() -> None:
    assert json.loads(content.input_messages([{"role": "user", "content": "hi", "timestamp": 0}])) == [
        {"role": "user", "parts": [{"type": "text", "content": "hi"}]}
    ]
    text_only = content.tool_result([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])
    assert json.loads(text_only) == "ab"
    with_image = content.tool_result(
        [{"type": "text", "text": "see"}, {"type": "image", "data": "AA==", "mimeType": "image/gif"}]
    )
    assert json.loads(with_image) == [
        {"type": "text", "content": "see"},
        {"type": "blob", "modality": "image", "mime_type": "image/gif", "content": "AA=="},
    ]
