"""``compact()`` is one thing at a time, as a run is: a second ``compact()``, a prompt during one,
or a ``compact()`` beside a run raise ``AgentBusyError``; a tool or a listener of the run itself
still compacts between the run's steps, and a prompt after ``abort()`` waits for the aborted
compaction to settle. Before, each went on beside the other: two summaries of one conversation,
or a run whose next entries hung off a summary it never saw."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import tether.agent.abort_grace as grace_module
from session_helpers import assistant, text, user
from tether.agent import Agent, AgentBusyError, AgentTool, AgentToolResult
from tether.session import SessionManager
from tether.session.agent_session import AgentSession
from tether.session.budget import CompactionSettings
from tether.session.commands import execute
from tether.session.compaction import SUMMARY_SYSTEM_PROMPT, CompactionError
from tether.session.settings import Settings
from tether.testing.scripted import ScriptedModel, reply, tool_call

WORDS = "lorem ipsum dolor sit amet " * 40
TIMEOUT = 20


class HeldSummaries:
    """The scripted model, but a summary's request waits for ``release`` (or its abort), and once
    aborted answers only when ``settle`` is set: a model slow to stop."""

    def __init__(self, model: ScriptedModel) -> None:
        self.model = model
        self.asked = asyncio.Event()
        self.release = asyncio.Event()
        self.settle = asyncio.Event()
        self.settle.set()

    async def __call__(self, model: Any, context: Any, options: Any = None) -> Any:
        if context.get("systemPrompt") == SUMMARY_SYSTEM_PROMPT:
            self.asked.set()
            signal = options.signal
            released = asyncio.ensure_future(self.release.wait())
            aborted = asyncio.ensure_future(signal.wait())
            await asyncio.wait((released, aborted), return_when=asyncio.FIRST_COMPLETED)
            released.cancel()
            aborted.cancel()
            if signal.aborted:
                await self.settle.wait()
        return self.model(model, context, options)


class Waiting:
    """A ``wait`` tool: says it ``started``, then returns once ``finish`` is set."""

    def __init__(self) -> None:
        self.started, self.finish = asyncio.Event(), asyncio.Event()
        self.tool = AgentTool(
            name="wait", label="wait", description="waits", parameters={"type": "object"}, execute=self._wait
        )

    async def _wait(self, _id: str, _args: dict[str, Any], *_: Any) -> AgentToolResult[Any]:
        self.started.set()
        await self.finish.wait()
        return AgentToolResult(content=[text("waited")])


def _core(manager: SessionManager, *replies: Any, tools: list[AgentTool] | None = None) -> AgentSession:
    scripted = ScriptedModel(list(replies))
    session = manager.create("/p", model=scripted.model)
    for i in range(6):
        session.append_message(user(f"question {i}: {WORDS}"))
        session.append_message(assistant(text(f"answer {i}: {WORDS}")))
    settings = Settings(compaction=CompactionSettings(keep_recent_tokens=300))  # something to summarise
    agent = Agent(model=scripted.model, stream_fn=HeldSummaries(scripted), tools=tools or [])
    return AgentSession(agent, session, sessions=manager, settings=settings)


def _held(core: AgentSession) -> HeldSummaries:
    held = core.agent.stream_fn
    assert isinstance(held, HeldSummaries)
    return held


async def _compacting(core: AgentSession) -> asyncio.Future[Any]:
    work = asyncio.ensure_future(core.compact())
    async with asyncio.timeout(10):
        await _held(core).asked.wait()
    return work


async def test_a_second_compact_and_a_prompt_during_one_are_busy(manager: SessionManager) -> None:
    async with asyncio.timeout(TIMEOUT):  # a failure, not a hang, on a core that waits
        core = _core(manager, reply("THE SUMMARY"), reply("after"))
        first = await _compacting(core)
        with pytest.raises(AgentBusyError, match="a compaction is running"):
            await core.compact()
        with pytest.raises(AgentBusyError, match="a compaction is running"):
            await core.prompt("meanwhile")
        _held(core).release.set()
        assert (await first).summary == "THE SUMMARY"
        await core.prompt("now")  # the compaction over, a prompt runs
        assert core.compactions == 1 and core.last_assistant() is not None
        await core.close()


async def test_compact_beside_a_running_prompt_is_busy(manager: SessionManager) -> None:
    async with asyncio.timeout(TIMEOUT):  # a failure, not a hang, on a core that waits
        waiting = Waiting()
        core = _core(manager, reply(tool_call("wait")), reply("done"), tools=[waiting.tool])
        run = asyncio.ensure_future(_awaited(core.prompt("go")))
        await waiting.started.wait()
        with pytest.raises(AgentBusyError, match="the agent is running"):
            await core.compact()
        waiting.finish.set()
        await run
        assert core.compactions == 0
        await core.close()


async def _awaited(run: Any) -> Any:
    return await run


async def test_a_tool_of_the_run_compacts_between_steps(manager: SessionManager) -> None:
    async with asyncio.timeout(TIMEOUT):  # a failure, not a hang, on a core that waits
        core: AgentSession | None = None

        async def compact_now(_id: str, _args: dict[str, Any], *_: Any) -> AgentToolResult[Any]:
            assert core is not None
            result = await core.compact()
            return AgentToolResult(content=[text(f"compacted: {result.summary}")])

        tool = AgentTool(
            name="compact",
            label="compact",
            description="compacts",
            parameters={"type": "object"},
            execute=compact_now,
        )
        core = _core(manager, reply(tool_call("compact")), reply("TOOL SUMMARY"), reply("done"), tools=[tool])
        _held(core).release.set()
        await core.prompt("compact yourself")
        assert core.compactions == 1
        assert core.session is not None and core.session.messages[0]["role"] == "compactionSummary"
        await core.close()


async def test_a_task_a_past_run_left_is_not_the_run_going_on(manager: SessionManager) -> None:
    """A listener of the first run leaves a task behind; it calls ``compact()`` while the second
    run goes on. Its context names the first run: it is not a step of the second one."""
    async with asyncio.timeout(TIMEOUT):  # a failure, not a hang, on a core that waits
        waiting, go = Waiting(), asyncio.Event()
        left: list[asyncio.Task[Any]] = []
        core = _core(manager, reply("first"), reply(tool_call("wait")), reply("done"), tools=[waiting.tool])

        async def later() -> Any:
            await go.wait()
            return await core.compact()

        def listen(event: Any) -> None:
            if event["type"] == "agent_start" and not left:
                left.append(asyncio.ensure_future(later()))

        core.subscribe(listen)
        await core.prompt("first")
        second = asyncio.ensure_future(_awaited(core.prompt("second")))
        await waiting.started.wait()
        go.set()
        with pytest.raises(AgentBusyError, match="the agent is running"):
            await left[0]
        waiting.finish.set()
        await second
        assert core.compactions == 0
        await core.close()


async def test_a_prompt_after_abort_during_a_compaction_waits_for_it_to_settle(
    manager: SessionManager,
) -> None:
    async with asyncio.timeout(TIMEOUT):  # a failure, not a hang, on a core that waits
        core = _core(manager, reply("after"))
        held = _held(core)
        held.settle.clear()  # the aborted summary answers only when let go
        events: list[str] = []
        core.subscribe(lambda event: events.append(event["type"]))
        work = await _compacting(core)
        core.abort()
        run = asyncio.ensure_future(_awaited(core.prompt("next")))
        for _ in range(20):  # the run's task gets its turns while the summary is held
            await asyncio.sleep(0)
        assert "agent_start" not in events
        held.settle.set()
        with pytest.raises(CompactionError, match="aborted"):
            await work
        added = await run
        assert events.index("compaction_end") < events.index("agent_start")
        assert [m["role"] for m in added] == ["user", "assistant"] and core.compactions == 0
        await core.close()


async def test_a_prompt_after_abort_does_not_wait_for_ever_on_a_deaf_summary(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with asyncio.timeout(TIMEOUT):  # a failure, not a hang, on a core that waits
        monkeypatch.setattr(grace_module, "ABORT_GRACE", 0.05)
        core = _core(manager, reply("after"))
        held = _held(core)
        held.settle.clear()  # never set before the run is over: the summary ignores the abort
        work = await _compacting(core)
        core.abort()
        added = await core.prompt("next")  # the summary cancelled after ABORT_GRACE
        with pytest.raises(CompactionError, match="aborted"):
            await work
        assert [m["role"] for m in added] == ["user", "assistant"]
        await core.close()


async def test_abort_in_a_compaction_start_listener_aborts_the_summary(manager: SessionManager) -> None:
    async with asyncio.timeout(TIMEOUT):  # a failure, not a hang, on a core that waits
        core = _core(manager, reply("THE SUMMARY"))
        _held(core).release.set()

        def listen(event: Any) -> None:
            if event["type"] == "compaction_start":
                core.abort()

        core.subscribe(listen)
        with pytest.raises(CompactionError, match="aborted"):
            await core.compact()
        assert core.compactions == 0 and not _held(core).asked.is_set()  # no summary asked for
        await core.close()


async def test_a_command_during_a_compaction_is_one_line(manager: SessionManager) -> None:
    async with asyncio.timeout(TIMEOUT):  # a failure, not a hang, on a core that waits
        core = _core(manager, reply("THE SUMMARY"))
        work = await _compacting(core)
        result = await execute(core, "/compact")
        assert (
            result.error
            and result.text == "/compact is not available while a compaction runs (Esc aborts it)"
        )
        result = await execute(core, "/name other")
        assert (
            result.error and result.text == "/name is not available while a compaction runs (Esc aborts it)"
        )
        _held(core).release.set()
        await work
        await core.close()


async def test_a_listener_failing_on_compaction_start_leaves_no_compaction_behind(
    manager: SessionManager,
) -> None:
    """A ``compaction_start`` listener that raises fails the compaction before it began (no
    ``compaction_end`` follows): it was still counted as running, so ``is_compacting`` stayed true
    and every later command was refused "while a compaction runs"."""
    async with asyncio.timeout(TIMEOUT):  # a failure, not a hang, on a core that waits
        core = _core(manager, reply("THE SUMMARY"))
        _held(core).release.set()

        def listen(event: Any) -> None:
            if event["type"] == "compaction_start":
                raise RuntimeError("the listener broke")

        unsubscribe = core.subscribe(listen)
        with pytest.raises(RuntimeError, match="the listener broke"):
            await core.compact()
        assert not core.is_compacting and core.compactions == 0
        unsubscribe()
        result = await execute(core, "/name other")
        assert not result.error, result.text
        assert (await core.compact()).summary == "THE SUMMARY"
        await core.close()
