"""``@tool``: an ``AgentTool`` from a typed function, async or plain."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from tether.agent import (
    AgentToolResult,
    ToolArgumentsError,
    ToolUpdate,
    tool,
    tool_schema,
    validate_tool_arguments,
)
from tether.ai.abort import AbortController, AbortSignal


@tool
async def search(query: str, limit: Annotated[int, Field(ge=1, description="How many hits")] = 5) -> str:
    """Search the notes."""
    return f"{query}:{limit}"


async def test_schema_description_and_defaults_come_from_the_function() -> None:
    schema = tool_schema(search)
    assert schema["name"] == "search"
    assert schema["description"] == "Search the notes."
    properties = schema["parameters"]["properties"]
    assert set(properties) == {"query", "limit"}
    assert properties["limit"]["default"] == 5
    assert properties["limit"]["description"] == "How many hits"
    assert schema["parameters"]["required"] == ["query"]
    assert search.label == "search" and search.execution_mode is None


async def test_execute_validates_and_calls_the_function() -> None:
    args = validate_tool_arguments(search, "search", {"query": "cats", "limit": "2"})
    result = await search.execute("id-1", args, None, None)
    assert result.content == [{"type": "text", "text": "cats:2"}]
    with pytest.raises(ToolArgumentsError, match='Validation failed for tool "search"'):
        validate_tool_arguments(search, "search", {"limit": 0})


async def test_injected_parameters_are_not_arguments() -> None:
    seen: dict[str, Any] = {}

    @tool(name="run_job", label="Run job", execution_mode="sequential")
    async def job(
        steps: int, tool_call_id: str, signal: AbortSignal | None, on_update: ToolUpdate | None
    ) -> str:
        seen.update(id=tool_call_id, signal=signal)
        if on_update is not None:
            on_update(AgentToolResult(content=[{"type": "text", "text": "half"}]))
        return "done"

    assert set(tool_schema(job)["parameters"]["properties"]) == {"steps"}
    assert (job.name, job.label, job.execution_mode) == ("run_job", "Run job", "sequential")
    updates: list[AgentToolResult[Any]] = []
    controller = AbortController()
    args = validate_tool_arguments(job, "run_job", {"steps": 3})
    await job.execute("call-7", args, controller.signal, updates.append)
    assert seen == {"id": "call-7", "signal": controller.signal}
    assert [u.content for u in updates] == [[{"type": "text", "text": "half"}]]


class Hit(BaseModel):
    path: str
    line: int


async def test_return_values_become_results() -> None:
    @tool
    async def structured() -> list[Hit]:
        """Structured output."""
        return [Hit(path="a.py", line=3)]

    @tool
    async def custom() -> AgentToolResult[dict[str, int]]:
        """A full result."""
        return AgentToolResult(content=[{"type": "text", "text": "x"}], details={"n": 1}, terminate=True)

    out = await structured.execute("1", validate_tool_arguments(structured, "structured", {}), None, None)
    assert out.content == [{"type": "text", "text": '[{"path":"a.py","line":3}]'}]
    full = await custom.execute("2", validate_tool_arguments(custom, "custom", {}), None, None)
    assert full.details == {"n": 1} and full.terminate is True


def test_star_args_cannot_be_tool_arguments() -> None:
    async def star(*values: int) -> str:
        return ""

    with pytest.raises(TypeError, match=r"\*args"):
        tool(star)


async def test_a_plain_function_runs_in_a_worker_thread() -> None:
    import asyncio
    import threading

    ran_on: list[str] = []

    @tool
    def slow_sum(a: int, b: int) -> int:
        """Add two integers, slowly."""
        ran_on.append(threading.current_thread().name)
        threading.Event().wait(0.05)  # blocks this thread only
        return a + b

    assert tool_schema(slow_sum)["description"] == "Add two integers, slowly."
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    beat = asyncio.ensure_future(ticker())
    args = validate_tool_arguments(slow_sum, "slow_sum", {"a": 2, "b": "3"})
    result = await slow_sum.execute("id-1", args, None, None)
    beat.cancel()
    assert result.content == [{"type": "text", "text": "5"}]
    assert ran_on and ran_on[0] != threading.current_thread().name
    assert ticks > 0  # the event loop kept running while the function blocked


_ABANDONED_THREAD_PROGRAM = """
import asyncio, threading
import tether
from tether import ScriptedModel, reply, tool_call

@tether.tool
def hang() -> str:
    '''Never returns.'''
    threading.Event().wait()
    return "never"

async def main() -> None:
    model = ScriptedModel([reply(tool_call("hang", {})), reply("unused")])
    core = tether.AgentSession(tether.Agent(model=model.model, stream_fn=model, tools=[hang]))
    run = asyncio.ensure_future(core.prompt("go"))
    await asyncio.sleep(0.2)
    await core.close()  # aborts; the tool is left behind after the grace
    print(tether.message_text((await run)[2]).split(" (")[0])

asyncio.run(main())
print("exited")
"""


@pytest.mark.subprocess
def test_a_plain_function_left_running_after_an_abort_does_not_hold_the_program_open(
    tmp_path: Path,
) -> None:
    """Its thread was a ``to_thread`` worker: ``asyncio.run`` (and the interpreter's exit) waited
    for it, so a program whose hanging tool was abandoned never ended."""
    done = subprocess.run(
        [sys.executable, "-c", _ABANDONED_THREAD_PROGRAM],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TETHER_HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Tool execution was aborted", "exited"]


async def test_a_plain_function_raising_stop_iteration_fails_the_call() -> None:
    """``next()`` on an exhausted iterator in a plain tool: a future cannot hold StopIteration, so
    handed over as it was, the call never settled and the run hung."""
    import asyncio

    @tool
    def first_match(pattern: str) -> str:
        """The first name matching a pattern."""
        return next(name for name in ("a", "b") if name == pattern)

    args = validate_tool_arguments(first_match, "first_match", {"pattern": "z"})
    async with asyncio.timeout(10):  # a regression must fail, not hang
        with pytest.raises(RuntimeError, match="StopIteration") as raised:
            await first_match.execute("id-1", args, None, None)
    assert isinstance(raised.value.__cause__, StopIteration)


class Notes:
    """Tools on methods: each instance's tools work on that instance's notes."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    @tool
    async def find(self, query: str) -> str:
        """Find a note."""
        return f"{self.prefix}:{query}"

    @tool(name="count_notes")
    def count(self, limit: int = 3) -> str:
        """Count the notes."""
        return f"{self.prefix}:{limit}"

    @tool
    @classmethod
    def kind(cls, of: str) -> str:
        """The kind of a note."""
        return f"{cls.__name__}:{of}"

    @tool
    @staticmethod
    def plain(word: str) -> str:
        """A static method is a plain function."""
        return word


async def test_a_method_is_a_tool_bound_to_its_instance_without_self_in_the_schema() -> None:
    a, b = Notes("a"), Notes("b")
    for made in (a.find, a.count, Notes.kind, a.kind, Notes.plain):
        assert isinstance(made.parameters, type) and "self" not in made.parameters.model_fields, made.name
        assert "cls" not in tool_schema(made)["parameters"].get("properties", {})
    assert tool_schema(a.find)["parameters"]["required"] == ["query"]
    assert tool_schema(a.count)["name"] == "count_notes"
    assert tool_schema(a.find)["description"] == "Find a note."
    assert a.find is a.find and a.find is not b.find
    for made, args, expected in (
        (a.find, {"query": "x"}, "a:x"),
        (b.find, {"query": "y"}, "b:y"),
        (b.count, {}, "b:3"),
        (a.kind, {"of": "z"}, "Notes:z"),
        (Notes.plain, {"word": "w"}, "w"),
    ):
        result = await made.execute("id", validate_tool_arguments(made, made.name, args), None, None)
        assert result.content == [{"type": "text", "text": expected}]


def test_a_method_tool_taken_from_the_class_is_refused_in_one_line() -> None:
    from tether.agent import Agent

    with pytest.raises(TypeError, match=r"Notes.find: take it from an instance \(obj.find\)"):
        Agent(tools=[Notes.find])
