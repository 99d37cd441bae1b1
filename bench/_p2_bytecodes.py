"""P2's work in bytecodes: how many each contender executes per run, by layer and by function.

    .venv/bin/python bench/_p2_bytecodes.py          # tether, the floor, the semantic floor
    .venv/bin/python bench/_p2_bytecodes.py --top 40  # and each one's 40 dearest functions

Why bytecodes and not only callgrind's instructions: on P2 tether's CPU time over the floor's
(1.61x, interleaved rounds) follows its bytecodes over the floor's (1.60x) more closely than its
instructions over the floor's (1.38x): the work tether adds is interpreted Python, whose dispatch
costs cycles (mispredicted indirect branches: callgrind's branch simulation counts 1.56x the
floor's) that an instruction count does not show. The count is exact and repeatable under any
load, so one run says what a change removed and where (per function), where a CPU pair needs
rounds and an A/A control.

Counted with ``sys.settrace`` and ``f_trace_opcodes`` (the interpreter's own event per
bytecode; Python 3.11 has no ``sys.monitoring``), over one run after a warm-up. The harness's
frames (``once`` itself, the script it builds before its clock starts) are counted apart.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from types import CodeType, FrameType
from typing import Any

import p2_agent_loop as p2

Key = tuple[str, int, str]
"""A function: its file, first line and name."""

_FLOOR_TOOLS = {
    "_semantic_tools",
    "_validated",
    "_echo",
    "_echo_result",
    "__init__",
    "_parallel",
    "_finish",
    "_resumed",
    "_into",
    "_plain_end",
    "_semantic_end",
}
"""The floor's functions that run its tool batch (``_ToolResult.__init__`` among them)."""


_SCRIPTED_MODEL = {"__call__", "_play", "canonical_json", "_string"}
"""The functions of ``tether.testing.scripted`` that run while a response streams."""


def layer(filename: str, name: str) -> str:
    """The part of a P2 run a function belongs to, from its file (and, in the floor, its name)."""
    path = filename.replace("\\", "/")
    if "/asyncio/" in path or path.endswith(("/selectors.py", "/_weakrefset.py")):
        return "event loop"  # the weak set is asyncio's register of async generators
    if path.endswith(("/inspect.py", "/typing.py", "/dataclasses.py")):
        return "turn loop and events"  # the loop's isawaitable, cast and replace
    if path.endswith("/tether/testing/scripted.py"):
        # Playing the script is the model; writing it (``reply``, ``tool_call``...) is done
        # before the clock starts.
        return "model stream" if name in _SCRIPTED_MODEL else "harness"
    if path.endswith("/tether/ai/event_stream.py"):
        return "model stream"
    if "/json/" in path:
        return "model stream"  # the floor's scripted model writes its arguments with json.dumps
    if path.endswith("/_p2_floor.py"):
        if name == "count":
            return "sink"
        if name in ("_stream", "_pass"):
            return "model stream"
        if name in _FLOOR_TOOLS:
            return "tool batch"
        return "turn loop and events"  # ``run`` reads the stream and, in the plain floor, runs the tools
    if path.endswith("/p2_agent_loop.py"):
        if name == "emit":
            return "sink"
        if name == "echo_execute":
            return "tool batch"
        if name == "no_messages":
            return "turn loop and events"  # the steering and follow-up polls
        return "harness"
    if path.endswith(("/agent/tool_execution.py", "/agent/eager.py")) or "/agent/validation/" in path:
        return "tool batch"
    if path == "<tool arguments check>":  # the validation's code made for a tool's schema
        return "tool batch"
    if path == "<string>":  # a dataclass's generated __init__, named by its class (``count``)
        if name.startswith(("ToolCallBlock.", "ScriptedResponse.", "TextBlock.")):
            return "harness"  # the script, built before the clock starts
        return "tool batch"  # the tool's AgentToolResult
    if "/tether/" in path:
        return "turn loop and events"
    return "harness"


def count(run: Callable[[], Awaitable[object]]) -> Counter[Key]:
    """Bytecodes per function over one ``run`` (after one untraced, so every import is done)."""
    counts: Counter[Key] = Counter()
    generated: dict[CodeType, str] = {}
    """A dataclass's generated ``__init__`` (file ``<string>``): named by its class."""

    def trace(frame: FrameType, event: str, arg: Any) -> Callable[..., Any]:
        code: CodeType = frame.f_code
        if event == "call":
            frame.f_trace_opcodes = True
            if code.co_filename == "<string>" and code not in generated:
                generated[code] = f"{type(frame.f_locals.get('self')).__name__}.{code.co_name}"
        elif event == "opcode":
            counts[(code.co_filename, code.co_firstlineno, generated.get(code, code.co_name))] += 1
        return trace

    async def traced() -> None:
        await run()
        sys.settrace(trace)
        try:
            await run()
        finally:
            sys.settrace(None)

    asyncio.run(traced())
    return counts


CONTENDERS: dict[str, Callable[[], Awaitable[object]]] = {
    "tether": p2.once,
    "Python floor": p2.floor_once,
    "semantic floor": lambda: p2.floor_once(semantic=True),
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="P2's bytecodes per run, by layer and by function")
    parser.add_argument("--top", type=int, default=0, help="also each contender's N dearest functions")
    top = parser.parse_args(argv).top
    layers: dict[str, Counter[str]] = {}
    for name, run in CONTENDERS.items():
        counts = count(run)
        by_layer: Counter[str] = Counter()
        for (filename, _line, function), n in counts.items():
            by_layer[layer(filename, function)] += n
        layers[name] = by_layer
        if top:
            print(f"{name}: the {top} functions that execute the most bytecodes")
            for (filename, line, function), n in counts.most_common(top):
                print(
                    f"  {n:9,d}  {layer(filename, function):22} {filename.rsplit('/', 1)[-1]}:{line} {function}"
                )
    names = list(CONTENDERS)
    order = ["event loop", "model stream", "turn loop and events", "tool batch", "sink", "harness"]
    print(
        f"P2 bytecodes per run ({p2.TURNS} turns x {p2.CALLS} tool calls); the harness is outside the timing"
    )
    print(f"  {'layer':22}" + "".join(f"{n:>16}" for n in names))
    for part in order:
        print(f"  {part:22}" + "".join(f"{layers[n][part]:16,d}" for n in names))
    timed = {n: sum(v for k, v in layers[n].items() if k != "harness") for n in names}
    print(f"  {'total (timed)':22}" + "".join(f"{timed[n]:16,d}" for n in names))
    floor = timed["Python floor"]
    print(f"  {'over the floor':22}" + "".join(f"{timed[n] / floor:15.2f}x" for n in names))


if __name__ == "__main__":
    main(sys.argv[1:])
