"""A parallel batch without hooks against the same batch with an ``after_tool_call`` that
changes nothing: listeners must see the same events, in the same order, with the same results.

A batch without hooks is where a faster common case belongs (P2: three instant tools a turn, no
record per call; an attempt is on branch ``p2-lean-attempt``); such a path has to hand over to
the full steps for everything uncommon, and these batches put the uncommon at every position
among instant calls: a tool that raises, suspends, sends an update (at once or later), returns
no result; an unknown tool, invalid arguments; an abort while a tool runs. Each runnable call
must also run exactly once, in source order."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from agent_support import Recorder, check_invariants

from narrowing import is_json_array, is_json_object
from tether.agent import AgentContext, AgentLoopConfig, AgentTool, AgentToolResult, run_agent_loop
from tether.agent.hooks import AfterToolCallContext
from tether.ai.abort import AbortController, AbortSignal
from tether.testing.scripted import ScriptedModel, reply, tool_call
from tether.wire import AgentMessage

RAN: list[str] = []
"""The calls the tools ran, in the order they started: each runs once, whichever way."""

PARAMETERS = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}


def _text(value: str) -> AgentToolResult[Any]:
    return AgentToolResult(content=[{"type": "text", "text": value}], details={"value": value})


async def _instant(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
    RAN.append(call_id)
    return _text(params["value"])


async def _raises(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
    RAN.append(call_id)
    raise ValueError(f"no {params['value']}")


async def _suspends(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
    RAN.append(call_id)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    return _text(params["value"])


async def _updates_at_once(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
    RAN.append(call_id)
    on_update(_text("working on " + params["value"]))
    return _text(params["value"])


async def _updates_later(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
    RAN.append(call_id)
    await asyncio.sleep(0)
    on_update(_text("1/2 " + params["value"]))
    await asyncio.sleep(0)
    on_update(_text("2/2 " + params["value"]))
    return _text(params["value"])


async def _not_a_result(call_id: str, params: Any, signal: Any, on_update: Any) -> Any:
    RAN.append(call_id)
    return params["value"]


async def _until_abort(
    call_id: str, params: Any, signal: AbortSignal | None, on_update: Any
) -> AgentToolResult[Any]:
    RAN.append(call_id)
    assert signal is not None
    await signal.wait()
    return _text("stopped " + params["value"])


TOOLS = [
    AgentTool(name, name, name, PARAMETERS, execute)
    for name, execute in {
        "instant": _instant,
        "raises": _raises,
        "suspends": _suspends,
        "updates_at_once": _updates_at_once,
        "updates_later": _updates_later,
        "not_a_result": _not_a_result,
        "until_abort": _until_abort,
    }.items()
]

BATCHES = [  # the calls, and the order of their ends (immediate results at once, instant calls
    # in source order as they all start, the others as they finish)
    (["instant", "instant", "instant"], [0, 1, 2]),
    (["instant"], [0]),
    (["raises", "instant", "instant"], [0, 1, 2]),
    (["instant", "raises", "raises"], [0, 1, 2]),
    (["instant", "suspends", "instant"], [0, 2, 1]),
    (["suspends", "instant", "suspends"], [1, 0, 2]),
    (["instant", "instant", "suspends"], [0, 1, 2]),
    (["updates_at_once", "instant"], [0, 1]),
    (["instant", "instant", "updates_at_once"], [0, 1, 2]),
    (["instant", "updates_later", "instant"], [0, 2, 1]),
    (["instant", "not_a_result", "instant"], [0, 1, 2]),
    (["unknown", "instant", "invalid", "instant"], [0, 2, 1, 3]),
    (["invalid", "instant"], [0, 1]),
    (["instant", "until_abort", "instant"], [0, 2, 1]),
]


def _plain(value: Any) -> Any:
    """An event as data, without the timestamps (set by the clock)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if is_json_object(value):
        return {k: _plain(v) for k, v in value.items() if k != "timestamp"}
    if is_json_array(value):
        return [_plain(v) for v in value]
    return value


async def _unchanged(context: AfterToolCallContext, signal: AbortSignal | None) -> None:
    return None


async def _run(names: list[str], *, steps: bool, abortable: bool) -> tuple[Recorder, list[AgentMessage]]:
    calls: list[Any] = []
    for index, name in enumerate(names):
        arguments: dict[str, Any] = {"value": f"v{index}"} if name != "invalid" else {"other": 7}
        calls.append(tool_call("instant" if name == "invalid" else name, arguments, id=f"c{index}"))
    model = ScriptedModel([reply(*calls), reply("done")])
    config = AgentLoopConfig(
        model=model.model, tool_execution="parallel", after_tool_call=_unchanged if steps else None
    )
    controller = AbortController()
    recorder = Recorder()
    RAN.clear()
    tasks_before = asyncio.all_tasks()

    async def abort_while_running() -> None:
        while not any(
            e["type"] == "tool_execution_start" and e["toolName"] == "until_abort" for e in recorder.events
        ):
            await asyncio.sleep(0)
        await asyncio.sleep(0)
        controller.abort()

    async with asyncio.timeout(10):
        aborting = abortable and "until_abort" in names  # else the signal is passed, never aborted
        aborter = asyncio.get_running_loop().create_task(abort_while_running()) if aborting else None
        result = await run_agent_loop(
            [{"role": "user", "content": "go", "timestamp": 0}],
            AgentContext(tools=TOOLS),
            config,
            recorder,
            controller.signal if abortable else None,
            model,
        )
        if aborter is not None:
            await aborter
    await asyncio.sleep(0)
    assert asyncio.all_tasks() <= tasks_before, "a task outlived the run"
    check_invariants(recorder.trace(result))
    runnable = [f"c{i}" for i, name in enumerate(names) if name not in ("unknown", "invalid")]
    assert runnable == RAN, "each runnable call starts once, in source order"
    return recorder, result


CASES = [
    (names, ends, abortable)
    for names, ends in BATCHES
    for abortable in (False, True)
    if abortable or "until_abort" not in names  # it waits for an abort: with a signal only
]


@pytest.mark.parametrize(
    ("names", "ends", "abortable"), CASES, ids=["+".join(n) + ("-signal" if a else "") for n, _, a in CASES]
)
async def test_a_batch_without_hooks_reports_what_a_neutral_hook_reports(
    names: list[str], ends: list[int], abortable: bool
) -> None:
    common, common_result = await _run(names, steps=False, abortable=abortable)
    steps, steps_result = await _run(names, steps=True, abortable=abortable)
    assert _plain(common.events) == _plain(steps.events)
    assert _plain(common_result) == _plain(steps_result)
    assert [e["toolCallId"] for e in common.events if e["type"] == "tool_execution_end"] == [
        f"c{i}" for i in ends
    ]


async def test_updates_of_a_common_batch_come_before_the_ends_and_late_ones_are_dropped() -> None:
    leaked: list[Any] = []

    async def keeps_its_update(
        call_id: str, params: Any, signal: Any, on_update: Any
    ) -> AgentToolResult[Any]:
        leaked.append(on_update)
        return _text(params["value"])

    tool = AgentTool("keeps", "keeps", "", PARAMETERS, keeps_its_update)
    model = ScriptedModel(
        [
            reply(tool_call("keeps", {"value": "a"}, id="a"), tool_call("keeps", {"value": "b"}, id="b")),
            reply("ok"),
        ]
    )
    recorder = Recorder()
    config = AgentLoopConfig(model=model.model, tool_execution="parallel")
    await run_agent_loop(
        [{"role": "user", "content": "go", "timestamp": 0}],
        AgentContext(tools=[tool]),
        config,
        recorder,
        None,
        model,
    )
    for update in leaked:  # after the tools returned (and the run ended): dropped
        update(_text("too late"))
    await asyncio.sleep(0)
    assert "tool_execution_update" not in recorder.types
    assert [e["isError"] for e in recorder.events if e["type"] == "tool_execution_end"] == [False, False]
