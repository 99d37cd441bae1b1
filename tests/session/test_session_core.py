"""``AgentSession`` as a library user drives it: runs as iterators, queues, the input layer, busy."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tether import Agent, AgentBusyError, AgentSession, ScriptedModel, reply, tool, tool_call
from tether.ai.abort import AbortSignal
from tether.session import SessionManager
from tether.store.store import SessionDatabaseError


def _core(model: ScriptedModel, tools: list[Any] | None = None, **kwargs: Any) -> AgentSession:
    return AgentSession(Agent(model=model.model, stream_fn=model, tools=tools or []), **kwargs)


async def test_a_run_iterates_its_events_then_awaits_to_its_messages() -> None:
    model = ScriptedModel([reply("hello there")])
    core = _core(model)
    run = core.prompt("hi")
    kinds = [event["type"] async for event in run]
    assert kinds[0] == "agent_start" and kinds[-2:] == ["agent_end", "agent_settled"]
    assert "message_update" in kinds
    added = await run  # the same run, already settled
    assert [m["role"] for m in added] == ["user", "assistant"]
    assert core.messages == added and not core.is_running


async def test_a_listener_subscribed_after_a_run_without_any_hears_every_event() -> None:
    """While nobody listens, the core's agent skips calling it with the events it only passes on
    (``message_update``, ``turn_start``, ...); a listener subscribed later hears them all, and once
    it is gone a third run's listener does again."""
    core = _core(ScriptedModel([reply("one"), reply("two"), reply("three"), reply("four")]))
    await core.prompt("hi")
    heard: list[str] = []
    unsubscribe = core.subscribe(lambda event: heard.append(event["type"]))
    await core.prompt("again")
    assert heard[:3] == ["agent_start", "turn_start", "message_start"]
    assert {"message_update", "turn_end", "agent_end", "agent_settled"} <= set(heard)
    unsubscribe()
    await core.prompt("quietly")
    assert [event["type"] async for event in core.prompt("once more")].count("turn_start") == 1


async def test_an_agent_listener_subscribed_before_the_core_finds_each_message_recorded(
    tmp_path: Path,
) -> None:
    """The core records an agent event before any listener of the agent hears it, one subscribed
    before the core was bound too: its ``message_end`` finds the message stamped and stored."""
    model = ScriptedModel([reply("hello there")])
    agent = Agent(model=model.model, stream_fn=model)
    manager = SessionManager.at(tmp_path / "sessions.db")
    seen: list[tuple[str, bool, int]] = []

    def listener(event: Any) -> None:
        if event["type"] == "message_end":
            assert core.session is not None
            message = event["message"]
            seen.append((message["role"], "thinkingLevel" in message, len(core.session.messages)))

    agent.subscribe(listener)
    core = AgentSession(agent, manager.create(str(tmp_path)))
    await core.prompt("hi")
    await core.close()
    manager.close()
    assert seen == [("user", False, 1), ("assistant", True, 2)]


async def test_a_session_error_in_a_listener_ends_the_run_as_itself() -> None:
    """Not as the loop's "event listener failed: SessionDatabaseError: ..." (front ends show the
    session error's own line: what is wrong, what to do)."""
    full = SessionDatabaseError(
        "/home/ana/sessions.db: the disk holding the session database is full; free some space"
    )
    core = _core(ScriptedModel([reply("hello there")]))
    seen: list[str] = []

    def listener(event: Any) -> None:
        seen.append(event["type"])
        if event["type"] == "message_end" and event["message"]["role"] == "assistant":
            raise full

    core.subscribe(listener)
    with pytest.raises(SessionDatabaseError) as raised:
        await core.prompt("hi")
    assert raised.value is full and seen[-1] == "agent_settled"


async def test_leaving_the_iteration_early_aborts_the_run() -> None:
    @tool
    async def wait_forever(signal: AbortSignal | None) -> str:
        """Answers only when the run is aborted."""
        assert signal is not None
        await signal.wait()
        raise RuntimeError("aborted")

    model = ScriptedModel([reply(tool_call("wait_forever")), reply("never asked")])
    core = _core(model, [wait_forever])
    async for event in core.prompt("go"):
        if event["type"] == "tool_execution_start":
            break
    # Python closes an abandoned async iterator on the event loop's next turn; the run is
    # aborted then (``contextlib.aclosing`` would close it at once).
    await asyncio.wait_for(core.wait_for_idle(), 5)
    assert not core.is_running
    last = core.last_assistant()
    assert last is not None and last["stopReason"] == "aborted"


async def test_queues_have_one_source_and_every_change_is_reported() -> None:
    release = asyncio.Event()

    @tool
    async def slow() -> str:
        """Waits for the test."""
        await release.wait()
        return "done"

    model = ScriptedModel([reply(tool_call("slow")), reply("steered"), reply("followed up")])
    core = _core(model, [slow])
    updates: list[tuple[list[str], list[str]]] = []

    def listen(event: Any) -> None:
        if event["type"] == "queue_update":
            updates.append((event["steering"], event["followUp"]))
        elif event["type"] == "tool_execution_start":
            core.steer("use the other file")
            core.follow_up("then summarise")
            assert core.queued().steering == ("use the other file",)
            release.set()

    core.subscribe(listen)
    await core.prompt("start")
    assert updates == [
        (["use the other file"], []),
        (["use the other file"], ["then summarise"]),
        ([], ["then summarise"]),
        ([], []),
    ]
    users = [m["content"] for m in core.messages if m["role"] == "user"]
    assert users == ["start", "use the other file", "then summarise"]


async def test_a_second_prompt_while_running_is_refused_and_the_first_goes_on() -> None:
    gate = asyncio.Event()

    @tool
    async def hold() -> str:
        """Holds the run."""
        await gate.wait()
        return "held"

    model = ScriptedModel([reply(tool_call("hold")), reply("finished")])
    core = _core(model, [hold])
    first = core.prompt("one").start()
    await asyncio.sleep(0.05)
    with pytest.raises(AgentBusyError):
        await core.prompt("two")
    gate.set()
    added = await first
    assert added[-1]["role"] == "assistant" and core.last_assistant() is added[-1]


async def test_submit_runs_shell_input_and_prompt_sends_it_as_text(tmp_path: Path) -> None:
    model = ScriptedModel([reply("saw it")])
    manager = SessionManager.at(tmp_path / "sessions.db")
    session = manager.create(str(tmp_path))
    core = _core(model, cwd=tmp_path, session=session, sessions=manager)
    added = await core.submit("!echo from-the-shell")
    assert [m["role"] for m in added] == ["bashExecution"]
    assert "from-the-shell" in added[0]["output"]  # type: ignore[typeddict-item]
    assert model.requests == []  # nothing went to the model
    await core.prompt("!echo not a command")  # prompt(): plain text, no syntax
    sent = model.requests[0].context["messages"]
    assert sent[-1]["content"] == "!echo not a command"
    assert [m["role"] for m in session.messages] == ["bashExecution", "user", "assistant"]
    await core.close()
    manager.close()


async def test_what_a_plain_listener_returns_is_not_awaited(tmp_path: Path) -> None:
    """``core.subscribe(lambda e: log.write(...))`` returns the count written: only an awaitable
    is awaited, as ``Agent.subscribe`` does; awaiting the int failed the run ("object int can't
    be used in 'await' expression") and every run after it."""
    model = ScriptedModel([reply("hello there"), reply("again")])
    core = _core(model)
    with (tmp_path / "events.log").open("w") as log:

        def write(event: Any) -> Any:  # untyped, as a script's lambda is
            return log.write(event["type"] + "\n")

        core.subscribe(write)
        core.steer("queued first")  # delivered at once, outside any run
        added = await core.prompt("hi")
    last = added[-1]
    assert last["role"] == "assistant" and last["stopReason"] == "stop", last.get("errorMessage")
    logged = (tmp_path / "events.log").read_text().split()
    assert logged[0] == "queue_update" and logged[-1] == "agent_settled"
