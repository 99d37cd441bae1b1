"""A move with a summary (``/tree ID --summary``, ``AgentSession.branch(summarize=True)``) while a
run starts: RPC takes a prompt while ``/tree``'s summary is being written, as ``tether serve``
took one while the ``session_before_tree`` hooks were awaited. The summary's request is aborted
and the move refused; before, the leaf moved under the running prompt and the run's reply hung
off the summary, cut from the prompt it answered."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from session_helpers import MODEL, assistant, text, user
from tether.agent import Agent
from tether.session import SessionManager
from tether.session.agent_session import AgentSession
from tether.session.branching import BranchError
from tether.session.compaction import SUMMARY_SYSTEM_PROMPT
from tether.testing.scripted import ScriptedModel, reply


class GatedModel:
    """A scripted model whose calls each wait for a gate: the summary's until ``summary_go`` is
    set or its request aborted (unless ``deaf``: then it answers in full once let go), the run's
    until ``run_go``. ``asked`` lists the calls made."""

    def __init__(self, deaf: bool) -> None:
        self.scripted = ScriptedModel([], MODEL)
        self.deaf = deaf
        self.summary_go, self.run_go = asyncio.Event(), asyncio.Event()
        self.asked: list[str] = []
        self.summary_aborted = False

    async def __call__(self, model: Any, context: Any, options: Any = None) -> Any:
        signal = options.signal if options is not None else None
        if context.get("systemPrompt") == SUMMARY_SYSTEM_PROMPT:
            self.asked.append("summary")
            while not self.summary_go.is_set() and not (signal is not None and signal.aborted):
                await asyncio.sleep(0.01)
            self.summary_aborted = signal is not None and signal.aborted
            self.scripted.push(reply("SUMMARY of the branch left"))
            if self.deaf:
                await self.summary_go.wait()
                return self.scripted(model, context, None)
        else:
            self.asked.append("run")
            await self.run_go.wait()
            self.scripted.push(reply("the run's answer"))
        return self.scripted(model, context, options)


async def _until(condition: Any) -> None:
    async with asyncio.timeout(10):
        while not condition():
            await asyncio.sleep(0.01)


def _one_line(core: AgentSession) -> bool:
    """Whether every entry lies on the path to the last one (nothing cut off by a move)."""
    assert core.session is not None
    entries = core.session.entries()
    parents = {e["id"]: e.get("parentId") for e in entries}
    at: str | None = entries[-1]["id"]
    on_path = 0
    while at is not None:
        on_path += 1
        at = parents[at]
    return on_path == len(entries)


@pytest.mark.parametrize("deaf", [False, True], ids=["aborted", "deaf to the abort"])
async def test_a_run_that_starts_during_a_moves_summary_refuses_the_move(
    manager: SessionManager, deaf: bool
) -> None:
    session = manager.create("/p", model=MODEL)
    session.append_message(user("first"))
    first_answer = session.append_message(assistant(text("one")))
    session.append_message(user("second"))
    session.append_message(assistant(text("two")))
    model = GatedModel(deaf)
    core = AgentSession(Agent(model=MODEL, stream_fn=model), session, sessions=manager)
    try:
        move = asyncio.ensure_future(core.branch(first_answer, summarize=True))
        await _until(lambda: model.asked == ["summary"])
        run = asyncio.ensure_future(core.prompt("third"))
        await _until(lambda: model.asked == ["summary", "run"])
        if deaf:
            model.summary_go.set()  # the summary comes in whole all the same
        with pytest.raises(BranchError, match="run started"):
            async with asyncio.timeout(10):  # on main, the summary waited for its gate
                await move
        assert model.summary_aborted  # the request was aborted as the run started
        model.run_go.set()
        await run
        assert [(m["role"], m.get("content")) for m in core.messages][-2] == ("user", "third")
        assert core.messages[-1]["role"] == "assistant"
        assert _one_line(core)
        assert not any(e["type"] == "branch_summary" for e in session.entries())
    finally:
        model.summary_go.set()
        model.run_go.set()
        await core.close()
