"""P4b: 1,000 concurrent sessions, each appending a 3-turn conversation, on SQLite and PostgreSQL.

What a service hosting many agents does: every session is open for writing at once (1,000 writer
locks held), and each appends its messages one at a time as its agent produces them, with a few
milliseconds of "model time" in between, so the appends of all sessions interleave. One asyncio
process runs the 1,000 conversations, each append in a worker thread (the store interface is
synchronous). PostgreSQL also runs as 4 processes of 250 sessions, sharing the server.

A turn is user prompt, assistant tool call, tool result, assistant answer: 12 appends per session,
12,000 in all. Afterwards every session is read back from a fresh store and must hold exactly its
12 messages, in order, as one chain, with matching counters: nothing lost, nothing duplicated.

Each configuration runs in fresh processes, so its peak RSS (``VmHWM``; ``ru_maxrss`` would include the parent's) is its own; the RSS
before opening the sessions (imports, store) is shown for reference. The PostgreSQL server is a
private one (``tether.testing.postgres``) with default, durable settings (fsync per commit).
"""

from __future__ import annotations

import asyncio
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _summary import peak_rss_mb
from _table import print_table
from tether.session import Session, SessionManager
from tether.store import open_store
from tether.store.postgres_store import PostgresStore
from tether.testing.postgres import INSTALL_HINT, find_bin_dir, postgres_server
from tether.wire import AgentMessage

SESSIONS = 1_000
TURNS = 3
THREADS = 16
MODEL_TIME = (0.0, 0.01)
"""Seconds an agent waits for its model between two appends (uniform)."""


def turn_messages(session: int, turn: int) -> list[AgentMessage]:
    tag = f"s{session} t{turn}"
    call_id = f"call_{session}_{turn}"
    usage = {
        "input": 1_000,
        "output": 50,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 1_050,
        "cost": {"input": 0.003, "output": 0.00075, "cacheRead": 0, "cacheWrite": 0, "total": 0.00375},
    }
    common = {
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": usage,
    }
    return [
        {"role": "user", "content": f"{tag}: please look at src/module_{turn}.py", "timestamp": 1},
        {"role": "assistant", "content": [{"type": "toolCall", "id": call_id, "name": "read",
         "arguments": {"path": f"src/module_{turn}.py"}}], "stopReason": "toolUse", "timestamp": 2, **common},
        {"role": "toolResult", "toolCallId": call_id, "toolName": "read",
         "content": [{"type": "text", "text": f"{tag}\n" + "def f(x):\n    return x * 2\n" * 40}],
         "isError": False, "timestamp": 3},
        {"role": "assistant", "content": [{"type": "text", "text": f"{tag}: the function doubles its input."}],
         "stopReason": "stop", "timestamp": 4, **common},
    ]  # type: ignore[list-item]  # fmt: skip


def expected(session: int) -> list[AgentMessage]:
    return [m for turn in range(TURNS) for m in turn_messages(session, turn)]


# -- one worker process -------------------------------------------------------------------------


async def converse(
    session: Session, index: int, pool: ThreadPoolExecutor, rng: random.Random, latencies: list[float]
) -> None:
    loop = asyncio.get_running_loop()

    def append(message: AgentMessage) -> None:  # timed in its thread: the store's time, not the queue's
        start = time.perf_counter()
        session.append_message(message)
        latencies.append(time.perf_counter() - start)

    for message in expected(index):
        await asyncio.sleep(rng.uniform(*MODEL_TIME))
        await loop.run_in_executor(pool, append, message)


async def run_sessions(location: str, first: int, count: int) -> dict[str, Any]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # SQLite: one lock file per open session
    store = (
        PostgresStore(location, max_connections=THREADS)
        if location.startswith("postgresql:")
        else open_store(location)
    )
    manager = SessionManager(store)
    rss_before = peak_rss_mb()
    sessions = [manager.create(f"/bench/{i}") for i in range(first, first + count)]
    latencies: list[float] = []
    rng = random.Random(first)
    start = time.perf_counter()
    with ThreadPoolExecutor(THREADS) as pool:
        await asyncio.gather(*(converse(s, first + i, pool, rng, latencies) for i, s in enumerate(sessions)))
    elapsed = time.perf_counter() - start
    peak = peak_rss_mb()
    ids = [s.id for s in sessions]
    for s in sessions:
        s.close()
    store.close()
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return {"ids": ids, "seconds": elapsed, "appends": len(latencies), "latencies": sorted(latencies),
            "rss_before_mb": rss_before, "peak_rss_mb": peak}  # fmt: skip


def verify(location: str, first: int, ids: list[str]) -> None:
    """Every session holds exactly its messages, once each, in order, as one chain."""
    with SessionManager.at(location) as manager:
        for i, session_id in enumerate(ids):
            s = manager.open(session_id, readonly=True)
            entries = s.entries()
            assert [e["message"] for e in entries] == expected(first + i), f"session {session_id} differs"
            assert [e["id"] for e in s.path()] == [e["id"] for e in entries]
            assert s.record.entry_count == s.record.message_count == TURNS * 4


def worker(location: str, first: int, count: int) -> None:
    result = asyncio.run(run_sessions(location, first, count))
    verify(location, first, result["ids"])
    json.dump({k: v for k, v in result.items() if k != "ids"}, sys.stdout)


# -- the benchmark ------------------------------------------------------------------------------


def spawn(location: str, processes: int) -> list[dict[str, Any]]:
    """Run the 1,000 sessions in ``processes`` processes at once; their results."""
    per = SESSIONS // processes
    children = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", location, str(p * per), str(per)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for p in range(processes)
    ]
    results: list[dict[str, Any]] = []
    for child in children:
        out, _ = child.communicate()
        if child.returncode != 0:
            raise RuntimeError(f"a worker failed with status {child.returncode}")
        results.append(json.loads(out))
    return results


def row(name: str, processes: int, results: list[dict[str, Any]]) -> list[str]:
    latencies = sorted(x for r in results for x in r["latencies"])
    appends = sum(r["appends"] for r in results)
    seconds = max(r["seconds"] for r in results)
    return [
        name,
        str(processes),
        str(appends),
        f"{seconds:.2f}",
        f"{appends / seconds:,.0f}",
        f"{statistics.median(latencies) * 1e3:.2f}",
        f"{latencies[int(0.99 * len(latencies))] * 1e3:.2f}",
        f"{max(r['rss_before_mb'] for r in results):.0f}",
        f"{max(r['peak_rss_mb'] for r in results):.0f}",
    ]


def main() -> None:
    rows: list[list[str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        rows.append(row("SQLite (one file, WAL)", 1, spawn(str(Path(tmp) / "sessions.db"), 1)))
    if find_bin_dir() is not None:
        with postgres_server(settings={}) as server:
            rows.append(row("PostgreSQL (loopback)", 1, spawn(server.url(), 1)))
            rows.append(row("PostgreSQL (loopback)", 4, spawn(server.url(), 4)))
    print_table(
        f"P4b {SESSIONS} concurrent sessions x {TURNS} turns ({TURNS * 4} appends each, "
        f"{THREADS} threads per process; all verified: nothing lost or duplicated)",
        [
            "store",
            "procs",
            "appends",
            "seconds",
            "appends/s",
            "p50 ms",
            "p99 ms",
            "RSS start MB",
            "peak RSS MB",
        ],
        rows,
    )
    if find_bin_dir() is None:
        print(f"(no PostgreSQL rows: the benchmark {INSTALL_HINT})")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        main()
