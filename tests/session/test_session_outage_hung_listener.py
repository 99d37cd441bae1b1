"""A PostgreSQL outage while a listener hangs: ``await core.close()`` still ends in bounded time.

The listener is cut ``ABORT_GRACE`` after the abort ``close()`` makes, but the store's writes are
never cut (``tether.agent.listener_grace``): the run's last writes wait for the database with the
store's own patience. So when the server comes back within that patience, everything the run
recorded is stored; when it stays away longer, the run reports that it was not written (a
``SessionError`` naming the database) and ``close()`` returns instead of waiting for ever. Either way no thread of ours is left behind.

A private server per test: crashing the shared one would cut every other test's connections."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from narrowing import content_of
from tether.agent import Agent
from tether.session import SessionManager
from tether.session.agent_session import AgentSession
from tether.store import PostgresStore, SessionError
from tether.testing.postgres import CRASH_SAFE_SETTINGS, PostgresServer, postgres_server
from tether.testing.scripted import ScriptedModel, reply

BOUND = 60  # seconds: far beyond what each case needs, only there so that a hang fails the test


@pytest.fixture
def server(postgres: PostgresServer) -> Iterator[PostgresServer]:  # needs the shared one's binaries
    with postgres_server(postgres.bin_dir, CRASH_SAFE_SETTINGS) as own:
        yield own


class HangsOnTheAnswer:
    """Awaits an event nobody sets once the assistant's reply has ended (it is recorded by then)."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.cancelled = False

    async def __call__(self, event: Any) -> None:
        if event["type"] != "message_end" or event["message"]["role"] != "assistant":
            return
        if self.entered.is_set():
            return
        self.entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise


def _start_again_after(server: PostgresServer, seconds: float) -> threading.Thread:
    def later() -> None:
        time.sleep(seconds)
        server.start_again()

    thread = threading.Thread(target=later)
    thread.start()
    return thread


async def _crash_while_the_listener_hangs(
    manager: SessionManager,
) -> tuple[AgentSession, HangsOnTheAnswer, asyncio.Future[Any], str]:
    model = ScriptedModel([reply("a paid answer")])
    core = AgentSession(Agent(model=model.model, stream_fn=model), manager.create("/p"), sessions=manager)
    stuck = HangsOnTheAnswer()
    core.subscribe(stuck)
    run = asyncio.ensure_future(core.prompt("hello"))
    async with asyncio.timeout(BOUND):
        await stuck.entered.wait()
    session_id = core.session_id
    assert session_id is not None
    return core, stuck, run, session_id


def _ours(before: set[threading.Thread]) -> list[threading.Thread]:
    """Threads started since ``before`` that are still alive after a moment to end (the event
    loop's executor threads, ``asyncio_N``, are the loop's: ``asyncio.run`` shuts them down)."""
    deadline = time.monotonic() + 10
    left: list[threading.Thread] = []
    while time.monotonic() < deadline:
        left = [
            t
            for t in threading.enumerate()
            if t not in before and t.is_alive() and not t.name.startswith("asyncio_")
        ]
        if not left:
            return []
        time.sleep(0.05)
    return left


async def test_close_waits_out_a_short_outage_and_loses_nothing(server: PostgresServer) -> None:
    before = set(threading.enumerate())
    store = PostgresStore(server.url())
    manager = SessionManager(store)
    core, stuck, run, session_id = await _crash_while_the_listener_hangs(manager)
    await asyncio.to_thread(server.crash)
    restarting = _start_again_after(server, 2.0)
    async with asyncio.timeout(BOUND):
        await core.close()  # the listener is cut; the writes wait for the database, which comes back
        await asyncio.gather(run, return_exceptions=True)
    await asyncio.to_thread(restarting.join)
    store.close()
    assert stuck.cancelled and not core.is_running
    with SessionManager.at(server.url()) as reader:
        stored = reader.open(session_id, readonly=True)
        roles = [m["role"] for m in stored.messages]
        assert roles[:2] == ["user", "assistant"]
        assert "a paid answer" in str(content_of(stored.messages[1]))
        # the run ended on the cut listener, as for one that raised: that reply is stored too
        assert "ListenerHungError" in str(stored.messages[-1].get("errorMessage"))
    assert _ours(before) == []


async def test_close_reports_what_an_outage_longer_than_the_patience_kept_from_the_store(
    server: PostgresServer,
) -> None:
    before = set(threading.enumerate())
    store = PostgresStore(server.url(), outage_seconds=3.0)
    manager = SessionManager(store)
    core, stuck, run, session_id = await _crash_while_the_listener_hangs(manager)
    assert core.session is not None
    await core.session.written()  # the prompt and the reply are in; what the run adds next is not
    await asyncio.to_thread(server.crash)
    async with asyncio.timeout(BOUND):
        closed = (await asyncio.gather(core.close(), return_exceptions=True))[0]
        outcome = (await asyncio.gather(run, return_exceptions=True))[0]
    # Not written: said once, by the run (the prompt's awaiter), naming the database; close()
    # does not say it a second time, and did not wait for ever.
    assert isinstance(outcome, SessionError) and server.url().split("@")[1] in str(outcome)
    assert closed is None
    assert stuck.cancelled and not core.is_running
    await asyncio.to_thread(server.start_again)
    store.close()
    with SessionManager.at(server.url()) as reader:
        stored = [m["role"] for m in reader.open(session_id, readonly=True).messages]
    # What reached the database before the crash is there; the run said the rest (the reply
    # ending it on the cut listener) was not written.
    assert stored == ["user", "assistant"]
    assert _ours(before) == []
