"""A bare ``Agent`` bounds its listeners as a session does: after ``abort()``, one that never
returns is cancelled ``ABORT_GRACE`` later and the run ends on the failure; one that is merely
slow finishes. A generous ``asyncio.timeout`` makes a hang fail the test instead of the suite."""

from __future__ import annotations

import asyncio
from typing import Any

from narrowing import content_of
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
    assert "hello" in str(content_of(added[1])) and not added[-1].get("errorMessage")


async def test_a_listener_still_waiting_after_a_nested_one_returned_is_cut_too() -> None:
    """A listener may await something that delivers events itself (a session's compaction):
    the abort arms the innermost wait; once that one returns, the listener around it is bounded
    from then on too, not left unbounded."""
    from tether.agent.listener_grace import ListenerGrace, ListenerHungError

    grace = ListenerGrace()
    nested_waiting = asyncio.Event()
    release_nested = asyncio.Event()

    def inner_listener(_event: Any) -> None: ...

    def outer_listener(_event: Any) -> None: ...

    async def outer() -> None:
        await grace.wait(inner_listener, inner(), "compaction_end")
        await asyncio.Event().wait()  # then hangs

    async def inner() -> None:
        nested_waiting.set()
        await release_nested.wait()

    async def delivered() -> None:
        await grace.wait(outer_listener, outer(), "message_end")

    task = asyncio.ensure_future(delivered())
    async with asyncio.timeout(BOUND):
        await nested_waiting.wait()
        grace.abort()  # the nested wait is the innermost now
        release_nested.set()  # it returns well within the grace
        try:
            await task
        except ListenerHungError as exc:
            assert "message_end" in str(exc)
        else:
            raise AssertionError("the hanging listener returned")
    assert outer_listener in grace.hung and inner_listener not in grace.hung
