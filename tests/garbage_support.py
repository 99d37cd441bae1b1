"""What a run leaves for the garbage collector: a conversation with tool batches of every kind,
and the objects a collection finds unreachable after it (``tests/agent``, ``tests/telemetry``).

A finished run must leave nothing for the collector: what it made is freed by reference counting
as soon as the agent lets it go. A run that kept a reference cycle stayed in memory until a
collection found it: with many sessions in one process that is each finished run's batch, tool
results and events kept alive meanwhile, and the collector's passes over them paid for (P6);
under ``gc.disable()`` it was kept for ever."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any, Literal

from tether.agent import Agent, AgentTool, AgentToolResult
from tether.testing.scripted import ScriptedModel, reply, tool_call

PARAMETERS = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}


async def _instant(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
    return AgentToolResult(content=[{"type": "text", "text": params["value"]}])


async def _suspends(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
    on_update(AgentToolResult(content=[{"type": "text", "text": "working"}]))
    await asyncio.sleep(0)
    return AgentToolResult(content=[{"type": "text", "text": params["value"]}])


async def _raises(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
    raise ValueError(f"no {params['value']}")


TOOLS = [
    AgentTool(name="raises", label="raises", description="d", parameters=PARAMETERS, execute=_raises),
    AgentTool(name="instant", label="instant", description="d", parameters=PARAMETERS, execute=_instant),
    AgentTool(name="suspends", label="suspends", description="d", parameters=PARAMETERS, execute=_suspends),
]


async def conversation(tool_execution: Literal["parallel", "sequential"], **agent_options: Any) -> None:
    """Two prompts: a sequential or parallel batch of instant and suspending calls (one with an
    update), an unknown tool, invalid arguments, a tool that raises, then text; the agent is
    dropped at the end."""
    model = ScriptedModel(
        [
            reply(tool_call("instant", {"value": "a"}), tool_call("suspends", {"value": "b"})),
            reply(tool_call("instant", {"value": "c"}), tool_call("instant", {"value": "d"})),
            reply(tool_call("missing", {"value": "e"}), tool_call("instant", {"wrong": 1})),
            reply("done"),
            reply(tool_call("suspends", {"value": "f"}), tool_call("raises", {"value": "g"})),
            reply("done again"),
        ]
    )
    agent = Agent(
        model=model.model, stream_fn=model, tools=TOOLS, tool_execution=tool_execution, **agent_options
    )
    await agent.prompt("go")
    await agent.prompt("again")
    assert [m["role"] for m in agent.messages][-2:] == ["toolResult", "assistant"]
    last: Any = agent.messages[-1]
    assert last["content"] == [{"type": "text", "text": "done again"}]


@contextmanager
def garbage() -> Generator[list[Any]]:
    """The objects a collection finds unreachable from what ran inside (the collector off
    meanwhile, so nothing is collected behind the test's back)."""
    found: list[Any] = []
    gc.collect()
    gc.disable()
    try:
        yield found
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        found.extend(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def of_tether(objects: list[Any]) -> list[str]:
    return sorted({type(o).__qualname__ for o in objects if type(o).__module__.startswith("tether.")})


async def check_runs_leave_no_garbage(**agent_options: Any) -> None:
    """Fail unless a conversation (``Agent(**agent_options)``, in each tool mode) leaves nothing
    for a collection: first the types of tether's among what it found, then the count."""
    modes: tuple[Literal["parallel", "sequential"], ...] = ("parallel", "sequential")
    for mode in modes:
        await conversation(mode, **agent_options)  # every module and cache loaded: only the run's own below
        with garbage() as found:
            await conversation(mode, **agent_options)
        assert of_tether(found) == [], mode
        assert len(found) == 0, (
            f"{mode}: {len(found)} objects, of types {sorted({type(o).__name__ for o in found})}"
        )
