"""Abort that returns: a run stops within ``ABORT_GRACE`` of ``abort()`` even when a tool ignores
its signal (the test holds the tool until the run has settled, so a run that waited for it
would never settle), the late result is dropped, and leaving ``async for`` early (break, an
exception, the task cancelled) leaves the session ready for the next prompt."""

from __future__ import annotations

import asyncio
import threading

import pytest

import tether
from narrowing import as_assistant
from tether.agent import Agent
from tether.agent.abort_grace import ABORT_GRACE
from tether.session.agent_session import AgentSession
from tether.session.events import QueueSnapshot
from tether.testing.scripted import ScriptedModel, ScriptedRequest, reply, tool_call

release = threading.Event()
started = threading.Event()


@tether.tool
def stubborn() -> str:
    """Blocks in its thread until the test releases it; never looks at a signal."""
    started.set()
    release.wait(30)
    return "finished anyway"


@tether.tool
async def deaf() -> str:
    """Waits for an event nobody sets, shielded from cancellation requests it ignores."""
    await asyncio.Event().wait()
    return "never"


def core(*tools: tether.AgentTool, replies: int = 1) -> tuple[AgentSession, ScriptedModel]:
    script = [reply(tool_call(tools[0].name, {})) for _ in range(replies)] if tools else []
    model = ScriptedModel([*script, reply("done"), reply("again")])
    return AgentSession(Agent(model=model.model, stream_fn=model, tools=list(tools))), model


@pytest.fixture(autouse=True)
def _reset() -> None:
    release.clear()
    started.clear()


def tool_results(session: AgentSession) -> list[str]:
    return [tether.message_text(m) for m in session.messages if m["role"] == "toolResult"]


async def test_abort_settles_without_waiting_for_a_sync_tool_that_ignores_it() -> None:
    session, _ = core(stubborn)
    run = asyncio.ensure_future(session.prompt("go"))
    await asyncio.to_thread(started.wait, 10)
    session.abort()
    await run  # the tool is still blocked: only giving up on it lets the run settle
    assert not release.is_set() and not session.is_running
    assert tool_results(session) == [
        f"Tool execution was aborted (the tool did not stop within {ABORT_GRACE:g} s; its late result is dropped)"
    ]
    release.set()
    await asyncio.sleep(0.05)
    assert "finished anyway" not in str(session.messages)  # dropped, as the @tool docstring says
    await session.close()


async def test_close_returns_while_an_async_tool_ignores_the_abort() -> None:
    session, _ = core(deaf)
    async for event in session.prompt("go"):
        if event["type"] == "tool_execution_start":
            await session.close()  # aborts, waits for the run to settle, releases
            break
    assert not session.is_running


async def test_close_returns_while_an_async_tool_swallows_every_cancellation() -> None:
    """A tool that catches ``CancelledError`` and waits again, for ever: the grace still ends
    its call, and the tool goes on alone in a task nobody waits for."""
    stop = False
    swallowed: list[int] = []

    @tether.tool
    async def stubborn_async() -> str:
        """Swallows each cancellation and waits again, until the test says stop."""
        while not stop:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                swallowed.append(1)
        return "finished anyway"

    session, _ = core(stubborn_async)
    before = asyncio.all_tasks()
    async for event in session.prompt("go"):
        if event["type"] == "tool_execution_start":
            async with asyncio.timeout(10 * ABORT_GRACE):
                await session.close()
            break
    assert not session.is_running and swallowed
    assert tool_results(session) == [
        f"Tool execution was aborted (the tool did not stop within {ABORT_GRACE:g} s; its late result is dropped)"
    ]
    left = asyncio.all_tasks() - before - {asyncio.current_task()}
    assert len(left) == 1, "the tool goes on in a task of its own"
    stop = True
    for task in left:
        task.cancel()
    await asyncio.gather(*left, return_exceptions=True)
    assert "finished anyway" not in str(session.messages)


@pytest.mark.parametrize("leave", ["break", "exception", "cancel"])
async def test_leaving_the_event_loop_early_leaves_the_session_ready(leave: str) -> None:
    session, model = core(stubborn)

    async def consume() -> None:
        async for event in session.prompt("go"):
            if event["type"] == "tool_execution_start":
                if leave == "break":
                    break
                if leave == "exception":
                    raise LookupError("the consumer failed")
                await asyncio.sleep(30)  # cancelled from outside

    task = asyncio.ensure_future(consume())
    if leave == "cancel":
        await asyncio.to_thread(started.wait, 10)
        task.cancel()
    with pytest.raises((LookupError, asyncio.CancelledError)) if leave != "break" else _nothing():
        await task
    # At once, not after wait_for_idle(): the next prompt waits for the aborted run itself.
    added = await session.prompt("next")
    assert [m["role"] for m in added] == ["user", "assistant"]
    assert as_assistant(added[-1])["stopReason"] == "stop" and tool_results(session)[0].startswith(
        "Tool execution was aborted"
    )
    assert not release.is_set()
    release.set()
    await session.close()
    assert model.requests[-1].context["messages"][-1]["content"] == "next"


async def test_cancelling_an_awaited_prompt_aborts_the_run() -> None:
    session, _ = core(stubborn)
    task = asyncio.ensure_future(session.prompt("go"))
    await asyncio.to_thread(started.wait, 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await session.wait_for_idle()
    assert tool_results(session)[0].startswith("Tool execution was aborted")
    assert as_assistant((await session.prompt("next"))[-1])["stopReason"] == "stop"
    release.set()
    await session.close()


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


@tether.tool
async def nap() -> str:
    """Sleeps long enough for the test to queue messages and abort it."""
    await asyncio.sleep(30)
    return "rested"


def user_texts(request: ScriptedRequest) -> list[str]:
    return [tether.message_text(m) for m in request.context["messages"] if m["role"] == "user"]


async def queue_then_abort(session: AgentSession, *, take_back: bool) -> None:
    """A run calls ``nap``; while it sleeps a steer and a follow-up are queued, (taken back,) aborted."""
    async for event in session.prompt("first"):
        if event["type"] == "tool_execution_start":
            session.steer("steer me")
            session.follow_up("later")
            if take_back:
                assert session.clear_queue() == QueueSnapshot(("steer me",), ("later",))
            session.abort()


async def test_an_abort_keeps_the_queues_for_the_next_prompt() -> None:
    """pi's ``AgentSession.abort`` leaves both queues (only its interactive Esc clears them): the
    steer goes right after the next prompt, the follow-up when that run would stop. pi drains the
    steering into the aborted run when the abort cuts a tool short; tether keeps it queued, as it
    does when the abort comes while the model streams (docs/rpc.md)."""
    model = ScriptedModel([reply(tool_call("nap", {})), reply("cut short"), reply("a"), reply("b")])
    session = AgentSession(Agent(model=model.model, stream_fn=model, tools=[nap]))
    await queue_then_abort(session, take_back=False)
    assert session.queued() == QueueSnapshot(("steer me",), ("later",))
    assert "steer me" not in str(session.messages)
    await session.prompt("next")
    assert [user_texts(r) for r in model.requests[-2:]] == [
        ["first", "next", "steer me"],
        ["first", "next", "steer me", "later"],
    ]
    assert session.queued() == QueueSnapshot((), ())
    await session.close()


async def test_messages_taken_back_before_an_abort_never_reach_the_model() -> None:
    """What pi's Esc (and tether's, and the serve page's Abort) does: ``clear_queue``, then abort."""
    model = ScriptedModel([reply(tool_call("nap", {})), reply("cut short"), reply("a")])
    session = AgentSession(Agent(model=model.model, stream_fn=model, tools=[nap]))
    await queue_then_abort(session, take_back=True)
    await session.prompt("next")
    assert user_texts(model.requests[-1]) == ["first", "next"]
    await session.close()


@pytest.mark.parametrize("started_first", [False, True])
async def test_an_abort_before_the_runs_first_step_aborts_it(started_first: bool) -> None:
    """pi 1.6: ``agent.prompt()`` then ``abort()`` before its first await ends the run as aborted
    (the prompt recorded, the reply ``aborted``). A ``Run`` starts on first use, so an abort
    between making it (or ``start()``, whose task has not run yet) and awaiting it is the same."""
    session, model = core()
    settled: list[object] = []
    session.subscribe(lambda e: settled.append(e.get("aborted")) if e["type"] == "agent_settled" else None)
    run = session.prompt("go")
    if started_first:
        run.start()
    session.abort()
    added = await run
    assert [m["role"] for m in added] == ["user", "assistant"]
    assert as_assistant(added[-1])["stopReason"] == "aborted" and settled == [True]
    assert [r.context["messages"][-1]["content"] for r in model.requests] in ([], ["go"])
    # The abort was that run's: the next one runs as usual.
    assert as_assistant((await session.prompt("next"))[-1])["stopReason"] == "stop"
    await session.close()


async def test_an_abort_with_nothing_running_spares_a_run_made_later() -> None:
    session, _ = core()
    session.abort()
    assert as_assistant((await session.prompt("go"))[-1])["stopReason"] == "stop"
    await session.close()


async def test_an_abort_of_a_running_run_spares_the_next_one_already_made() -> None:
    session, _ = core(deaf)
    first = asyncio.ensure_future(session.prompt("go"))
    while not session.agent.pending_tool_calls:
        await asyncio.sleep(0.01)
    second = session.prompt("next")
    session.abort()
    await first
    assert as_assistant((await second)[-1])["stopReason"] == "stop"
    await session.close()


async def test_an_abort_before_a_shell_input_starts_stops_the_command() -> None:
    """``!cmd`` is a run too: aborted before its first step, the command is stopped (it sleeps
    20 s; the run would otherwise wait for it)."""
    session, _ = core()
    run = session.submit("!sleep 20; echo late")
    session.abort()
    (message,) = await run
    assert message["role"] == "bashExecution" and message.get("cancelled") is True
    assert "late" not in str(message.get("output"))
    await session.close()


async def test_close_returns_while_a_prompt_hook_never_does() -> None:
    """A prompt hook gets no signal: one awaiting for ever is cut ``ABORT_GRACE`` after the
    abort (``close()`` aborts), so ``close()`` returns (it waited for ever before)."""
    entered = asyncio.Event()

    async def stuck(_editor: object) -> None:
        entered.set()
        await asyncio.Event().wait()

    model = ScriptedModel([reply("never asked")])
    subject = AgentSession(Agent(model=model.model, stream_fn=model), hooks=[stuck])
    run = asyncio.ensure_future(subject.prompt("hi"))
    async with asyncio.timeout(30):
        await entered.wait()
        await subject.close()
        added = await run
    assert "HookHungError" in str(as_assistant(added[-1]).get("errorMessage"))
    assert not model.requests


async def test_a_cancelled_wait_for_idle_leaves_the_run_alone() -> None:
    """``wait_for_idle()`` awaited the run through ``asyncio.gather``, which passes a cancellation
    on to what it gathers: a caller's ``asyncio.timeout`` around it cancelled the run itself
    (``prompt()`` raised ``CancelledError``). Now the run goes on to its end."""

    @tether.tool
    async def nap() -> str:
        """Sleeps a little."""
        await asyncio.sleep(0.3)
        return "rested"

    session, _ = core(nap)
    run = asyncio.ensure_future(session.prompt("go"))
    while not session.is_running:
        await asyncio.sleep(0.01)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await session.wait_for_idle()
    added = await run
    assert [m["role"] for m in added] == ["user", "assistant", "toolResult", "assistant"]
    assert tool_results(session) == ["rested"]
    await session.close()


def test_a_run_is_a_coroutine_that_asyncio_run_and_create_task_take() -> None:
    """``asyncio.run(core.prompt("hi"))`` raised "ValueError: a coroutine was expected, got
    <tether.session.events.Run ...>" (and ``asyncio.create_task`` a ``TypeError``), where
    ``asyncio.run(agent.prompt("hi"))`` works: a ``Run`` was only awaitable."""
    session, _ = core()
    added = asyncio.run(session.prompt("hi"))
    assert [m["role"] for m in added] == ["user", "assistant"]

    async def in_a_task() -> list[str]:
        task = asyncio.create_task(session.prompt("again"))
        await asyncio.sleep(0)
        assert session.is_running
        return [m["role"] for m in await task]

    assert asyncio.run(in_a_task()) == ["user", "assistant"]

    async def cancelled() -> None:
        task = asyncio.create_task(session.prompt("never answered"))
        while not session.is_running:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await session.wait_for_idle()  # the cancelled task aborted the run, which settled
        last = session.last_assistant()
        assert last is not None and last["stopReason"] == "aborted"
        await session.close()

    asyncio.run(cancelled())
