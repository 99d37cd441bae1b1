"""P2's Python floor: the least a Python program does for the agent-loop benchmark's workload.

The same 200 turns of 3 tool calls and a closing text, the same 5,012 events counted in an
awaited sink, and the same passes through the event loop: the scripted model yields to the loop
before each streamed block, each delta and the end, as tether's and the reference's do (8 passes
a tool turn). Nothing an agent loop needs beyond that: no argument validation, no hooks, no
abort checks, no steering queue, no copies of the partial message. The transcript is filtered
for the model incrementally, as a minimal loop would: only the messages appended since the
previous call are read (re-filtering the whole transcript before every call made this "floor"
quadratic, and dearer than a loop that avoids it). Tether's distance to this
floor is what its loop costs; the floor's distance to the reference is what the language and
its event loop cost on this workload, whatever the loop does.
"""

from __future__ import annotations

import json
import types
from collections.abc import AsyncIterator, Generator
from typing import Any

import jiter

Event = dict[str, Any]


@types.coroutine
def _pass() -> Generator[None]:
    """One pass through the event loop, as ``asyncio.sleep(0)`` makes it, without the call."""
    yield


async def _stream(turn: int, calls: int, final: bool) -> AsyncIterator[Event | None]:
    """One scripted reply: its events, and ``None`` where the stream waits for the loop."""
    message: Event = {"role": "assistant", "content": [], "stopReason": "stop", "timestamp": 0}
    yield None
    yield {"type": "start", "partial": message}
    if final:
        yield None
        part = {"type": "text", "text": ""}
        message["content"].append(part)
        yield {"type": "text_start", "contentIndex": 0, "partial": message}
        for chunk in ("all", " done"):
            yield None
            part["text"] += chunk
            yield {"type": "text_delta", "contentIndex": 0, "delta": chunk, "partial": message}
        yield {"type": "text_end", "contentIndex": 0, "content": part["text"], "partial": message}
    else:
        for c in range(calls):
            yield None
            call: Event = {"type": "toolCall", "id": f"t{turn}c{c}", "name": "echo", "arguments": {}}
            message["content"].append(call)
            yield {"type": "toolcall_start", "contentIndex": c, "partial": message}
            yield None
            delta = json.dumps({"text": f"turn {turn} call {c}"}, separators=(",", ":"))
            call["arguments"] = jiter.from_json(delta.encode())
            yield {"type": "toolcall_delta", "contentIndex": c, "delta": delta, "partial": message}
            yield {"type": "toolcall_end", "contentIndex": c, "toolCall": call, "partial": message}
        message["stopReason"] = "toolUse"
    yield None
    yield {"type": "done", "reason": message["stopReason"], "message": message}


async def _echo(params: dict[str, Any]) -> Event:
    return {"content": [{"type": "text", "text": params["text"]}], "details": {}}


async def run(turns: int, calls: int) -> tuple[int, int]:
    """The workload once; the number of events and of messages in the transcript."""
    events = 0

    async def emit(event: Event) -> None:
        nonlocal events
        events += 1

    prompt: Event = {"role": "user", "content": "go", "timestamp": 0}
    messages = [prompt]
    for_the_model: list[Event] = []
    filtered = 0  # messages[:filtered] are already in for_the_model
    for event in ({"type": "agent_start"}, {"type": "turn_start"}):
        await emit(event)
    await emit({"type": "message_start", "message": prompt})
    await emit({"type": "message_end", "message": prompt})
    for turn in range(turns + 1):
        if turn:
            await emit({"type": "turn_start"})
        for_the_model += [m for m in messages[filtered:] if m["role"] in ("user", "assistant", "toolResult")]
        filtered = len(messages)
        message: Event = {}
        async for event in _stream(turn, calls, final=turn == turns):
            if event is None:
                await _pass()
            elif event["type"] == "start":
                message = event["partial"]
                messages.append(message)
                await emit({"type": "message_start", "message": message})
            elif event["type"] == "done":
                message = messages[-1] = event["message"]
                await emit({"type": "message_end", "message": message})
            else:
                await emit({"type": "message_update", "assistantMessageEvent": event, "message": message})
        tool_calls = [block for block in message["content"] if block["type"] == "toolCall"]
        for call in tool_calls:
            await emit({"type": "tool_execution_start", "toolCallId": call["id"], "args": call["arguments"]})
        results: list[Event] = []
        for call, running in [
            (call, _echo(call["arguments"])) for call in tool_calls
        ]:  # all started, then awaited
            output = await running
            await emit({"type": "tool_execution_end", "toolCallId": call["id"], "result": output})
            results.append({"role": "toolResult", "toolCallId": call["id"], "content": output["content"]})
        for result in results:
            messages.append(result)
            await emit({"type": "message_start", "message": result})
            await emit({"type": "message_end", "message": result})
        await emit({"type": "turn_end", "message": message, "toolResults": results})
    await emit({"type": "agent_end", "messages": messages})
    return events, len(messages)
