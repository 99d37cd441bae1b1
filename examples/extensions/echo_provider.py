"""A custom provider: ``--model echo/echo-1`` answers with the last thing the user said.

A provider is a list of models and a stream function, the agent loop's model call: it returns an
``AssistantMessageEventStream`` and never raises (a failure ends the stream as ``error``). A real
one would call a service here; this one needs no network, which makes it handy for trying out
the rest of tether offline.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from tether.ai.event_stream import AssistantMessageEventStream, new_assistant_message
from tether.ai.types import Context, SimpleStreamOptions
from tether.session import ExtensionAPI
from tether.wire import AssistantMessageEvent, ModelInfo, TextContent

ECHO: ModelInfo = {
    "id": "echo-1",
    "name": "Echo",
    "api": "echo",
    "provider": "echo",
    "baseUrl": "",
    "reasoning": False,
    "input": ["text"],
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    "contextWindow": 32_000,
    "maxTokens": 4_000,
}


def last_user_text(context: Context) -> str:
    for message in reversed(context["messages"]):
        if message["role"] == "user":
            content: Any = message["content"]
            if isinstance(content, str):
                return content
            return "".join(part.get("text", "") for part in content)
    return ""


def echo(
    model: ModelInfo, context: Context, options: SimpleStreamOptions | None
) -> AssistantMessageEventStream:
    async def events() -> AsyncIterator[AssistantMessageEvent]:
        message = new_assistant_message(model)
        text = f"echo: {last_user_text(context)}"
        part: TextContent = {"type": "text", "text": ""}
        message["content"].append(part)
        yield {"type": "start", "partial": message}
        yield {"type": "text_start", "contentIndex": 0, "partial": message}
        for word in text.split(" "):
            delta = word if not part["text"] else f" {word}"
            part["text"] += delta
            yield {"type": "text_delta", "contentIndex": 0, "delta": delta, "partial": message}
        yield {"type": "text_end", "contentIndex": 0, "content": part["text"], "partial": message}
        yield {"type": "done", "reason": "stop", "message": message}

    return AssistantMessageEventStream(model, events())


def setup(api: ExtensionAPI) -> None:
    api.register_provider("echo", [ECHO], echo)
