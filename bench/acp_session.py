"""Benchmark: ``tether --mode acp`` as an editor sees it, through the SDK's client.

Measured over stdio against a spawned process, median of several runs:
- start-up: spawn until the ``initialize`` answer;
- ``session/new``: a stored session, model and tools resolved (wall, and the agent process's CPU:
  every thread's ``schedstat`` run time, Linux);
- a short turn: ``session/prompt`` of a one-chunk scripted answer, until the response;
- streaming: a turn of ``CHUNKS`` text deltas, as ``session/update`` notifications per second.

Reference: the same requests against a bare agent written with the same SDK (this file run with
``--reference-agent``), which answers from the same script without a runtime, session store or
tools. The ratio is tether's cost on top of the SDK's own floor.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

import acp
from acp.schema import AgentCapabilities, InitializeResponse, NewSessionResponse, PromptResponse

RUNS = 5
TURNS = 10
CHUNKS = 2000
HERE = Path(__file__).resolve()


class Recorder:
    def __init__(self) -> None:
        self.updates = 0

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates += 1


async def measure(argv: list[str], env: dict[str, str], cwd: str) -> dict[str, float]:
    client = Recorder()
    start = time.perf_counter()
    # the SDK answers what the recorder lacks with "method not found": it takes only updates
    async with acp.spawn_agent_process(cast(acp.Client, client), argv[0], *argv[1:], env=env, cwd=cwd) as (
        conn,
        process,
    ):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        started, cpu = time.perf_counter(), process_cpu(process.pid)
        session = await conn.new_session(cwd=cwd, mcp_servers=[])
        created, new_cpu = time.perf_counter(), process_cpu(process.pid) - cpu
        turns: list[float] = []
        for _ in range(TURNS):
            before = time.perf_counter()
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("hi")])
            turns.append(time.perf_counter() - before)
        client.updates = 0
        before = time.perf_counter()
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("stream")])
        streamed = time.perf_counter() - before
        assert client.updates == CHUNKS, client.updates
    return {
        "startup": started - start,
        "new": created - started,
        "new cpu": new_cpu,
        "turn": statistics.median(turns),
        "rate": CHUNKS / streamed,
    }


def process_cpu(pid: int) -> float:
    """Seconds of CPU the process's threads have run (nanoseconds in ``/proc``, where ``stat``'s
    ticks are 10 ms: coarser than what is measured)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            total += int((task / "schedstat").read_text().split()[0])
    return total / 1e9


def script(path: Path) -> None:
    short = {"content": [{"type": "text", "chunks": ["hello"]}]}
    stream = {"content": [{"type": "text", "chunks": [f"w{i} " for i in range(CHUNKS)]}]}
    path.write_text(json.dumps({"responses": [short] * TURNS + [stream]}))


async def run_all() -> tuple[list[dict[str, float]], list[dict[str, float]]]:
    """tether's and the bare agent's figures, one dict per run, runs interleaved."""
    with tempfile.TemporaryDirectory() as home:
        script_path = Path(home) / "script.json"
        script(script_path)
        env = {**os.environ, "TETHER_HOME": home, "TETHER_SCRIPTED": str(script_path), "NO_COLOR": "1"}
        tether = [sys.executable, "-m", "tether.cli", "--mode", "acp"]
        reference = [sys.executable, str(HERE), "--reference-agent"]
        ours: list[dict[str, float]] = []
        theirs: list[dict[str, float]] = []
        for _ in range(RUNS):  # interleaved, so a change in the machine's load hits both alike
            ours.append(await measure(tether, env, home))
            theirs.append(await measure(reference, env, home))
    return ours, theirs


MEASURES = (  # key, label, unit, format, recorded as
    ("startup", "start-up to initialize (ms)", 1e3, ".0f", "start-up to initialize"),
    ("new", "session/new (ms)", 1e3, ".1f", "session/new"),
    ("new cpu", "session/new CPU (ms)", 1e3, ".1f", "session/new CPU"),
    ("turn", "short turn (ms)", 1e3, ".1f", "short turn"),
    ("rate", "streamed updates / s", 1, ".0f", ""),
)


def main() -> None:
    from _summary import record_paired
    from _table import print_table

    name = "tether --mode acp"
    ours, theirs = asyncio.run(run_all())
    rows: list[list[str]] = []
    for key, label, unit, fmt, recorded in MEASURES:
        mine, ref = [r[key] for r in ours], [r[key] for r in theirs]
        if key == "rate":  # a throughput: the cost is its inverse
            paired = [b / a for a, b in zip(mine, ref, strict=True)]
        else:
            paired = record_paired(recorded, mine, ref, name)
        ratio = f"{statistics.median(paired):.2f} ({min(paired):.2f}-{max(paired):.2f})"
        median_mine, median_ref = statistics.median(mine) * unit, statistics.median(ref) * unit
        rows.append([label, format(median_mine, fmt), format(median_ref, fmt), ratio])
    print_table(
        f"{name}: median of {RUNS} processes ({TURNS} short turns, {CHUNKS}-chunk stream each); "
        "reference: a bare agent on the same SDK; x floor: the median of the per-run ratios (range)",
        ["measure", "tether", "SDK floor", "x floor (cost)"],
        rows,
    )


# -- the reference agent ------------------------------------------------------------------------


class BareAgent:
    """Answers each prompt with the next scripted response's text chunks, nothing else."""

    def __init__(self) -> None:
        data = json.loads(Path(os.environ["TETHER_SCRIPTED"]).read_text())
        self._responses = [[c for block in r["content"] for c in block["chunks"]] for r in data["responses"]]
        self._conn: Any = None

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **_: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=protocol_version, agent_capabilities=AgentCapabilities())

    async def new_session(self, cwd: str, **_: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id="bare")

    async def prompt(self, session_id: str, prompt: Any, **_: Any) -> PromptResponse:
        for chunk in self._responses.pop(0):
            await self._conn.session_update(
                session_id=session_id, update=acp.update_agent_message_text(chunk)
            )
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    if sys.argv[1:] == ["--reference-agent"]:
        asyncio.run(acp.run_agent(BareAgent()))  # type: ignore[arg-type]
    else:
        sys.path.insert(0, str(HERE.parent))
        main()
