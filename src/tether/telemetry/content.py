"""Transcript content in the GenAI conventions' JSON shapes, for the opt-in content attributes.

Only used with ``Instrumentation.capture_content``. The conventions describe messages as
``{"role", "parts": [...]}`` with ``text``, ``reasoning``, ``tool_call``, ``tool_call_response``
and ``blob`` parts (``gen-ai-input-messages.json``/``gen-ai-output-messages.json``); spans carry
them as JSON strings, since span attributes cannot hold nested values.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tether.ai.types import Tool
from tether.telemetry.semconv import FINISH_REASONS
from tether.wire import AssistantMessage, ImageContent, Message, TextContent

Part = dict[str, Any]


def to_json(value: object) -> str:
    """Compact JSON, non-ASCII kept; values JSON cannot hold become their ``str``."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def finish_reason(message: AssistantMessage) -> str:
    reason = message["stopReason"]
    return FINISH_REASONS.get(reason, reason)


def input_messages(messages: Sequence[Message]) -> str:
    return to_json([_message(message) for message in messages])


def output_messages(message: AssistantMessage) -> str:
    return to_json([{**_message(message), "finish_reason": finish_reason(message)}])


def system_instructions(system_prompt: str) -> str:
    return to_json([{"type": "text", "content": system_prompt}])


def tool_definitions(tools: Sequence[Tool]) -> str:
    return to_json(
        [
            {
                "type": "function",
                "name": t["name"],
                "description": t["description"],
                "parameters": t["parameters"],
            }
            for t in tools
        ]
    )


def tool_result(content: Sequence[TextContent | ImageContent]) -> str:
    """A tool's result blocks: the text when it is all text, else the parts."""
    if all(block["type"] == "text" for block in content):
        return to_json("".join(block["text"] for block in content if block["type"] == "text"))
    return to_json([_user_part(block) for block in content])


def _message(message: Message) -> dict[str, Any]:
    if message["role"] == "user":
        content = message["content"]
        parts = [{"type": "text", "content": content}] if isinstance(content, str) else _user_parts(content)
        return {"role": "user", "parts": parts}
    if message["role"] == "toolResult":
        response = [_user_part(block) for block in message["content"]]
        return {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": message["toolCallId"], "response": response}],
        }
    parts: list[Part] = []
    for block in message["content"]:
        if block["type"] == "text":
            parts.append({"type": "text", "content": block["text"]})
        elif block["type"] == "thinking":
            parts.append({"type": "reasoning", "content": block["thinking"]})
        elif block["type"] == "toolCall":
            parts.append(
                {
                    "type": "tool_call",
                    "id": block["id"],
                    "name": block["name"],
                    "arguments": block["arguments"],
                }
            )
        elif block["type"] == "image":
            parts.append(_user_part(block))
        else:  # redacted thinking, provider-side tools, fallbacks: named, not copied
            parts.append({"type": block["type"]})
    return {"role": "assistant", "parts": parts}


def _user_parts(content: Sequence[TextContent | ImageContent]) -> list[Part]:
    return [_user_part(block) for block in content]


def _user_part(block: TextContent | ImageContent) -> Part:
    if block["type"] == "text":
        return {"type": "text", "content": block["text"]}
    return {"type": "blob", "modality": "image", "mime_type": block["mimeType"], "content": block["data"]}
