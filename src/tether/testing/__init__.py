"""tether.testing: a scripted model for tests and demos, and the agent-loop conformance runner."""

from tether.testing.scripted import (
    NO_RESPONSE_LEFT,
    SCRIPTED_MODEL,
    ScriptedBlock,
    ScriptedModel,
    ScriptedRequest,
    ScriptedResponse,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    canonical_json,
    reply,
    text,
    thinking,
    tool_call,
)

__all__ = [
    "NO_RESPONSE_LEFT",
    "SCRIPTED_MODEL",
    "ScriptedBlock",
    "ScriptedModel",
    "ScriptedRequest",
    "ScriptedResponse",
    "TextBlock",
    "ThinkingBlock",
    "ToolCallBlock",
    "canonical_json",
    "reply",
    "text",
    "thinking",
    "tool_call",
]
