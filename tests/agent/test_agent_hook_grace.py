"""An async loop hook that never returns cannot hold an aborted run for ever: like a listener,
it is cancelled ``ABORT_GRACE`` after ``abort()`` and the run ends. Every one of these held the
run, and so ``abort()`` and ``close()``, for ever before. A generous ``asyncio.timeout`` makes a
hang fail the test instead of the suite."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from narrowing import as_assistant
from tether.agent import Agent, AgentToolResult, tool
from tether.testing.scripted import ScriptedModel, reply, tool_call

BOUND = 30


@tool
async def echo(text: str) -> AgentToolResult[Any]:
    """Say it back."""
    return AgentToolResult(content=[{"type": "text", "text": text}])


@pytest.mark.parametrize(
    "hook",
    ["transform_context", "convert_to_llm", "before_tool_call", "after_tool_call", "should_stop_after_turn"],
)
async def test_abort_cuts_a_hook_that_never_returns(hook: str) -> None:
    entered = asyncio.Event()
    cancelled: list[str] = []

    async def stuck(*_: Any) -> None:
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(hook)
            raise

    model = ScriptedModel([reply(tool_call("echo", {"text": "hi"})), reply("done"), reply("again")])
    subject = Agent(model=model.model, stream_fn=model, tools=[echo])
    setattr(subject, hook, stuck)  # every parameter is an attribute read at each run
    run = asyncio.ensure_future(subject.prompt("hi"))
    async with asyncio.timeout(BOUND):
        await entered.wait()
        subject.abort()
        added = await run
    assert cancelled == [hook] and not subject.is_streaming
    assert as_assistant(added[-1])["stopReason"] in ("error", "aborted")


async def test_a_hook_that_returns_within_the_grace_is_not_cut() -> None:
    model = ScriptedModel([reply("hello")])
    subject = Agent(model=model.model, stream_fn=model)

    async def slow(messages: list[Any], signal: object) -> list[Any]:
        subject.abort()
        await asyncio.sleep(0.05)
        return messages

    subject.transform_context = slow
    async with asyncio.timeout(BOUND):
        added = await subject.prompt("hi")
    last = as_assistant(added[-1])
    assert last["stopReason"] == "aborted" and "HookHungError" not in str(last.get("errorMessage"))
