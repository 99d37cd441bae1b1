"""P2: the agent loop, 200 turns x 3 parallel tool calls with the scripted model, in events/s.

The same scenario runs on the reference (``bench/reference/p2.mjs``: pi-agent-core with the
conformance oracle's scripted model) and the two figures are printed side by side. Both sides
yield to their event loop before each streamed block and delta, execute three instant tools
per turn in parallel mode, filter the transcript for the model before every call (tether: the
default ``convert_to_llm``, which the loop applies incrementally, reading only the messages
appended since its previous call; the reference re-reads the whole transcript), and count events
in an awaited emit sink.

    .venv/bin/python bench/p2_agent_loop.py     # installs bench/reference with npm ci if needed
    .venv/bin/python bench/p2_agent_loop.py --tracing

A third row is P2's Python floor (``_p2_floor.py``): the same events and event-loop passes with
nothing else an agent loop does. Tether over the floor is what tether's loop costs; the floor over
the reference is what CPython and asyncio cost on this workload, whatever the loop does (on this
machine the floor alone costs about as much CPU as pi-agent-core or more, so tether, which does
more than the floor, cannot reach the reference).

``--tracing`` measures tether with OpenTelemetry off and on, side by side, instead of the reference.
On: the SDK records every span (a batch processor feeding an exporter that drops them) and every
metric (an in-memory reader), content capture off: what an instrumented production run pays.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import _p2_floor
from _summary import record
from tether.agent import AgentContext, AgentEvent, AgentLoopConfig, AgentTool, AgentToolResult, run_agent_loop
from tether.telemetry import Instrumentation
from tether.testing.scripted import ScriptedModel, ScriptedResponse, reply, text, tool_call
from tether.wire import AgentMessage

TURNS = 200
CALLS = 3
REPEATS = 15
REFERENCE = Path(__file__).resolve().parent / "reference"


def script() -> list[ScriptedResponse]:
    turns = [
        reply(*(tool_call("echo", {"text": f"turn {t} call {c}"}, id=f"t{t}c{c}") for c in range(CALLS)))
        for t in range(TURNS)
    ]
    return [*turns, reply(text("all", " done"))]


async def echo_execute(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
    return AgentToolResult(content=[{"type": "text", "text": params["text"]}], details={})


ECHO = AgentTool(
    name="echo",
    label="echo",
    description="Echo text",
    parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    execute=echo_execute,
)


async def no_messages() -> list[AgentMessage]:
    return []


async def once(instrumentation: Instrumentation | None = None) -> tuple[int, float, float]:
    events = 0

    async def emit(event: AgentEvent) -> None:
        nonlocal events
        events += 1

    model = ScriptedModel(script())
    config = AgentLoopConfig(
        model=model.model,
        tool_execution="parallel",
        get_steering_messages=no_messages,
        get_follow_up_messages=no_messages,
        instrumentation=instrumentation,
    )
    context = AgentContext(system_prompt="bench", tools=[ECHO])
    prompt: AgentMessage = {"role": "user", "content": "go", "timestamp": int(time.time() * 1000)}
    cpu_start, start = time.process_time(), time.perf_counter()
    result = await run_agent_loop([prompt], context, config, emit, None, model)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    if len(result) != 1 + TURNS * (1 + CALLS) + 1:
        raise RuntimeError(f"unexpected result length {len(result)}")
    return events, seconds, cpu_seconds


async def measure(instrumentation: Instrumentation | None = None) -> tuple[int, float, float]:
    """Best of the repeats, by wall clock and by CPU time (the fair figure on a shared machine)."""
    await once(instrumentation)  # warm-up
    runs = [await once(instrumentation) for _ in range(REPEATS)]
    return runs[0][0], min(run[1] for run in runs), min(run[2] for run in runs)


async def floor_once() -> tuple[int, float, float]:
    cpu_start, start = time.process_time(), time.perf_counter()
    events, messages = await _p2_floor.run(TURNS, CALLS)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    if messages != 1 + TURNS * (1 + CALLS) + 1:
        raise RuntimeError(f"the floor's transcript has {messages} messages")
    return events, seconds, cpu_seconds


async def measure_floor() -> tuple[int, float, float]:
    """``measure`` for the Python floor."""
    await floor_once()
    runs = [await floor_once() for _ in range(REPEATS)]
    return runs[0][0], min(run[1] for run in runs), min(run[2] for run in runs)


def recording_instrumentation() -> Instrumentation:
    """The OpenTelemetry SDK recording everything, exporting nowhere."""
    from collections.abc import Sequence

    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Drop(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(Drop()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    return Instrumentation(tracer_provider=tracer_provider, meter_provider=meter_provider)


def print_tracing() -> None:
    off = asyncio.run(measure())
    on = asyncio.run(measure(recording_instrumentation()))
    print(f"P2 agent loop: {TURNS} turns x {CALLS} parallel tool calls, scripted model, best of {REPEATS}")
    print(
        f"  {'tracing':10} {'events':>6} {'wall ms':>8} {'events/s':>10} {'cpu ms':>8} {'events/cpu-s':>12}"
    )
    for name, (events, seconds, cpu_seconds) in (("off", off), ("on", on)):
        print(
            f"  {name:10} {events:6d} {seconds * 1e3:8.1f} {events / seconds:10.0f} "
            f"{cpu_seconds * 1e3:8.1f} {events / cpu_seconds:12.0f}"
        )
    print(f"  events/s on/off: {off[1] / on[1]:.2f}x wall, {off[2] / on[2]:.2f}x cpu")


def reference() -> dict[str, Any] | None:
    """Run the Node reference; ``None`` (with the reason printed) when Node is unavailable."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        print("reference: node/npm not found, skipped")
        return None
    if not (REFERENCE / "node_modules").exists():
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--silent"], cwd=REFERENCE, check=True)
    out = subprocess.run([node, "p2.mjs"], cwd=REFERENCE, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main(argv: list[str] | None = None) -> None:
    """``argv`` are this benchmark's options; ``bench/run.py`` passes none (its own argv names benchmarks)."""
    parser = argparse.ArgumentParser(description="P2: the agent loop in events/s")
    parser.add_argument("--tracing", action="store_true", help="OpenTelemetry off and on, side by side")
    if parser.parse_args(argv or []).tracing:
        print_tracing()
        return
    events, seconds, cpu_seconds = asyncio.run(measure())
    floor_events, floor_seconds, floor_cpu = asyncio.run(measure_floor())
    if floor_events != events:
        raise RuntimeError(f"the floor emitted {floor_events} events, tether {events}")
    rate, cpu_rate = events / seconds, events / cpu_seconds
    print(f"P2 agent loop: {TURNS} turns x {CALLS} parallel tool calls, scripted model, best of {REPEATS}")
    print(f"  {'':12} {'events':>6} {'wall ms':>8} {'events/s':>10} {'cpu ms':>8} {'events/cpu-s':>12}")
    print(
        f"  {'tether':12} {events:6d} {seconds * 1e3:8.1f} {rate:10.0f} {cpu_seconds * 1e3:8.1f} {cpu_rate:12.0f}"
    )
    print(
        f"  {'Python floor':12} {events:6d} {floor_seconds * 1e3:8.1f} {events / floor_seconds:10.0f} "
        f"{floor_cpu * 1e3:8.1f} {events / floor_cpu:12.0f}   bench/_p2_floor.py"
    )
    record("agent loop CPU", cpu_seconds / floor_cpu, "P2's Python floor")
    ref = reference()
    if ref is None:
        return
    print(
        f"  {'reference':12} {ref['events']:6d} {ref['seconds'] * 1e3:8.1f} {ref['eventsPerSecond']:10.0f} "
        f"{ref['cpuSeconds'] * 1e3:8.1f} {ref['eventsPerCpuSecond']:12.0f}   pi-agent-core 0.73.1, Node {_node_version()}"
    )
    record("agent loop wall", ref["eventsPerSecond"] / rate, "pi-agent-core 0.73.1", "<= 1")
    record("agent loop CPU", ref["eventsPerCpuSecond"] / cpu_rate, "pi-agent-core 0.73.1", "<= 1")
    print(
        f"  ratio tether/reference: {rate / ref['eventsPerSecond']:.2f}x wall, "
        f"{cpu_rate / ref['eventsPerCpuSecond']:.2f}x cpu; tether/floor {floor_cpu / cpu_seconds:.2f}x cpu, "
        f"floor/reference {ref['cpuSeconds'] / floor_cpu:.2f}x cpu (events per CPU second)"
    )


def _node_version() -> str:
    node = shutil.which("node")
    return subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip() if node else "?"


if __name__ == "__main__":
    main(sys.argv[1:])
