"""tether.testing: a scripted model for tests and demos, and the agent-loop conformance runner."""

# Names load on first use (module __getattr__): importing the package costs nothing until then,
# which keeps `tether -p` start-up fast. The TYPE_CHECKING imports give type checkers the names.
from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import lazy_exports

if TYPE_CHECKING:
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

_LAZY = {
    "NO_RESPONSE_LEFT": "tether.testing.scripted",
    "SCRIPTED_MODEL": "tether.testing.scripted",
    "ScriptedBlock": "tether.testing.scripted",
    "ScriptedModel": "tether.testing.scripted",
    "ScriptedRequest": "tether.testing.scripted",
    "ScriptedResponse": "tether.testing.scripted",
    "TextBlock": "tether.testing.scripted",
    "ThinkingBlock": "tether.testing.scripted",
    "ToolCallBlock": "tether.testing.scripted",
    "canonical_json": "tether.testing.scripted",
    "reply": "tether.testing.scripted",
    "text": "tether.testing.scripted",
    "thinking": "tether.testing.scripted",
    "tool_call": "tether.testing.scripted",
}
"""Where each lazily loaded public name lives."""


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())


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
