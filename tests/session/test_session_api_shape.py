"""One shape for ``Agent`` and ``AgentSession``: a one-argument and a two-argument listener work on
both, and ``steer``/``follow_up`` take a text or a message on both."""

from __future__ import annotations

from typing import Any

import tether
from tether.agent import Agent
from tether.ai.abort import AbortSignal
from tether.session.agent_session import AgentSession
from tether.testing.scripted import ScriptedModel, reply


def scripted(*answers: str) -> Agent:
    model = ScriptedModel([reply(a) for a in answers])
    return Agent(model=model.model, stream_fn=model)


async def test_both_call_one_and_two_argument_listeners() -> None:
    agent, core = scripted("a"), AgentSession(scripted("b"))
    for target in (agent, core):
        one: list[Any] = []
        two: list[tuple[str, bool]] = []
        target.subscribe(one.append)  # a bound method of one parameter: called with the event

        def with_signal(event: Any, signal: AbortSignal | None, seen: list[tuple[str, bool]] = two) -> None:
            seen.append((event["type"], isinstance(signal, AbortSignal)))

        target.subscribe(with_signal)
        await target.prompt("hi")
        assert "agent_end" in [e["type"] for e in one] and ("agent_end", True) in two
    await core.close()


async def test_both_steer_and_follow_up_with_text_or_message() -> None:
    message: tether.AgentMessage = {"role": "user", "content": "as a message", "timestamp": 0}
    agent = scripted("x")
    agent.steer("as text")
    agent.follow_up(message)
    assert [tether.message_text(m) for m in (*agent.steering_queue, *agent.follow_up_queue)] == [
        "as text",
        "as a message",
    ]
    core = AgentSession(scripted("y"))
    core.steer(message)
    core.follow_up("as text")
    assert (core.queued().steering, core.queued().follow_up) == (("as a message",), ("as text",))
    await core.close()
