"""``until_abort_grace``, the race between a tool's end and the run's abort that every tool call of
a run with a signal (every ``Agent`` run) goes through: the tool's result when it ends, its answer
to the abort when it gives one within the grace, its cancellation when the caller is cancelled,
and nothing left listening on the signal afterwards. (Abandoning a tool that ignores the abort
is covered end to end in tests/session/test_session_abort.py.)"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tether.agent import AgentToolResult
from tether.agent.tool_execution import until_abort_grace
from tether.ai.abort import AbortController


def _result(text: str) -> AgentToolResult[Any]:
    return AgentToolResult(content=[{"type": "text", "text": text}], details={})


async def test_a_tool_that_ends_gives_its_result_and_leaves_no_listener() -> None:
    controller = AbortController()

    async def tool() -> AgentToolResult[Any]:
        await asyncio.sleep(0)
        return _result("done")

    result = await until_abort_grace(tool(), controller.signal)
    assert result.content == [{"type": "text", "text": "done"}]
    assert controller.signal._listeners == []  # pyright: ignore[reportPrivateUsage]


async def test_a_tool_that_answers_the_abort_gives_its_answer() -> None:
    controller = AbortController()
    started = asyncio.Event()

    async def tool() -> AgentToolResult[Any]:
        started.set()
        await controller.signal.wait()
        return _result("stopped")

    racing = asyncio.ensure_future(until_abort_grace(tool(), controller.signal))
    await started.wait()
    controller.abort()
    result = await racing
    assert result.content == [{"type": "text", "text": "stopped"}]


async def test_cancelling_the_caller_cancels_the_tool() -> None:
    controller = AbortController()
    started = asyncio.Event()
    outcome: list[str] = []

    async def tool() -> AgentToolResult[Any]:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            outcome.append("cancelled")
            raise
        return _result("never")

    racing = asyncio.ensure_future(until_abort_grace(tool(), controller.signal))
    await started.wait()
    racing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await racing
    await asyncio.sleep(0)  # the tool's task takes its cancellation on the next pass
    assert outcome == ["cancelled"]
    assert controller.signal._listeners == []  # pyright: ignore[reportPrivateUsage]
