"""P6b: 1,000 ``AgentSession`` runs at once in one event loop, stored on SQLite and on PostgreSQL.

Each session runs 3 prompts with the scripted model (a call of the ``echo`` tool, then a text),
so it stores 12 messages: what the store costs a service running many agents, without a network
model in the way (``p6_concurrency.py`` has that). Sessions are created ``deferred`` (stored with
their first message), as every front end creates them (CLI, RPC, ACP, ``tether serve``): the
bench measures what users get, not an eager start no front end takes. A run's appends go to the
store's writer thread, which commits those of all sessions that wrote meanwhile in one
transaction; on PostgreSQL (a private server on loopback, default durable settings) each commit
is a round trip and a disk flush, so the event loop must never wait for one. Measured per run,
each in a fresh process: wall time of the runs, CPU of the process and of the event loop's
thread, and the loop's stalls (a task sleeping 1 ms and noting how late it woke: p99 and worst).
Afterwards every session's row must count its 14 entries (two settings, 12 messages). Runs
alternate SQLite/PostgreSQL, medians shown; the ratio is the median of PostgreSQL's over
SQLite's per round, with its range. Before its timed window each worker runs
``WARM_UP_SESSIONS`` sessions on a store of its own (another file, another schema), so that what
tether imports lazily is imported then, not in the window; the output names any module imported
inside it anyway.

    python bench/p6_stored_runs.py
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from _summary import record
from _table import print_table
from p2_agent_loop import ECHO
from tether.agent import Agent
from tether.session import AgentSession, SessionManager
from tether.testing.postgres import INSTALL_HINT, find_bin_dir, postgres_server
from tether.testing.scripted import ScriptedModel, reply, text, tool_call

SESSIONS = 1_000
PROMPTS = 3
ROUNDS = 3
FIGURES = ("wall", "cpu", "loop_cpu", "stall_p99", "stall_max")
WARM_UP_SESSIONS = 10
"""Sessions run before the timed window, so that lazy imports happen outside it: several, because
some paths are taken only when sessions run side by side (the store's writer encodes a batch of
several sessions' entries with pydantic-core, imported on first use)."""
ENTRIES = 2 + PROMPTS * 4
"""Per session: the two settings entries, then per prompt the prompt, the call, its result, the text."""


async def run(location: str, sessions: int = SESSIONS) -> dict[str, float]:
    manager = SessionManager.at(location)
    cores: list[AgentSession] = []
    for i in range(sessions):
        model = ScriptedModel(
            [
                r
                for k in range(PROMPTS)
                for r in (reply(tool_call("echo", {"text": f"s{i} k{k}"})), reply(text("done")))
            ],
            keep_requests=False,  # a snapshot of the transcript per request is the bench's cost, not the store's
        )
        agent = Agent(model=model.model, stream_fn=model, tools=[ECHO])
        session = manager.create(f"/bench/{i}", deferred=True)
        cores.append(AgentSession(agent, session, cwd=Path(__file__).parent))
    stalls: list[float] = []
    running = True

    async def heartbeat() -> None:
        while running:
            start = time.perf_counter()
            await asyncio.sleep(0.001)
            stalls.append(time.perf_counter() - start - 0.001)

    async def conversation(i: int, core: AgentSession) -> None:
        for k in range(PROMPTS):
            await core.prompt(f"session {i} prompt {k}: call echo")

    beat = asyncio.create_task(heartbeat())
    wall, cpu, loop_cpu = time.perf_counter(), time.process_time(), time.thread_time()
    await asyncio.gather(*(conversation(i, core) for i, core in enumerate(cores)))
    wall, cpu, loop_cpu = time.perf_counter() - wall, time.process_time() - cpu, time.thread_time() - loop_cpu
    running = False
    await beat
    for core in cores:
        await core.close()
    counts = [record.entry_count for record in manager.list()]
    manager.close()
    if counts != [ENTRIES] * sessions:
        raise RuntimeError(f"expected {sessions} sessions of {ENTRIES} entries, found {sorted(set(counts))}")
    stalls.sort()
    return {
        "wall": wall,
        "cpu": cpu,
        "loop_cpu": loop_cpu,
        "stall_p99": stalls[int(len(stalls) * 0.99)],
        "stall_max": stalls[-1],
    }


def worker(location: str, warm_up: str) -> dict[str, Any]:
    """One measured run, after one session on ``warm_up`` (lazy imports are start-up, not the
    runs' cost), with the load average it ran under and the modules imported inside it."""
    asyncio.run(run(warm_up, sessions=WARM_UP_SESSIONS))
    gc.collect()
    imported = set(sys.modules)
    figures: dict[str, Any] = {**asyncio.run(run(location)), "load": os.getloadavg()[0]}
    return figures | {"late": sorted(set(sys.modules) - imported)}


def spawn(location: str, warm_up: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", location, warm_up], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out)


def fresh_schema(server_url: str, name: str) -> str:
    with psycopg.connect(server_url, autocommit=True) as db:
        db.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    return f"{server_url}?options=-csearch_path%3D{name}"


def main() -> None:
    if find_bin_dir() is None:
        print(f"P6b skipped: the benchmark {INSTALL_HINT}")
        return
    results: dict[str, list[dict[str, Any]]] = {"SQLite": [], "PostgreSQL": []}
    with tempfile.TemporaryDirectory() as tmp, postgres_server(settings={}) as server:
        for r in range(ROUNDS):
            lite = [str(Path(tmp) / f"{name}-{r}.db") for name in ("sessions", "warm-up")]
            results["SQLite"].append(spawn(*lite))
            pg = [fresh_schema(server.url(), f"{name}_{r}") for name in ("bench", "warm_up")]
            results["PostgreSQL"].append(spawn(*pg))
    median = {
        store: {key: statistics.median(run[key] for run in runs) for key in FIGURES}
        for store, runs in results.items()
    }
    rows = [
        [
            store,
            f"{m['wall']:.2f}",
            f"{m['cpu']:.2f}",
            f"{m['loop_cpu']:.2f}",
            f"{m['stall_p99'] * 1e3:.0f}",
            f"{m['stall_max'] * 1e3:.0f}",
            f"{min(r['load'] for r in results[store]):.1f}-{max(r['load'] for r in results[store]):.1f}",
        ]
        for store, m in median.items()
    ]
    paired = [
        pg["wall"] / lite["wall"] for pg, lite in zip(results["PostgreSQL"], results["SQLite"], strict=True)
    ]
    ratio = statistics.median(paired)
    rows.append(
        ["PostgreSQL / SQLite", f"{ratio:.2f}x ({min(paired):.2f}-{max(paired):.2f})", "", "", "", "", ""]
    )
    print_table(
        f"P6b {SESSIONS} AgentSession runs at once x {PROMPTS} prompts, scripted model, "
        f"{ENTRIES} entries each (medians of {ROUNDS}, alternating; load: the 1-minute load average "
        "at the end of each run)",
        ["store", "wall s", "CPU s", "loop thread CPU s", "stall p99 ms", "worst stall ms", "load (1 min)"],
        rows,
    )
    late = {name for runs in results.values() for r in runs for name in r["late"]}
    print(f"modules imported inside a timed window: {', '.join(sorted(late)) or 'none'}")
    record("stored runs wall, PostgreSQL", ratio, "the same runs on SQLite", samples=paired)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        print(json.dumps(worker(sys.argv[2], sys.argv[3])))
    else:
        main()
