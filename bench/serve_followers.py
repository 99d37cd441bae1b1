"""``tether serve`` under an audience: 1,000 SSE followers of one running session, and 100
sessions followed at once (10 followers each), on SQLite.

The server is a real ``tether serve`` process (scripted model, ``--yes``, no prompt limit), so its
CPU time (``/proc/PID/stat``) and peak memory (``VmHWM``) are its own. The followers are raw
asyncio sockets in this process (an HTTP client library would cost this 2-core machine more than
the server does); each counts the ``entry``, ``delta`` and ``dropped`` events it reads.

One scenario: start the session(s), connect every follower from the end (``?history=false``),
wait until each has its stream open, then prompt every session ``PROMPTS`` times; each answer
streams ``CHUNKS`` text deltas. It ends when every follower has every entry and every delta the
server stored and streamed (checked against the store), and reports the server's CPU for that
phase and for the joins, its resident memory before the followers came and its peak, and its
thread count (one feed thread per followed session, none per follower).

Scenarios alternate (one, many, one, many, ...), each in a fresh server; medians with spread.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from _table import print_table

REPEATS = 3
PROMPTS = 3
CHUNKS = 100
WAIT_SECONDS = 300.0
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Scenario:
    name: str
    sessions: int
    followers_per_session: int


ONE = Scenario("1 session x 1,000 followers", 1, 1_000)
MANY = Scenario("100 sessions x 10 followers", 100, 10)


@dataclass
class Follower:
    entries: int = 0
    deltas: int = 0
    dropped: int = 0
    opened: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class Result:
    join_cpu: float
    run_cpu: float
    rss_before_mb: float
    peak_mb: float
    threads: int
    delivered: int
    dropped: int


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def status(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


async def follow(port: int, path: str, follower: Follower) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode())
    try:
        while line := await reader.readline():
            if line.startswith(b"retry:"):
                follower.opened.set()
            elif line.startswith(b"event: entry"):
                follower.entries += 1
            elif line.startswith(b"event: delta"):
                follower.deltas += 1
            elif line.startswith(b"event: dropped"):
                follower.dropped += 1
    finally:
        writer.close()


async def settle(client: httpx2.AsyncClient, session_id: str) -> None:
    while (await client.get(f"/api/sessions/{session_id}/state")).json()["running"]:
        await asyncio.sleep(0.05)


async def scenario(work: Path, case: Scenario) -> Result:
    home = work / "home"
    script = work / "script.json"
    answer = {"content": [{"type": "text", "chunks": [f"word{i} " for i in range(CHUNKS)]}]}
    script.write_text(json.dumps({"responses": [answer] * (PROMPTS + 1)}), encoding="utf-8")
    database = work / f"sessions-{time.monotonic_ns()}.db"
    command = [sys.executable, "-m", "tether.cli", "serve", "--port", "0", "--yes", "--prompt-rate", "0"]
    command += ["--model", f"scripted:{script}", "--database", str(database)]
    env = {**os.environ, "TETHER_HOME": str(home)}
    server = await asyncio.create_subprocess_exec(
        *command, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    tasks: list[asyncio.Task[None]] = []
    try:
        assert server.stderr is not None
        line = (await server.stderr.readline()).decode()
        found = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", line)
        assert found, line
        port = int(found.group(1))
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            ids: list[str] = []
            for _ in range(case.sessions):
                started = await client.post("/api/sessions", json={"message": "start"})
                ids.append(started.json()["sessionId"])
            for session_id in ids:
                await settle(client, session_id)
            before = {s: len((await client.get(f"/api/sessions/{s}")).json()["entries"]) for s in ids}
            rss_before = status(server.pid, "VmRSS") / 1024
            followers = {s: [Follower() for _ in range(case.followers_per_session)] for s in ids}
            cpu0 = cpu_seconds(server.pid)
            for session_id, group in followers.items():
                path = f"/api/sessions/{session_id}/events?history=false"
                tasks += [asyncio.create_task(follow(port, path, f)) for f in group]
            async with asyncio.timeout(WAIT_SECONDS):
                for group in followers.values():
                    for f in group:
                        await f.opened.wait()
            cpu1 = cpu_seconds(server.pid)
            threads = status(server.pid, "Threads")
            for _ in range(PROMPTS):
                for session_id in ids:
                    answer_ = await client.post(f"/api/sessions/{session_id}/prompt", json={"message": "go"})
                    assert answer_.status_code == 202, answer_.text
                for session_id in ids:
                    await settle(client, session_id)
            expected = {
                s: len((await client.get(f"/api/sessions/{s}")).json()["entries"]) - before[s] for s in ids
            }
            async with asyncio.timeout(WAIT_SECONDS):
                while any(
                    f.entries < expected[s] and not f.dropped for s, group in followers.items() for f in group
                ):
                    await asyncio.sleep(0.05)
            cpu2 = cpu_seconds(server.pid)
            every = [f for group in followers.values() for f in group]
            dropped = sum(f.dropped > 0 for f in every)
            for s, group in followers.items():
                for f in group:
                    if not f.dropped:
                        assert f.entries == expected[s], (f.entries, expected[s])
                        assert f.deltas == PROMPTS * CHUNKS, (f.deltas, PROMPTS * CHUNKS)
            delivered = sum(f.entries + f.deltas for f in every)
            peak = status(server.pid, "VmHWM") / 1024
        return Result(cpu1 - cpu0, cpu2 - cpu1, rss_before, peak, threads, delivered, dropped)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        server.terminate()
        await server.wait()


def spread(values: list[float], unit: str, digits: int = 2) -> str:
    return (
        f"{statistics.median(values):.{digits}f} {unit} ({min(values):.{digits}f}-{max(values):.{digits}f})"
    )


def main() -> None:
    results: dict[str, list[Result]] = {ONE.name: [], MANY.name: []}
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="tether-bench-serve-") as tmp:
        for _ in range(REPEATS):
            for case in (ONE, MANY):
                results[case.name].append(asyncio.run(scenario(Path(tmp), case)))
    rows: list[list[Any]] = []
    for name, runs in results.items():
        rows.append(
            [
                name,
                spread([r.join_cpu for r in runs], "s"),
                spread([r.run_cpu for r in runs], "s"),
                spread([r.run_cpu / r.delivered * 1e6 for r in runs], "us", 1),
                spread([r.rss_before_mb for r in runs], "MB", 0),
                spread([r.peak_mb for r in runs], "MB", 0),
                str(runs[0].threads),
                str(runs[0].delivered),
                str(sum(r.dropped for r in runs)),
            ]
        )
    print_table(
        f"tether serve followers (SQLite; {PROMPTS} prompts x {CHUNKS} deltas per session; "
        f"medians of {REPEATS}, min-max; load average {load[0]:.2f} at start)",
        [
            "scenario",
            "server CPU: joins",
            "server CPU: run",
            "CPU per event sent",
            "RSS before",
            "peak (VmHWM)",
            "threads",
            "events sent",
            "dropped",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
