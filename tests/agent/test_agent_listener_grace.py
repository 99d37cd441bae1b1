"""A bare ``Agent`` bounds its listeners as a session does: after ``abort()``, one that never
returns is cancelled ``ABORT_GRACE`` later and the run ends on the failure; one that is merely
slow finishes. A generous ``asyncio.timeout`` makes a hang fail the test instead of the suite."""

from __future__ import annotations

import asyncio
from typing import Any

from tether.agent import Agent
from tether.agent.abort_grace import ABORT_GRACE
from tether.testing.scripted import ScriptedModel, reply

BOUND = 30


def agent(*answers: str) -> Agent:
    model = ScriptedModel([reply(a) for a in answers])
    return Agent(model=model.model, stream_fn=model)


async def test_abort_cuts_a_listener_that_never_returns() -> None:
    subject = agent("hello", "again")
    entered = asyncio.Event()
    cancelled: list[str] = []

    async def stuck(event: Any, signal: object) -> None:
        if (
            event["type"] == "message_end"
            and event["message"]["role"] == "assistant"
            and not entered.is_set()
        ):
            entered.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(event["type"])
                raise

    subject.subscribe(stuck)
    run = asyncio.ensure_future(subject.prompt("hi"))
    async with asyncio.timeout(BOUND):
        await entered.wait()
        subject.abort()
        await subject.wait_for_idle()
        added = await run
        assert cancelled == ["message_end"] and not subject.is_streaming
        assert "ListenerHungError" in str(added[-1].get("errorMessage"))
        again = await subject.prompt("and now?")  # the next run is not cut
    assert again[-1]["role"] == "assistant" and "again" in str(again[-1]["content"])


async def test_a_slow_listener_is_not_cut_before_the_bound() -> None:
    subject = agent("hello")
    finished: list[str] = []

    async def slow(event: Any, signal: object) -> None:
        if event["type"] == "message_end" and event["message"]["role"] == "assistant":
            subject.abort()
            await asyncio.sleep(ABORT_GRACE / 10)
            finished.append(event["type"])

    subject.subscribe(slow)
    async with asyncio.timeout(BOUND):
        added = await subject.prompt("hi")
    assert finished == ["message_end"]
    assert "hello" in str(added[1]["content"]) and not added[-1].get("errorMessage")
