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

``run(..., semantic=True)`` is the *semantic floor*: the same loop plus only what the wire types
and the reference (pi-agent-core's ``agent-loop.js``, ``reference/seeds/001-agent-loop.txt``)
require of every agent loop: assistant messages with all their fields, a shallow copy of the
partial message in each ``message_start``/``message_update`` (pi's ``{ ...partialMessage }``),
tool events with ``toolName`` and ``isError``, the tool looked up by name, a copy of its
arguments checked against its schema (pi's ``validateToolArguments``), a tool result object
(``AgentToolResult``), result messages with their seven keys and a timestamp, and a poll for
steering messages before the first turn and after each, for follow-ups at the end. What tether
costs beyond this is what it does beyond the contract (hooks, telemetry, abort watching,
bookkeeping), not what the contract makes every loop pay.
"""

from __future__ import annotations

import json
import time
import types
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import Any

import jiter

from tether.ai.event_stream import empty_usage

Event = dict[str, Any]


@types.coroutine
def _pass() -> Generator[None]:
    """One pass through the event loop, as ``asyncio.sleep(0)`` makes it, without the call."""
    yield


_USAGE = empty_usage()  # shared by every message, as the reference's scripted model does


async def _stream(turn: int, calls: int, final: bool, semantic: bool) -> AsyncIterator[Event | None]:
    """One scripted reply: its events, and ``None`` where the stream waits for the loop; when
    ``semantic``, the message has every field of the wire's assistant message, as the reference's."""
    message: Event = {"role": "assistant", "content": [], "stopReason": "stop", "timestamp": 0}
    if semantic:
        message |= {"api": "scripted", "provider": "scripted", "model": "scripted", "usage": _USAGE}
        message["timestamp"] = int(time.time() * 1000)
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


class _ToolResult:
    """What a tool returns in the semantic floor, as ``AgentToolResult``: content and details."""

    __slots__ = ("content", "details")

    def __init__(self, content: list[Event], details: Event) -> None:
        self.content, self.details = content, details


async def _echo_result(params: dict[str, Any]) -> _ToolResult:
    return _ToolResult([{"type": "text", "text": params["text"]}], {})


def _validated(params: dict[str, Any]) -> dict[str, Any]:
    """The copy of a tool call's arguments checked against the echo tool's schema."""
    args = dict(params)
    if not isinstance(args.get("text"), str):
        raise ValueError("text: must be a string")
    return args


async def _no_messages() -> list[Event]:
    return []


TOOLS = {"echo": _echo_result}


async def _semantic_tools(tool_calls: list[Event], emit: Callable[[Event], Awaitable[None]]) -> list[Event]:
    """The semantic floor's tool batch: each call announced, its tool found by name and its
    arguments validated, then all awaited in order; a bad call becomes an error result."""
    started: list[tuple[Event, Awaitable[_ToolResult] | str]] = []  # a str: the call's error
    for call in tool_calls:
        name = call["name"]
        await emit(
            {
                "type": "tool_execution_start",
                "toolCallId": call["id"],
                "toolName": name,
                "args": call["arguments"],
            }
        )
        tool = TOOLS.get(name)
        try:
            started.append((call, tool(_validated(call["arguments"])) if tool else f"Tool {name} not found"))
        except ValueError as error:
            started.append((call, str(error)))
    results: list[Event] = []
    for call, running in started:
        if isinstance(running, str):
            output, is_error = _ToolResult([{"type": "text", "text": running}], {}), True
        else:
            output, is_error = await running, False
        await emit(
            {
                "type": "tool_execution_end",
                "toolCallId": call["id"],
                "toolName": call["name"],
                "result": output,
                "isError": is_error,
            }
        )
        results.append(
            {
                "role": "toolResult",
                "toolCallId": call["id"],
                "toolName": call["name"],
                "content": output.content,
                "details": output.details,
                "isError": is_error,
                "timestamp": int(time.time() * 1000),
            }
        )
    return results


async def run(turns: int, calls: int, semantic: bool = False) -> tuple[int, int]:
    """The workload once; the number of events and of messages in the transcript. ``semantic``:
    the semantic floor (see the module's docstring)."""
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
    if semantic:
        await _no_messages()  # steering typed before the first turn
    for turn in range(turns + 1):
        if turn:
            await emit({"type": "turn_start"})
        for_the_model += [m for m in messages[filtered:] if m["role"] in ("user", "assistant", "toolResult")]
        filtered = len(messages)
        message: Event = {}
        async for event in _stream(turn, calls, turn == turns, semantic):
            if event is None:
                await _pass()
            elif event["type"] == "start":
                message = event["partial"]
                messages.append(message)
                await emit({"type": "message_start", "message": message.copy() if semantic else message})
            elif event["type"] == "done":
                message = messages[-1] = event["message"]
                await emit({"type": "message_end", "message": message})
            else:
                view = message.copy() if semantic else message
                await emit({"type": "message_update", "assistantMessageEvent": event, "message": view})
        tool_calls = [block for block in message["content"] if block["type"] == "toolCall"]
        results: list[Event] = []
        if semantic:
            results = await _semantic_tools(tool_calls, emit)
        else:
            for call in tool_calls:
                await emit(
                    {"type": "tool_execution_start", "toolCallId": call["id"], "args": call["arguments"]}
                )
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
        if semantic:
            await _no_messages()  # steering typed during the turn
    if semantic:
        await _no_messages()  # follow-ups, asked once the agent would stop
    await emit({"type": "agent_end", "messages": messages})
    return events, len(messages)
