"""``AgentContext``, what a run works on, in a module of its own: the loop's types
(``tether.agent.types``) and the hook payloads (``tether.agent.hooks``) both name it, and the
hooks load only when a tool is called, so neither may hold it for the other."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tether.agent.tool import AgentTool
from tether.wire import AgentMessage


@dataclass(slots=True)
class AgentContext:
    """What a run works on: system prompt, transcript and tools. The loop copies it at the start."""

    system_prompt: str = ""
    messages: list[AgentMessage] = field(default_factory=lambda: [])
    tools: Sequence[AgentTool] = ()
    volatile_context: str | None = None
    """Content kept out of every cached prefix (placed after the last cache breakpoint)."""
