"""Tool definitions for the agent runtime (seed 001's ``AgentTool`` and ``AgentToolResult``).

A tool's parameters are either a pydantic model class or a JSON Schema dict. ``execute`` raises
to fail; the loop turns the exception into an error tool result (``isError: true``) with the
exception's message as text, exactly as the reference does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel

from tether.ai.abort import AbortSignal
from tether.wire import ImageContent, TextContent

ToolExecutionMode = Literal["sequential", "parallel"]
"""``sequential``: one call at a time; ``parallel``: prepared in order, executed concurrently."""

D = TypeVar("D")


@dataclass(slots=True)
class AgentToolResult(Generic[D]):
    """Final or partial result of a tool: content for the model, details for logs and UIs."""

    content: list[TextContent | ImageContent]
    details: D | None = None
    terminate: bool | None = None
    """Hint to stop after this tool batch; honoured only when every result of the batch sets it."""


ToolUpdate = Callable[[AgentToolResult[Any]], None]
"""Callback a tool calls with partial results while it runs (``tool_execution_update``)."""

ToolExecute = Callable[
    [str, Any, AbortSignal | None, ToolUpdate | None],
    Awaitable[AgentToolResult[Any]],
]
"""``execute(tool_call_id, params, signal, on_update)``; ``params`` are the validated arguments
(a pydantic model instance when ``parameters`` is a model class, else a dict)."""


@dataclass(slots=True)
class AgentTool:
    """A tool the agent can call."""

    name: str
    label: str
    description: str
    parameters: type[BaseModel] | dict[str, Any]
    execute: ToolExecute
    execution_mode: ToolExecutionMode | None = None
    """Per-tool override of the loop's execution mode; ``None`` follows the loop."""
    prepare_arguments: Callable[[Any], Any] | None = None
    """Compatibility shim applied to raw arguments before validation."""
    metadata: dict[str, Any] = field(default_factory=lambda: {})
