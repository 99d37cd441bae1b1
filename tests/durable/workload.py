"""The workload of the durable tests and benchmark: a scripted model and two tools that leave a
trace of every step they run in a counter file (``TETHER_TEST_COUNTER``), one line per event.

Used in-process and by ``tether worker --setup workload:setup`` processes. Each run: the model
calls ``work`` (not rerunnable: sleeps ``TETHER_TEST_TOOL_SECONDS``) and ``look`` (rerunnable) in
one batch, then answers with text streamed in chunks ``TETHER_TEST_STREAM_DELAY`` apart.
Lines: ``model-start|model-done PID SESSION TURN TIME``, ``tool-start|tool-done PID SESSION CALL TIME``.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from typing import Any

from tether.agent import tool
from tether.ai.event_stream import AssistantMessageEventStream
from tether.ai.types import Context, SimpleStreamOptions
from tether.durable import RERUN_KEY
from tether.session.agent_session import AgentSession
from tether.testing import ScriptedModel, reply, text, tool_call
from tether.wire import AssistantMessageEvent, ModelInfo, Usage

USAGE: Usage = {
    "input": 100,
    "output": 20,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 120,
    "cost": {"input": 0.0003, "output": 0.0003, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0006},
}
"""Each model call's usage."""


def _seconds(name: str) -> float:
    """The environment variable ``name``, or the number in the file its ``_FILE`` variant names
    (read at each call: a test changes it while the workers run)."""
    file = os.environ.get(name + "_FILE")
    if file:
        with open(file, encoding="utf-8") as f:
            return float(f.read())
    return float(os.environ.get(name) or 0)


def trace(kind: str, session: str, what: object) -> None:
    path = os.environ.get("TETHER_TEST_COUNTER")
    if path:
        with open(path, "a", encoding="utf-8") as f:  # one small O_APPEND write per line
            f.write(f"{kind} {os.getpid()} {session} {what} {time.time():.3f}\n")


def stream(model: ModelInfo, context: Context, options: SimpleStreamOptions | None = None) -> Any:
    session = (options.session_id if options is not None else None) or "-"
    turn = sum(1 for m in context["messages"] if m["role"] == "assistant")
    if turn == 0:
        script = reply(
            tool_call("work", {"what": "a"}, id=f"{session}-work"),
            tool_call("look", {"what": "b"}, id=f"{session}-look"),
        )
    else:
        script = reply(text("all ", "work ", "is ", "done"))
    inner = ScriptedModel([script], model)(model, context, options)
    signal = options.signal if options is not None else None
    return AssistantMessageEventStream(model, _slow(inner, session, turn), signal)


async def _slow(
    inner: AssistantMessageEventStream, session: str, turn: int
) -> AsyncIterator[AssistantMessageEvent]:
    delay = _seconds("TETHER_TEST_STREAM_DELAY")
    trace("model-start", session, turn)
    async for event in inner:
        if delay and event["type"] not in ("done", "error"):
            await asyncio.sleep(delay)
        if event["type"] == "done":
            event["message"]["usage"] = USAGE.copy()  # what `tether runs show` adds up
            trace("model-done", session, turn)
        yield event


@tool
async def work(what: str, tool_call_id: str) -> str:
    """Do some slow work with a side effect."""
    session = tool_call_id.rsplit("-", 1)[0]
    trace("tool-start", session, tool_call_id)
    await asyncio.sleep(_seconds("TETHER_TEST_TOOL_SECONDS"))
    trace("tool-done", session, tool_call_id)
    return f"worked on {what}"


@tool
async def look(what: str, tool_call_id: str) -> str:
    """Look at something (no side effect: may run again after a crash)."""
    session = tool_call_id.rsplit("-", 1)[0]
    trace("tool-start", session, tool_call_id)
    trace("tool-done", session, tool_call_id)
    return f"looked at {what}"


look.metadata[RERUN_KEY] = True


def setup(core: AgentSession) -> None:
    """``--setup workload:setup``: the scripted model and the two tools."""
    core.agent.stream_fn = stream
    core.agent.tools = [work, look]
