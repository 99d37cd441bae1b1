"""Helpers shared by the agent tests (a uniquely named module: test folders have no __init__)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from tether.agent import AgentEvent
from tether.testing.conformance import normalize_event, summarize_message
from tether.wire import AgentMessage

OWN_CONFORMANCE = Path(__file__).resolve().parent
"""tether's own scenarios (``scenarios/``) and the reference's traces for them (``traces/``)."""


class Recorder:
    """An emit sink that keeps every event."""

    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    async def __call__(self, event: AgentEvent) -> None:
        self.events.append(event)

    @property
    def types(self) -> list[str]:
        return [event["type"] for event in self.events]

    def trace(self, result: list[AgentMessage]) -> dict[str, Any]:
        return {
            "events": [normalize_event(e) for e in self.events],
            "result": [summarize_message(m) for m in result],
        }


def check_invariants(trace: dict[str, Any]) -> None:
    events = trace["events"]
    types = [event["type"] for event in events]
    assert types[0] == "agent_start"
    assert types[-1] == "agent_end", "the run must end with agent_end"
    assert types.count("agent_end") == 1, "nothing may follow agent_end"
    assert types.count("turn_start") == types.count("turn_end")
    assert types.count("message_start") == types.count("message_end")
    starts = Counter(e["toolCallId"] for e in events if e["type"] == "tool_execution_start")
    ends = Counter(e["toolCallId"] for e in events if e["type"] == "tool_execution_end")
    assert starts == ends, "every started tool call ends"

    result = trace["result"]
    assert events[-1]["messages"] == result
    answered = Counter(m["toolCallId"] for m in result if m["role"] == "toolResult")
    for message in result:
        if message["role"] != "assistant" or message["stopReason"] in ("error", "aborted"):
            continue
        for block in message["content"]:
            if block["type"] == "toolCall":
                assert answered[block["id"]] == 1, f"tool call {block['id']} needs exactly one result"
