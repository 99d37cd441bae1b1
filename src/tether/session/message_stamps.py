"""pi 1.6's timing and thinking fields, stamped on the messages a run adds as each one ends.

pi 1.6 records on every reply how long it took (``durationMs``, from the request until the reply
ended) and the thinking level the agent asked for (``thinkingLevel``), and on every tool result
how long the tool ran (``durationMs``). A pi client shows them, and they are stored with the
message, so the session adds them before the message is stored and passed on. Messages are open
records (seed 000 pins the fields it names; these are extra keys, declared by ``MessageStamps``):
a reader that does not know them keeps them untouched.

A reply's duration is the provider's own measure (``duration``, from the request's start) when it
made one, else the time from the reply's ``message_start``; a tool result's is the time from its
call's ``tool_execution_start`` (approval included). ``thinkingLevel`` is the session's level in
effect, ``off`` for a model without reasoning, as pi says it.
"""

from __future__ import annotations

import time
from typing import Any

from typing_extensions import TypedDict


class MessageStamps(TypedDict, total=False):
    """The keys this module adds to a message (pi 1.6's names)."""

    durationMs: int
    """Assistant and tool-result messages: milliseconds the reply or the tool call took."""
    thinkingLevel: str
    """Assistant messages: the thinking level the reply was asked for."""


class MessageClock:
    """Remembers when the current reply and each running tool call started (one per session)."""

    __slots__ = ("_reply", "_tools")

    def __init__(self) -> None:
        self._reply: float | None = None
        self._tools: dict[str, float] = {}

    def started(self, message: Any, thinking_level: str) -> None:
        """At ``message_start``: a reply starts its clock, unless it is already over (it failed
        before anything streamed); that one and a tool result are whole from the start, so
        stamped at once, as pi's are."""
        if message["role"] == "assistant" and message.get("stopReason") not in ("error", "aborted"):
            self._reply = time.monotonic()
        elif message["role"] in ("assistant", "toolResult"):
            self.stamp(message, thinking_level)

    def tool_started(self, call_id: str) -> None:
        self._tools[call_id] = time.monotonic()

    def stamp(self, message: Any, thinking_level: str) -> None:
        """Add pi 1.6's fields to ``message`` (a finished message), unless it has them."""
        role = message["role"]
        if role == "assistant":
            if "durationMs" not in message:
                duration = message.get("duration")
                if isinstance(duration, int | float):
                    message["durationMs"] = round(duration)
                elif self._reply is not None:
                    message["durationMs"] = round((time.monotonic() - self._reply) * 1000)
            message.setdefault("thinkingLevel", thinking_level)
            self._reply = None
        elif role == "toolResult":
            started = self._tools.pop(message.get("toolCallId"), None)
            if started is not None and "durationMs" not in message:
                message["durationMs"] = round((time.monotonic() - started) * 1000)
