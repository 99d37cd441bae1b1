"""A listener that never returns cannot hold a session for ever: ``close()`` and ``abort()`` end
the run within ``ABORT_GRACE`` of the abort by cancelling the listener (one warning names it),
what was recorded before stays stored, another session is unaffected, and a listener that is
merely slow finishes its work. Each wait is bounded by a generous ``asyncio.timeout`` so that a
regression fails instead of hanging the suite."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from narrowing import content_of
from tether.agent import Agent
from tether.agent.abort_grace import ABORT_GRACE
from tether.session import SessionManager
from tether.session.agent_session import AgentSession
from tether.testing.scripted import ScriptedModel, reply

BOUND = 30  # seconds: far beyond ABORT_GRACE, only there so that a hang fails the test


def bound(manager: SessionManager, *answers: str) -> AgentSession:
    model = ScriptedModel([reply(a) for a in answers])
    return AgentSession(Agent(model=model.model, stream_fn=model), manager.create("/p"), sessions=manager)


class Stuck:
    """A listener that awaits an event nobody sets on the first ``on`` event of an assistant (or
    on ``agent_end``), and notes that it was entered and that it was cancelled."""

    def __init__(self, on: str) -> None:
        self.on = on
        self.entered = asyncio.Event()
        self.cancelled = False
        self.calls_after_cut = 0

    async def __call__(self, event: Any) -> None:
        if self.cancelled:
            self.calls_after_cut += 1
        if event["type"] != self.on or self.entered.is_set():
            return
        if event["type"] == "message_end" and event["message"]["role"] != "assistant":
            return
        self.entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise


def stored_roles(manager: SessionManager, session_id: str | None) -> list[str]:
    with manager.open(session_id or "") as session:
        return [m["role"] for m in session.messages]


async def second_session_works(manager: SessionManager) -> None:
    other = bound(manager, "still here")
    async with asyncio.timeout(BOUND):
        added = await other.prompt("hello")
        stored = other.session_id
        await other.close()
    assert [m["role"] for m in added] == ["user", "assistant"]
    assert stored_roles(manager, stored) == ["user", "assistant"]


async def hung(
    manager: SessionManager, on: str, *answers: str
) -> tuple[AgentSession, Stuck, asyncio.Future[Any]]:
    """A core whose listener hangs on ``on``, its prompt's run, once the listener is stuck."""
    core = bound(manager, *answers)
    stuck = Stuck(on)
    core.subscribe(stuck)
    run = asyncio.ensure_future(core.prompt("hi"))
    async with asyncio.timeout(BOUND):
        await stuck.entered.wait()
    return core, stuck, run


async def test_close_cuts_a_listener_that_never_returns(
    manager: SessionManager, caplog: pytest.LogCaptureFixture
) -> None:
    core, stuck, run = await hung(manager, "message_end", "hello")
    stored = core.session_id
    async with asyncio.timeout(BOUND):
        with caplog.at_level(logging.WARNING, logger="tether.agent.listener_grace"):
            await core.close()
        await asyncio.gather(run, return_exceptions=True)
    assert stuck.cancelled and not core.is_running
    assert stuck.calls_after_cut == 0  # the rest of the run went on without it
    assert any("Stuck" in r.getMessage() and "message_end" in r.getMessage() for r in caplog.records)
    # the reply was recorded before the listener heard of it; the run then ended on the failure
    assert stored_roles(manager, stored)[:2] == ["user", "assistant"]
    with manager.open(stored or "") as session:
        assert "hello" in str(content_of(session.messages[1]))
        ended = session.messages[-1]  # as for a listener that raised: an error reply naming it
        assert ended["role"] == "assistant" and "ListenerHungError" in str(ended.get("errorMessage"))
    await second_session_works(manager)


async def test_abort_cuts_a_listener_that_never_returns(manager: SessionManager) -> None:
    core, stuck, run = await hung(manager, "message_end", "hello", "again")
    async with asyncio.timeout(BOUND):
        core.abort()
        await asyncio.gather(run, return_exceptions=True)
        assert stuck.cancelled and not core.is_running
        added = await core.prompt("and now?")  # the session is ready for the next prompt
        assert added[-1]["role"] == "assistant"
        stored = core.session_id
        await core.close()
    roles = stored_roles(manager, stored)
    assert roles[:2] == ["user", "assistant"] and roles[-2:] == ["user", "assistant"]
    await second_session_works(manager)


async def test_a_listener_that_hangs_on_agent_end_only(manager: SessionManager) -> None:
    core, stuck, run = await hung(manager, "agent_end", "hello")
    stored = core.session_id
    async with asyncio.timeout(BOUND):
        await core.close()
        await asyncio.gather(run, return_exceptions=True)
    assert stuck.cancelled and not core.is_running
    assert stored_roles(manager, stored) == ["user", "assistant"]
    await second_session_works(manager)


async def test_a_slow_listener_is_not_cut_before_the_bound(manager: SessionManager) -> None:
    core = bound(manager, "hello")
    finished: list[str] = []

    async def slow(event: Any) -> None:
        if event["type"] == "message_end" and event["message"]["role"] == "assistant":
            core.abort()  # the bound starts here; the listener needs a tenth of it
            await asyncio.sleep(ABORT_GRACE / 10)
            finished.append("message_end")

    core.subscribe(slow)
    async with asyncio.timeout(BOUND):
        await core.prompt("hi")
        stored = core.session_id
        await core.close()
    assert finished == ["message_end"]
    assert stored_roles(manager, stored) == ["user", "assistant"]


async def test_a_queue_listener_started_by_steer_is_cut_with_the_aborted_run(manager: SessionManager) -> None:
    """``steer()`` is not async, so an async listener's ``queue_update`` runs in a task of its
    own; once the run is aborted it is bounded like the run's own listeners."""
    core = bound(manager, "hello")
    stuck = Stuck("queue_update")
    core.subscribe(stuck)

    def steer_then_abort(event: Any) -> None:
        if event["type"] == "message_start" and event["message"]["role"] == "assistant":
            core.steer("more")
            core.abort()

    core.subscribe(steer_then_abort)
    async with asyncio.timeout(BOUND):
        await core.prompt("hi")
        await stuck.entered.wait()
        while not stuck.cancelled:  # cut ABORT_GRACE after the abort, without close()
            await asyncio.sleep(0.05)
        await core.close()


async def test_close_cuts_a_queue_listener_started_outside_a_run(
    manager: SessionManager, caplog: pytest.LogCaptureFixture
) -> None:
    core = bound(manager)
    stuck = Stuck("queue_update")
    core.subscribe(stuck)
    core.steer("for later")
    async with asyncio.timeout(BOUND):
        await stuck.entered.wait()
        with caplog.at_level(logging.WARNING, logger="tether.agent.listener_grace"):
            await core.close()
    assert stuck.cancelled  # nothing of the core's is left running after close()
    assert any("Stuck" in r.getMessage() and "queue_update" in r.getMessage() for r in caplog.records)
