"""Ownership: what a caller passes to a session stays the caller's (closing one session leaves a
shared manager and MCP servers open; closing a manager, the store it was given), what the session
or manager opened itself it closes, and a message that cannot be stored makes ``prompt()`` raise
instead of returning an empty result."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

import pytest

from session_helpers import user
from tether.agent import Agent, tool
from tether.session import SessionManager
from tether.session.agent_session import AgentSession
from tether.session.factory import SessionChoice, create_agent_session
from tether.session.options import AgentOptions
from tether.session.session import SessionBoundError
from tether.store import open_store
from tether.store.errors import SessionError
from tether.testing.scripted import ScriptedModel, reply, tool_call
from tether.wire import WireError


def bound(manager: SessionManager, *answers: str) -> AgentSession:
    model = ScriptedModel([reply(a) for a in answers])
    return AgentSession(Agent(model=model.model, stream_fn=model), manager.create("/p"), sessions=manager)


async def test_closing_one_session_leaves_a_shared_manager_open(manager: SessionManager) -> None:
    first, second = bound(manager, "one"), bound(manager, "two")
    await first.prompt("hi")
    await first.close()
    added = await second.prompt("hello")
    assert [m["role"] for m in added] == ["user", "assistant"]
    stored = second.session_id
    await second.close()
    with manager.open(stored or "") as session:  # the manager still serves, and kept both
        assert [m["role"] for m in session.messages] == ["user", "assistant"]


async def test_a_message_that_cannot_be_stored_raises_from_prompt(manager: SessionManager) -> None:
    core = bound(manager, "lost")
    manager.close()  # the caller closed what it owns under the session's feet
    with pytest.raises(SessionError):
        await core.prompt("hi")
    await core.close()


def test_closing_a_manager_leaves_the_store_it_was_given_open_for_another(store_location: str) -> None:
    """``SessionManager(store)`` closed the store it was given: two managers on one store (a
    server's and a request's) broke each other when one was closed. The store is the caller's."""
    store = open_store(store_location)
    try:
        first, second = SessionManager(store), SessionManager(store)
        with first:
            made = first.create("/p")
            made.append_message(user("one"))
            made.close()
        first.close()  # closing again changes nothing either
        with second.open(made.id) as session:  # the other manager, and the store, still serve
            session.append_message(user("two"))
        assert [r.message_count for r in store.list_sessions(None)] == [2]
    finally:
        store.close()


@pytest.mark.parametrize("opening", ["SessionManager()", "SessionManager.at"])
def test_a_manager_that_opened_its_store_closes_it(
    store_location: str, opening: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_DATABASE_URL", store_location)
    manager = SessionManager() if opening == "SessionManager()" else SessionManager.at(store_location)
    with manager:
        manager.create("/p").close()
    with pytest.raises(SessionError):
        manager.list()


async def test_create_agent_session_closes_only_the_manager_it_opened(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text('[{"content": [{"type": "text", "chunks": ["ok"]}]}]')
    given = SessionManager.at(tmp_path / "given.db")
    core = create_agent_session(
        AgentOptions(model=f"scripted:{script}", tools=[]), cwd=tmp_path, sessions=given
    )
    await core.prompt("hi")
    stored = core.session_id
    await core.close()
    assert [r.id for r in given.list()] == [stored]  # still open, still usable
    given.close()
    own = create_agent_session(
        AgentOptions(model=f"scripted:{script}", tools=[]), cwd=tmp_path, session=SessionChoice()
    )
    assert own.sessions is not None
    await own.close()
    with pytest.raises(Exception):  # noqa: B017 - closed: any use fails
        own.sessions.list()


async def test_a_closed_session_refuses_new_work_instead_of_losing_it(manager: SessionManager) -> None:
    """A prompt to a closed core once called the model and returned ``[]``: nothing recorded, the
    reply silently gone. Now it, ``steer`` and ``follow_up`` raise one line saying so."""
    model = ScriptedModel([reply("one"), reply("never")])
    core = AgentSession(Agent(model=model.model, stream_fn=model), manager.create("/p"), sessions=manager)
    await core.prompt("hi")
    stored = core.session_id or ""
    await core.close()
    with pytest.raises(SessionError, match="closed"):
        await core.prompt("after close")
    with pytest.raises(SessionError, match="closed"):
        core.steer("after close")
    with pytest.raises(SessionError, match="closed"):
        core.follow_up("after close")
    assert len(model.requests) == 1  # the model was not asked again
    await core.close()  # closing twice is fine
    with manager.open(stored) as session:
        assert [m["role"] for m in session.messages] == ["user", "assistant"]


async def test_a_closed_session_without_a_store_refuses_a_prompt() -> None:
    model = ScriptedModel([reply("one"), reply("never")])
    core = AgentSession(Agent(model=model.model, stream_fn=model))
    await core.prompt("hi")
    await core.close()
    with pytest.raises(SessionError, match="closed"):
        await core.prompt("after close")
    assert len(model.requests) == 1


async def test_async_with_closes_the_session_also_after_an_exception(manager: SessionManager) -> None:
    model = ScriptedModel([reply("one")])
    core = AgentSession(Agent(model=model.model, stream_fn=model), manager.create("/p"), sessions=manager)
    with pytest.raises(LookupError):
        async with core as entered:
            assert entered is core
            async for event in core.prompt("hi"):
                if event["type"] == "message_update":
                    raise LookupError("the caller's own failure")  # leaves the run: aborted
    with pytest.raises(SessionError, match="closed"):
        await core.prompt("after")
    stored = [r.id for r in manager.list()]
    with manager.open(stored[0]) as session:  # the aborted reply was recorded before the close
        assert [m.get("stopReason") for m in session.messages] == [None, "aborted"]


@pytest.mark.parametrize("given", [None, 5, b"bytes"])
async def test_a_prompt_that_is_no_message_is_one_wire_error(given: object) -> None:
    """``prompt(None)`` raised "'NoneType' object is not iterable" from deep inside."""
    model = ScriptedModel([reply("never")])
    core = AgentSession(Agent(model=model.model, stream_fn=model))
    with pytest.raises(
        WireError,
        match=f"prompt: expected a text, a message or a list of messages, got {type(given).__name__}",
    ):
        await core.prompt(cast(Any, given))
    with pytest.raises(WireError, match="prompt: expected"):
        core.steer(cast(Any, given))
    assert model.requests == []
    await core.close()


async def test_steering_with_a_list_queues_every_message() -> None:
    model = ScriptedModel([reply("ok")])
    core = AgentSession(Agent(model=model.model, stream_fn=model))
    messages: list[Any] = [{"role": "user", "content": c, "timestamp": 0} for c in ("one", "two")]
    core.steer(cast(Any, messages))
    core.steer(cast(Any, []))  # nothing to queue: no IndexError
    assert core.queued().steering == ("one", "two")
    await core.close()


def test_a_session_used_under_one_event_loop_closes_under_another() -> None:
    """``asyncio.run(main())`` that prompts, then ``asyncio.run(core.close())`` at exit: close
    waited on the finished run's future, of the first (closed) loop: "Event loop is closed"."""
    model = ScriptedModel([reply("one")])
    core = AgentSession(Agent(model=model.model, stream_fn=model))

    async def ask() -> list[Any]:
        return await core.prompt("hi")

    assert [m["role"] for m in asyncio.run(ask())] == ["user", "assistant"]
    asyncio.run(core.close())
    with pytest.raises(SessionError, match="closed"):
        asyncio.run(ask())


async def test_a_listener_that_always_raises_costs_the_reply_not_the_prompt_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A listener raising on every event made ``prompt()`` raise its exception (from
    ``agent_settled``), and the listeners after it never heard that the run ended."""
    model = ScriptedModel([reply("never seen")])
    core = AgentSession(Agent(model=model.model, stream_fn=model))

    def broken(event: Any) -> None:
        raise ValueError(f"listener bug at {event['type']}")

    core.subscribe(broken)
    seen: list[str] = []
    core.subscribe(lambda event: seen.append(event["type"]))
    added = await core.prompt("hi")
    assert added[-1]["role"] == "assistant" and added[-1]["stopReason"] == "error"
    assert "listener bug at agent_start" in added[-1].get("errorMessage", "")
    assert seen[-1] == "agent_settled"
    assert "listener bug at agent_settled" in caplog.text
    await core.close()


async def test_a_closed_session_opens_no_other_session(manager: SessionManager) -> None:
    """``new_session()`` and ``switch_session()`` on a closed core once made or opened a session
    for writing and kept it: nothing closes a closed core again, so that session stayed locked
    (another core's open raised ``SessionLockedError``). Now they, and ``fork()``, raise the
    closed core's one line and open nothing."""
    core = bound(manager, "one")
    await core.prompt("hi")
    stored = core.session_id or ""
    await core.close()
    for move in (core.new_session, lambda: core.switch_session(stored), core.fork):
        with pytest.raises(SessionError, match="closed"):
            move()
    assert core.session is None
    assert [r.id for r in manager.list()] == [stored]
    with manager.open(stored) as session:  # not held by the closed core
        assert [m["role"] for m in session.messages] == ["user", "assistant"]


async def test_a_closed_session_says_it_is_closed_not_that_sessions_are_off(
    manager: SessionManager, tmp_path: Path
) -> None:
    """What needs the session after ``close()`` raised ``LookupError: this run has no session
    (--no-session)``: a CLI flag the program never used, for a core that had one. Now the
    closed core's ``SessionError``."""
    core = bound(manager, "one")
    await core.prompt("hi")
    entry = core.session.leaf_id if core.session is not None else None
    await core.close()
    with pytest.raises(SessionError, match="closed"):
        await core.compact()
    with pytest.raises(SessionError, match="closed"):
        await core.branch(entry or "")
    for use in (
        core.tree_text,
        lambda: core.rename("t"),
        lambda: core.export(tmp_path / "s.html"),
        core.list_sessions,
    ):
        with pytest.raises(SessionError, match="closed"):
            use()


async def test_a_closed_session_keeps_its_id_and_file(manager: SessionManager) -> None:
    """``session_id`` (and ``session_file``) became ``None`` at ``close()``: the log line after an
    ``async with core:`` ("session 01J...: done") named no session. pi's ``sessionId`` outlives
    ``dispose()``, as a closed file keeps its ``name``; the handle itself is still released."""
    core = bound(manager, "one")
    async with core:
        await core.prompt("hi")
        stored, path = core.session_id, core.session_file
    assert stored is not None
    assert (core.session_id, core.session_file, core.session) == (stored, path, None)


async def test_a_closed_session_refuses_append_entry(manager: SessionManager) -> None:
    """``append_entry()`` on a closed core returned ``None``, the answer of a run that keeps no
    session, and the extension's data was lost without a word; every other use of the closed
    core's session raises its ``SessionError``. Now it does too (a core without a session still
    answers ``None``)."""
    core = bound(manager, "one")
    await core.prompt("hi")
    await core.close()
    with pytest.raises(SessionError, match="closed"):
        core.append_entry("note", {"n": 1})
    unstored = AgentSession(Agent(model=ScriptedModel([]).model))
    assert unstored.append_entry("note", {"n": 1}) is None
    await unstored.close()


async def test_close_from_a_listener_of_the_run_closes_as_the_run_settles(manager: SessionManager) -> None:
    """A listener that awaited ``core.close()`` made the run wait for itself: ``close()`` waited
    for the run, the run for the listener, until the abort grace cut the listener, and with it
    ``close()`` half way: the reply became "event listener failed: ListenerHungError" and the
    session stayed open, locked. (Through ``gather`` the cut went round the run's task awaiting
    itself until ``RecursionError``.) Now ``close()`` inside the core's own run aborts it and
    returns; the core closes (its session released) as that run settles, before ``prompt()``
    returns."""
    core = bound(manager, "one", "two")

    async def closer(event: Any) -> None:
        if event["type"] == "message_end" and event["message"]["role"] == "assistant":
            await core.close()

    core.subscribe(closer)
    async with asyncio.timeout(5):
        added = await core.prompt("hi")
    assert [m["role"] for m in added] == ["user", "assistant"]
    stored = core.session_id or ""
    assert core.session is None
    with pytest.raises(SessionError, match="closed"):
        await core.prompt("again")
    with manager.open(stored) as session:  # released, and the run's messages are in it
        assert [m["role"] for m in session.messages] == ["user", "assistant"]


async def test_close_from_a_tool_of_the_run_closes_as_the_run_settles(manager: SessionManager) -> None:
    """A tool that awaited its core's ``close()`` held the run (``close()`` waits for it) until
    the abort grace cancelled the tool, and ``close()`` with it: the session stayed open for
    writing, locked, with nothing left to close it (through ``gather`` the cut cancelled the run
    itself, and ``prompt()`` raised ``CancelledError``)."""
    model = ScriptedModel([reply(tool_call("shut", {})), reply("never")])
    holder: list[AgentSession] = []

    @tool
    async def shut() -> str:
        """Close the session this tool runs in."""
        await holder[0].close()
        return "closing"

    core = AgentSession(
        Agent(model=model.model, stream_fn=model, tools=[shut]), manager.create("/p"), sessions=manager
    )
    holder.append(core)
    async with asyncio.timeout(5):
        await core.prompt("hi")
    stored = core.session_id or ""
    assert core.session is None
    with manager.open(stored) as session:
        roles = [(m["role"], m.get("stopReason")) for m in session.messages]
    assert roles == [("user", None), ("assistant", "toolUse"), ("toolResult", None), ("assistant", "aborted")]


async def test_a_session_handle_bound_to_a_second_core_is_refused_at_once(manager: SessionManager) -> None:
    """Two cores on one handle: closing the first released the handle's writer lock, and the
    second failed at its next write, far from the mistake. The second is refused as it is made,
    before it touches its agent."""
    model = ScriptedModel([reply("one")])
    session = manager.create("/p")
    first = AgentSession(Agent(model=model.model, stream_fn=model), session, sessions=manager)
    other = Agent(model=model.model, stream_fn=model)
    hooks = (other.convert_to_llm, other.transform_context, other.before_tool_call)
    with pytest.raises(SessionBoundError, match=f"session '{session.id}'.*another AgentSession"):
        AgentSession(other, session, sessions=manager)
    assert (other.convert_to_llm, other.transform_context, other.before_tool_call) == hooks
    assert issubclass(SessionBoundError, SessionError)
    added = await first.prompt("hi")  # the first goes on, the handle still its own
    assert [m["role"] for m in added] == ["user", "assistant"]
    await first.close()


async def test_a_manager_closed_under_a_run_ends_it_with_a_session_error_saying_so(
    store_location: str,
) -> None:
    """The manager closed (its store with it) while a tool runs: the run ended with what the
    closed store raised first, "RuntimeError: the session store is closed" on SQLite, "read-only
    here (opened read-only, or closed)" on PostgreSQL, neither naming what the program did."""
    started, finish = asyncio.Event(), asyncio.Event()

    @tool
    async def wait() -> str:
        """Wait until the test lets go."""
        started.set()
        await finish.wait()
        return "waited"

    model = ScriptedModel([reply(tool_call("wait")), reply("done")])
    manager = SessionManager.at(store_location)
    agent = Agent(model=model.model, stream_fn=model, tools=[wait])
    core = AgentSession(agent, manager.create("/p"), sessions=manager)
    async with asyncio.timeout(20):
        run = asyncio.ensure_future(_awaited(core.prompt("go")))
        await started.wait()
        manager.close()
        finish.set()
        with pytest.raises(SessionError, match="its SessionManager is closed: close the AgentSession first"):
            await run
        await core.close()


async def _awaited(run: Any) -> Any:
    return await run
