"""Message builders and an echo tool for the session tests (the scripted model is
``tether.testing.scripted``)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, cast

from tether.agent import AgentTool, AgentToolResult
from tether.session import Session, SessionManager
from tether.store import SessionLockedError
from tether.wire import AgentMessage, ModelInfo, TextContent

LOCK_RELEASE_TIMEOUT = 10.0
"""How long a dead writer's lock may outlive it: PostgreSQL frees it when the server notices the
closed connection, which takes a moment on a loaded machine. A live holder is never waited out."""

MODEL: ModelInfo = {
    "id": "scripted-1",
    "name": "Scripted",
    "api": "scripted",
    "provider": "test",
    "baseUrl": "http://127.0.0.1",
    "reasoning": False,
    "input": ["text"],
    "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0},
    "contextWindow": 100_000,
    "maxTokens": 8_000,
}


def user(text: str, **extra: Any) -> AgentMessage:
    return cast(AgentMessage, {"role": "user", "content": text, "timestamp": 1_700_000_000_000, **extra})


def assistant(
    *blocks: Mapping[str, Any], stop: str | None = None, cost: float = 0.0, tokens: int = 0
) -> AgentMessage:
    calls = any(b.get("type") == "toolCall" for b in blocks)
    return cast(
        AgentMessage,
        {
            "role": "assistant",
            "content": list(blocks),
            "api": "scripted",
            "provider": "test",
            "model": "scripted-1",
            "usage": {
                "input": tokens,
                "output": 0,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": tokens,
                "cost": {"input": cost, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost},
            },
            "stopReason": stop or ("toolUse" if calls else "stop"),
            "timestamp": 1_700_000_000_001,
        },
    )


def text(t: str) -> TextContent:
    return {"type": "text", "text": t}


def call(call_id: str, name: str = "read", **args: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": args}


def result(call_id: str, out: str, name: str = "read", is_error: bool = False) -> AgentMessage:
    return cast(
        AgentMessage,
        {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": name,
            "content": [{"type": "text", "text": out}],
            "isError": is_error,
            "timestamp": 1_700_000_000_002,
        },
    )


def open_when_free(manager: SessionManager, session_id: str) -> Session:
    """Open a session for writing once its dead writer's lock is gone (see LOCK_RELEASE_TIMEOUT)."""
    deadline = time.monotonic() + LOCK_RELEASE_TIMEOUT
    while True:
        try:
            return manager.open(session_id)
        except SessionLockedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


async def _echo(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
    return AgentToolResult(content=[{"type": "text", "text": params["text"]}])


ECHO = AgentTool(
    name="echo",
    label="Echo",
    description="Echo the text",
    parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    execute=_echo,
)
"""A tool answering with the text it was given."""
