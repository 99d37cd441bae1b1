"""``close()`` and ``abort()`` during a manual ``compact()``: the summary's request is aborted and
the call returns in bounded time, leaving the session as it was (no compaction entry stored).

A summary takes as long as a reply; before, ``close()`` waited for all of it, and on a stalled
server for ever (pi does too). The model here is a real provider against a server that sends
the start of a reply and then nothing; and a stream function deaf to the abort, which
``close()`` gives up on after ``ABORT_GRACE``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

import tether.agent.abort_grace as grace_module
from session_helpers import MODEL, assistant, text, user
from tether.agent import Agent
from tether.session import SessionManager
from tether.session.agent_session import AgentSession
from tether.session.budget import CompactionSettings
from tether.session.compaction import SUMMARY_SYSTEM_PROMPT, CompactionError
from tether.session.settings import Settings
from tether.testing.loopback import LoopbackServer, Reply, loopback_model
from tether.testing.scripted import ScriptedModel, reply

WORDS = "lorem ipsum dolor sit amet " * 40


def _stalling_reply() -> Reply:
    body = f"data: {json.dumps({'id': 'r', 'choices': [{'index': 0, 'delta': {'content': 'The'}}]})}\n\n"
    return Reply(body=(body * 2).encode(), stall_after=len(body))  # the rest never comes


def _core(manager: SessionManager, model: Any, stream_fn: Any = None) -> AgentSession:
    session = manager.create("/p", model=MODEL)
    for i in range(6):
        session.append_message(user(f"question {i}: {WORDS}"))
        session.append_message(assistant(text(f"answer {i}: {WORDS}")))
    settings = Settings(compaction=CompactionSettings(keep_recent_tokens=300))  # something to summarise
    return AgentSession(Agent(model=model, stream_fn=stream_fn), session, sessions=manager, settings=settings)


async def _compacting(
    core: AgentSession, asked: Callable[[], bool]
) -> tuple[asyncio.Future[Any], list[dict[str, Any]]]:
    """A ``compact()`` whose summary request is out (``asked``) and unanswered."""
    events: list[dict[str, Any]] = []
    core.subscribe(lambda event: events.append(dict(event)))
    work = asyncio.ensure_future(core.compact())
    async with asyncio.timeout(30):
        while not asked():
            await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    assert core.is_compacting and not work.done()
    return work, events


class _StreamFn:
    """A stream function whose stream is itself (its ``result`` says how it answers);
    ``called`` says the summary was asked for."""

    called = False

    def __call__(self, model: Any, context: Any, options: Any = None) -> Any:
        self.called = True
        return self


@pytest.mark.parametrize("stop", ["close", "abort"])
async def test_close_or_abort_ends_a_compaction_stalled_at_the_server(
    manager: SessionManager, stop: str
) -> None:
    async with LoopbackServer([_stalling_reply()]) as server:
        core = _core(manager, loopback_model(server.url))
        session_id = core.session_id
        assert session_id is not None
        before = [e["id"] for e in core.session.path()]  # type: ignore[union-attr]
        work, events = await _compacting(core, lambda: bool(server.requests))
        async with asyncio.timeout(10):
            if stop == "close":
                await core.close()
            else:
                core.abort()
            with pytest.raises(CompactionError, match="summarising failed"):
                await work
        if stop == "abort":
            await core.close()
    assert (
        events[-1]["type"] == "compaction_end" and events[-1]["aborted"] and events[-1].get("result") is None
    )
    reopened = manager.open(session_id)
    try:
        assert [e["id"] for e in reopened.path()] == before  # nothing half-stored
    finally:
        reopened.close()


async def test_close_gives_up_on_a_summary_deaf_to_the_abort(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grace_module, "ABORT_GRACE", 0.05)
    never = asyncio.Event()

    class Deaf(_StreamFn):
        async def result(self) -> Any:
            await never.wait()

    deaf = Deaf()
    core = _core(manager, MODEL, deaf)
    work, events = await _compacting(core, lambda: deaf.called)
    async with asyncio.timeout(10):
        await core.close()
        with pytest.raises(CompactionError, match="aborted"):
            await work
    assert events[-1]["type"] == "compaction_end" and events[-1]["aborted"]


async def test_close_leaves_behind_a_summary_deaf_to_cancellation_too(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a stream function that swallows the cancellation and goes on waiting: close() waited for it
    # without a bound after cancelling it, for ever
    monkeypatch.setattr(grace_module, "ABORT_GRACE", 0.05)
    released = asyncio.Event()

    class Stubborn(_StreamFn):
        async def result(self) -> Any:
            while not released.is_set():
                try:
                    await released.wait()
                except asyncio.CancelledError:
                    continue
            raise asyncio.CancelledError  # the cancellation honoured at last

    stubborn = Stubborn()
    core = _core(manager, MODEL, stubborn)
    work, _events = await _compacting(core, lambda: stubborn.called)
    try:
        async with asyncio.timeout(5):
            await core.close()
        assert not work.done()  # left behind, not waited for
    finally:
        released.set()  # let it end, so that the test's loop can close
        with pytest.raises(CompactionError, match="aborted"):
            await work


async def test_a_summary_answered_after_the_abort_is_not_stored(manager: SessionManager) -> None:
    """A model that ignores the abort and answers in full anyway: its summary was stored, the
    compaction done though aborted (``summarize_branch`` checked for it; ``compact`` did not)."""

    class Answering(_StreamFn):
        async def result(self) -> Any:
            while not self.options.signal.aborted:
                await asyncio.sleep(0.01)
            return assistant(text("a summary all the same"))

        def __call__(self, model: Any, context: Any, options: Any = None) -> Any:
            self.options = options
            return super().__call__(model, context, options)

    answering = Answering()
    core = _core(manager, MODEL, answering)
    before = [e["id"] for e in core.session.path()]  # type: ignore[union-attr]
    work, events = await _compacting(core, lambda: answering.called)
    async with asyncio.timeout(10):
        core.abort()
        with pytest.raises(CompactionError, match="aborted"):
            await work
    assert events[-1]["type"] == "compaction_end" and events[-1]["aborted"] and "result" not in events[-1]
    assert [e["id"] for e in core.session.path()] == before  # type: ignore[union-attr]
    await core.close()


@pytest.mark.parametrize("stop", ["close", "abort"])
async def test_close_or_abort_ends_an_overflow_compaction_whose_summariser_stalled(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch, stop: str
) -> None:
    """The compaction that recovers from a context overflow had no signal: ``abort()`` did not
    reach its summary, and ``close()`` waited for the run, itself waiting on the summary, for
    ever. The summariser here answers its abort (``abort``), or is deaf to it (``close`` gives
    up on it after ``ABORT_GRACE``); the overflow's error reply stands, nothing compacted."""
    monkeypatch.setattr(grace_module, "ABORT_GRACE", 0.05)
    scripted = ScriptedModel([reply(error="prompt is too long: 250000 tokens > 200000 maximum")], model=MODEL)
    asked, never = asyncio.Event(), asyncio.Event()

    async def stream_fn(model: Any, context: Any, options: Any = None) -> Any:
        if context.get("systemPrompt") == SUMMARY_SYSTEM_PROMPT:
            asked.set()
            signal = options.signal if options is not None else None
            await (signal.wait() if stop == "abort" and signal is not None else never.wait())
        return scripted(model, context, options)

    core = _core(manager, MODEL, stream_fn)
    before = [e["id"] for e in core.session.path()]  # type: ignore[union-attr]
    events: list[dict[str, Any]] = []
    core.subscribe(lambda event: events.append(dict(event)))
    run = asyncio.ensure_future(_awaited(core.prompt("one more")))
    async with asyncio.timeout(10):
        await asked.wait()
        if stop == "close":
            await core.close()
        else:
            core.abort()
        added = await run
        await core.close()
    assert [m["role"] for m in added] == ["user", "assistant"] and added[-1].get("stopReason") == "error"
    ends = [e for e in events if e["type"] == "compaction_end"]
    assert len(ends) == 1 and ends[0]["aborted"] and ends[0].get("result") is None and core.compactions == 0
    session_id = core.session_id
    assert session_id is not None
    with manager.open(session_id) as reopened:  # the prompt and its error reply, no compaction
        path = reopened.path()
        assert [e["id"] for e in path][: len(before)] == before
        assert "compaction" not in [e["type"] for e in path]
        assert [m["role"] for m in reopened.messages][-2:] == ["user", "assistant"]


async def _awaited(run: Any) -> Any:
    return await run
