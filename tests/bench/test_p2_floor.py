"""P2's floors run a reply's tool calls concurrently, as tether and pi-agent-core's parallel mode
do (the benchmark runs both in that mode), and emit their events in pi's order.

The first call waits for an event that the last one sets: a floor that awaits its calls one
after another never gets to the last, and times out. No assertion is about time."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import pytest

import _p2_floor

CALLS = 3
WAIT = 5.0
"""Seconds before a batch that never started its last call counts as deadlocked."""

LAST = f"turn 0 call {CALLS - 1}"
TOUCHED = contextvars.ContextVar[str]("touched", default="")


class Batch:
    """The calls' rendezvous: the first waits for the last; each sets a context variable that
    neither its siblings nor the loop may see."""

    def __init__(self) -> None:
        self.last_started = asyncio.Event()
        self.leaks: list[str] = []

    async def echo(self, text: str) -> str:
        if TOUCHED.get():
            self.leaks.append(f"{text} saw {TOUCHED.get()}")
        TOUCHED.set(text)
        if text == "turn 0 call 0":
            await self.last_started.wait()
        elif text == LAST:
            self.last_started.set()
        return text


def order(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The tool events and the result messages, by call id."""
    seen: list[tuple[str, str]] = []
    for event in events:
        if event["type"] in ("tool_execution_start", "tool_execution_end"):
            seen.append((event["type"], event["toolCallId"]))
        elif event["type"] == "message_start" and event["message"]["role"] == "toolResult":
            seen.append(("result", event["message"]["toolCallId"]))
    return seen


PI_ORDER = [
    *(("tool_execution_start", f"t0c{c}") for c in range(CALLS)),
    *(("tool_execution_end", f"t0c{c}") for c in (1, 2, 0)),
    *(("result", f"t0c{c}") for c in range(CALLS)),
]
"""What pi-agent-core 0.73.1's parallel mode emits for this batch: every call started in the
reply's order, the ends as the calls end (the two that ended as they started, in order, then
the first, which waited for the last), the results in the reply's order (the conformance trace
``parallel-updates-with-delays`` shows the same rule). Tether, on this batch, emits the three ends
in the reply's order."""


@pytest.mark.parametrize("semantic", [False, True], ids=["floor", "semantic floor"])
async def test_the_floors_run_a_batch_concurrently_in_pis_order(
    semantic: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = Batch()

    async def echo(params: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": await batch.echo(params["text"])}], "details": {}}

    async def echo_result(params: dict[str, Any]) -> Any:
        return _p2_floor._ToolResult([{"type": "text", "text": await batch.echo(params["text"])}], {})  # pyright: ignore[reportPrivateUsage]

    monkeypatch.setattr(_p2_floor, "_echo", echo)
    monkeypatch.setitem(_p2_floor.TOOLS, "echo", echo_result)
    events: list[dict[str, Any]] = []

    async def listen(event: dict[str, Any]) -> None:
        events.append(event)

    async with asyncio.timeout(WAIT):  # a floor awaiting its calls one by one deadlocks here
        await _p2_floor.run(1, CALLS, semantic, listen)
    assert order(events) == PI_ORDER
    assert batch.leaks == []
    assert TOUCHED.get() == ""
