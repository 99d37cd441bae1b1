"""What an abort does to the queues, against real pi 1.6.0 (``pi --mode rpc``): the same commands
to both agents on one faux OpenAI-compatible server (``pi16_parity``), then what reached the model.

pi 1.6's ``abort`` leaves the queues alone (``AgentSession.abort`` aborts the agent and waits;
``Agent.abort`` aborts the run's signal), so a steer and a follow-up queued before an abort still
reach the model with the next prompt; ``clear_queue`` before the abort (what pi's Esc does) keeps
them away. One difference on purpose (docs/rpc.md): when the abort cuts a tool short, pi drains
the steer into the aborted run (before the next prompt, unanswered), tether keeps it queued (after
the next prompt, as both do when the abort comes while the model streams).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pi16_parity import Agent, Driver, bash_call, faux_openai, pi_agent, tether_agent, text

from pi_packages import PI_16, installed

pytestmark = [pytest.mark.node, pytest.mark.subprocess]

REPLIES = [
    bash_call("sleep 30", "call_1"),  # "run it": aborted while the tool runs
    text("one"),  # "next" (with the steer)
    text("two"),  # the follow-up
    bash_call("sleep 30", "call_2"),  # "again": queue taken back, then aborted
    text("three"),  # "last"
]


async def _queue_during_tool(driver: Driver, prompt: str, steer: str, follow_up: str) -> int:
    since = driver.mark()
    await driver.command("prompt", message=prompt)
    await driver.wait_for(lambda f: f.get("type") == "tool_execution_start", since)
    await driver.command("steer", message=steer)
    await driver.command("follow_up", message=follow_up)
    return since


async def _prompt(driver: Driver, message: str) -> None:
    since = driver.mark()
    await driver.command("prompt", message=message)
    await driver.settled(since)


async def _converse(agent: Agent) -> dict[str, Any]:
    driver = await agent.start()
    try:
        since = await _queue_during_tool(driver, "run it", "steer me", "later")
        await driver.command("abort")
        await driver.settled(since)
        await _prompt(driver, "next")
        since = await _queue_during_tool(driver, "again", "steer again", "later again")
        taken = await driver.command("clear_queue")
        await driver.command("abort")
        await driver.settled(since)
        await _prompt(driver, "last")
        pending = (await driver.command("get_state"))["data"]["pendingMessageCount"]
    finally:
        await driver.close()
    return {"taken": taken["data"], "pending": pending}


def _user_texts(request: dict[str, Any]) -> list[str]:
    """The user messages of one chat-completions request (a string or text parts, by agent)."""
    said: list[str] = []
    for message in request["messages"]:
        if message["role"] != "user":
            continue
        content = message["content"]
        said.append(content if isinstance(content, str) else "".join(p["text"] for p in content))
    return said


async def test_an_abort_leaves_the_queues_and_clear_queue_before_it_drops_them(tmp_path: Path) -> None:
    pi = installed(PI_16)
    seen: dict[str, tuple[dict[str, Any], list[list[str]]]] = {}
    makers: tuple[tuple[str, Callable[[str, Path], Agent]], ...] = (
        ("pi", lambda url, root: pi_agent(pi.node, pi.package, url, root)),
        ("tether", tether_agent),
    )
    for name, make in makers:
        with faux_openai(REPLIES) as faux:
            answers = await _converse(make(faux.base_url, tmp_path / name))
            seen[name] = (answers, [_user_texts(r) for r in faux.requests])
    (pi_answers, pi_said), (ours, our_said) = seen["pi"], seen["tether"]
    assert (
        ours
        == pi_answers
        == {"taken": {"steering": ["steer again"], "followUp": ["later again"]}, "pending": 0}
    )
    assert len(our_said) == len(pi_said) == len(REPLIES)  # no call for the aborted turns
    # the abort kept the steer: it reached the model with the next prompt, the follow-up after it
    assert pi_said[1] == ["run it", "steer me", "next"]  # pi drained it into the aborted run
    assert our_said[1] == ["run it", "next", "steer me"]  # tether kept it queued
    assert pi_said[2][-1] == our_said[2][-1] == "later"
    # taken back before the abort: neither reaches the model
    assert pi_said[4][-2:] == our_said[4][-2:] == ["again", "last"]
    assert sorted(pi_said[4]) == sorted(our_said[4])
