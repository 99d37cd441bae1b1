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

Both floors run a reply's tool calls concurrently, as the benchmark runs tether and the reference
(``toolExecution: "parallel"``): pi's ``Promise.all`` starts each call at once, before the next,
and a call that waits lets the others run. Creating every call's coroutine and then awaiting
them in turn, as the floors did, ran none before the previous had ended (two tools sleeping 1 s
took 2 s) and priced a sequential loop. The least a Python program does for the same
(``_parallel``): step each call's coroutine at once, in a context of its own (as a task would
run it), and hand only a call that waits to the event loop, in a task; the ends of the calls
that ended at once go out in the reply's order, the others' as they end, the results in the
reply's order, as pi emits them. A task per call (``asyncio.gather``) made the floor 1.43x the
bytecodes of this design on P2, where every tool ends at once.

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

import asyncio
import contextvars
import json
import time
import types
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Generator
from typing import Any, TypeVar

import jiter

from tether.ai.event_stream import empty_usage

Event = dict[str, Any]
T = TypeVar("T")


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
    """The semantic floor's tool batch, as pi's parallel mode: each call announced, its tool found
    by name and its arguments validated (a bad call ends there, with an error result), then the
    good ones run concurrently (``_parallel``); the results in the reply's order."""
    failed: dict[int, _ToolResult] = {}
    prepared: list[Event] = []
    running: list[Coroutine[Any, Any, _ToolResult]] = []
    for index, call in enumerate(tool_calls):
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
            if tool is None:
                raise ValueError(f"Tool {name} not found")
            running.append(tool(_validated(call["arguments"])))
            prepared.append(call)
        except ValueError as error:
            failed[index] = _ToolResult([{"type": "text", "text": str(error)}], {})
            await emit(_semantic_end(call, failed[index], True))
    ran = iter(await _parallel(prepared, running, emit, _semantic_end))
    results: list[Event] = []
    for index, call in enumerate(tool_calls):
        is_error = index in failed
        output = failed[index] if is_error else next(ran)
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


def _semantic_end(call: Event, output: _ToolResult, is_error: bool = False) -> Event:
    return {
        "type": "tool_execution_end",
        "toolCallId": call["id"],
        "toolName": call["name"],
        "result": output,
        "isError": is_error,
    }


def _plain_end(call: Event, output: Event) -> Event:
    return {"type": "tool_execution_end", "toolCallId": call["id"], "result": output}


async def _parallel(
    tool_calls: list[Event],
    running: list[Coroutine[Any, Any, T]],
    emit: Callable[[Event], Awaitable[None]],
    end: Callable[[Event, T], Event],
) -> list[T]:
    """Run a batch's calls concurrently, as pi's ``Promise.all`` does: each call is stepped at
    once, before the next, and one that waits goes on in a task (``_finish``); the ends of the
    calls that ended at once are emitted in the reply's order, the others' as they end; the
    outputs come back in the reply's order."""
    outputs: list[Any] = [None] * len(running)
    rest: dict[int, asyncio.Task[None]] = {}
    for index, coro in enumerate(running):
        context = contextvars.copy_context()  # each call in its own, as a task runs it
        step = _into(outputs, index, coro)
        waiting = context.run(next, step.__await__(), _ENDED)
        if waiting is not _ENDED:  # it waits: the event loop runs the rest of it
            rest[index] = asyncio.get_running_loop().create_task(
                _finish(tool_calls[index], _resumed(step, context, waiting), outputs, index, emit, end)
            )
    for index, call in enumerate(tool_calls):
        if index not in rest:
            await emit(end(call, outputs[index]))
    if rest:
        await asyncio.gather(*rest.values())
    return outputs


async def _into(outputs: list[Any], index: int, running: Coroutine[Any, Any, Any]) -> None:
    """A call, its output put in its place: stepped by ``next``, a coroutine that returns
    ``None`` ends without the ``StopIteration`` that carries a value (stepping the tool's own
    coroutine with ``send`` and catching that instead cost P2 1.1% more instructions and 1.6%
    more CPU time, paired medians, for 0.9% fewer bytecodes)."""
    outputs[index] = await running


_ENDED: Any = object()
"""What ``next`` gives back for a call that ended as it started."""


async def _finish(
    call: Event,
    rest: Awaitable[None],
    outputs: list[Any],
    index: int,
    emit: Callable[[Event], Awaitable[None]],
    end: Callable[[Event, T], Event],
) -> None:
    """The task of a call that waited as it started: its end emitted once it has ended."""
    await rest
    await emit(end(call, outputs[index]))


@types.coroutine
def _resumed(
    step: Coroutine[Any, Any, None], context: contextvars.Context, waiting: Any
) -> Generator[Any, Any, None]:
    """The rest of a call that waited as it started, in its own context: its task waits for what
    it waits for, and what the task gets thrown (a cancellation) goes to it."""
    try:
        while True:
            try:
                sent = yield waiting
            except BaseException as error:
                waiting = context.run(step.throw, error)
            else:
                waiting = context.run(step.send, sent)
    except StopIteration:
        return


async def run(
    turns: int, calls: int, semantic: bool = False, listener: Callable[[Event], Awaitable[None]] | None = None
) -> tuple[int, int]:
    """The workload once; the number of events and of messages in the transcript. ``semantic``:
    the semantic floor (see the module's docstring). ``listener`` gets the events in place of
    the counting sink (the count is then 0): the tests read their order."""
    events = 0

    async def count(event: Event) -> None:
        nonlocal events
        events += 1

    emit = count if listener is None else listener

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
            outputs = await _parallel(
                tool_calls, [_echo(call["arguments"]) for call in tool_calls], emit, _plain_end
            )
            results = [
                {"role": "toolResult", "toolCallId": call["id"], "content": output["content"]}
                for call, output in zip(tool_calls, outputs, strict=True)
            ]
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
