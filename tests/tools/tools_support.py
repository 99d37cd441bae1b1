"""Helpers shared by the tools tests (a plain module: conftest files cannot be imported)."""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass, field
from typing import Any

from tether.agent.tool import AgentTool, AgentToolResult, ToolUpdate
from tether.agent.validation import validate_tool_arguments
from tether.ai.abort import AbortSignal


async def call(
    tool: AgentTool,
    signal: AbortSignal | None = None,
    on_update: ToolUpdate | None = None,
    **arguments: Any,
) -> AgentToolResult[Any]:
    """Validate ``arguments`` like the agent loop does, then execute the tool."""
    params = validate_tool_arguments(tool, tool.name, arguments)
    return await tool.execute("call-1", params, signal, on_update)


def text_of(result: AgentToolResult[Any]) -> str:
    return "\n".join(block["text"] for block in result.content if block["type"] == "text")


def details_of(result: AgentToolResult[Any]) -> Any:
    """The details of a result the test knows has them (the tools here always set them)."""
    assert result.details is not None, result
    return result.details


def answer_hello(server: socket.socket, stop: threading.Event) -> None:
    """Answer every connection to ``server`` (its accept timing out now and then) with 'hello'
    until ``stop`` is set: the stand-in for a service outside the sandbox."""
    while not stop.is_set():
        try:
            connection, _ = server.accept()
        except TimeoutError:
            continue
        with connection:
            connection.sendall(b"hello")


@dataclass
class Names:
    """What the ``names`` resolver answers: each lookup of a name in ``answers`` takes its next
    answer (a list of addresses), the last one repeating, and is noted in ``looked_up``."""

    answers: dict[str, list[list[str]]] = field(default_factory=dict[str, list[list[str]]])
    looked_up: list[str] = field(default_factory=list[str])
