"""Durable runs survive SIGKILLed workers: real `tether worker` processes, real databases.

PostgreSQL: two workers take 20 runs; one is killed mid-stream, the other mid-tool, and a third
starts, with room for every run; the live worker recovers both dead workers' runs (within 30 s of
each kill) and every run completes. SQLite: two workers, one killed mid-stream and restarted
under its name, which resumes its own runs itself (the other worker recovers none). Each time: every transcript is valid (each tool call has exactly one
result, nothing duplicated or missing) and the workload's counter file shows that no finished
step ran twice (``workload.py``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tether.durable.client import DurableClient
from tether.durable.config import DurableConfig
from tether.durable.steps import interrupted_text
from tether.session.manager import SessionManager
from tether.testing.postgres import PostgresServer

pytestmark = pytest.mark.subprocess

SRC = Path(__file__).resolve().parents[2] / "src"
HERE = Path(__file__).resolve().parent
MODEL = "anthropic/claude-sonnet-4-5"
RUNS = 20
RECOVERY_SECONDS = 30
STREAM_DELAY = 0.5
"""Seconds before each event of a model stream but the last: a stream, 8 events, lasts 3.5 s
or more (``workload.py``)."""
IN_FLIGHT = 3
"""A worker is killed once this many of its calls are under way..."""
FRESH_SECONDS = 7 * STREAM_DELAY - 1
"""... and, for model calls, none started longer ago than this: a second or more before any of
them can end. (At 1.5 s a loaded machine could miss every moment: the first run, submitted
before the others, may start its streams more than 1.5 s before theirs, in both turns; no moment
then had three fresh streams and no stale one.)"""
ENDED_SECONDS = 0.5
"""... and none ended more recently than this (its checkpoint may not be written yet)."""


@dataclass
class Cluster:
    """Worker processes on shared databases, and the counter file their tools write."""

    tmp: Path
    sessions: str
    system: str
    workers: dict[str, subprocess.Popen[bytes]]
    tool_seconds: float | Path = 3
    """How long the ``work`` tool of the workers started from now on sleeps (a file: the number
    in it when the call starts)."""

    @property
    def counter(self) -> Path:
        return self.tmp / "counter"

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "PYTHONPATH": f"{SRC}{os.pathsep}{HERE}",
            "TETHER_HOME": str(self.tmp / "home"),
            "TETHER_DATABASE_URL": self.sessions,
            "TETHER_DURABLE_DATABASE_URL": self.system,
            "TETHER_TEST_COUNTER": str(self.counter),
            **(
                {"TETHER_TEST_TOOL_SECONDS_FILE": str(self.tool_seconds)}
                if isinstance(self.tool_seconds, Path)
                else {"TETHER_TEST_TOOL_SECONDS": str(self.tool_seconds)}
            ),
            "TETHER_TEST_STREAM_DELAY": str(STREAM_DELAY),
        }

    def start(self, name: str, *limits: str) -> int:
        """Start a worker (``limits``: its concurrency flags; default ``--concurrency 10``)."""
        log = (self.tmp / f"{name}.log").open("ab")
        command = [sys.executable, "-m", "tether.cli", "worker", "--name", name]
        command += limits or ("--concurrency", "10")
        command += ["--setup", "workload:setup", "--model", MODEL]
        process = subprocess.Popen(command, env=self.env(), cwd=self.tmp, stdout=log, stderr=log)
        self.workers[name] = process
        wait_for(lambda: b"taking runs" in (self.tmp / f"{name}.log").read_bytes(), 60, f"worker {name}")
        return process.pid

    def kill(self, name: str) -> float:
        process = self.workers.pop(name)
        process.send_signal(signal.SIGKILL)
        process.wait()
        return time.time()

    def lines(self) -> list[list[str]]:
        """``[kind, pid, session, what, time]`` per counter line."""
        if not self.counter.exists():
            return []
        return [line.split() for line in self.counter.read_text().splitlines()]

    def stop(self) -> None:
        for process in self.workers.values():
            process.send_signal(signal.SIGTERM)
        for process in self.workers.values():
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def wait_for(done: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def open_calls(cluster: Cluster, pid: int, kind: str) -> dict[tuple[str, str], float]:
    """(session, what) started by ``pid`` and not finished by it (``kind``: model or tool), with
    the time each started."""
    started: dict[tuple[str, str], float] = {}
    for line in cluster.lines():
        key = (line[2], line[3])
        if line[1] == str(pid) and line[0] == f"{kind}-start":
            started[key] = float(line[4])
        elif line[1] == str(pid) and line[0] == f"{kind}-done":
            started.pop(key, None)
    if kind == "tool":
        started = {(s, w): t for (s, w), t in started.items() if w.endswith("-work")}
    return started


def well_inside(cluster: Cluster, pid: int, kind: str) -> bool:
    """At least ``IN_FLIGHT`` calls of ``pid`` of ``kind`` under way, and no model call of
    ``pid`` near its end.

    A kill in the instant between a model call's last event and its checkpoint makes that call
    run again, as it must (it had not finished); the test times its kills away from that instant
    so that the counter can say that no *finished* step ran twice. (A tool call cut there is
    answered "interrupted", not run again, so any moment of a tool call will do.)"""
    if len(open_calls(cluster, pid, kind)) < IN_FLIGHT:
        return False
    now = time.time()
    streams = open_calls(cluster, pid, "model").values()
    ended = [float(line[4]) for line in cluster.lines() if line[0] == "model-done" and line[1] == str(pid)]
    return all(now - started < FRESH_SECONDS for started in streams) and all(
        now - t > ENDED_SECONDS for t in ended
    )


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Callable[[str, str], Cluster]]:
    made: list[Cluster] = []

    def make(sessions: str, system: str) -> Cluster:
        (tmp_path / "home").mkdir(exist_ok=True)
        made.append(Cluster(tmp_path, sessions, system, {}))
        return made[-1]

    yield make
    for c in made:
        c.stop()


def new_session(cluster: Cluster) -> str:
    workspace = cluster.tmp / "workspace"
    workspace.mkdir(exist_ok=True)
    with SessionManager.at(cluster.sessions) as sessions:
        session = sessions.create(workspace)
        session.close()
    return session.id


def submit_all(cluster: Cluster, count: int = RUNS) -> dict[str, str]:
    """``count`` sessions, a run submitted on each (the library call): session id -> run id."""
    with DurableClient(config(cluster)) as client:
        return {
            session: client.submit(session, "go") for session in [new_session(cluster) for _ in range(count)]
        }


@dataclass
class Follower:
    """``tether submit SESSION go --follow --json`` in a process of its own."""

    process: subprocess.Popen[bytes]
    run_id: str
    out: Path

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.out.read_text().splitlines()]


def follow(cluster: Cluster, session: str) -> Follower:
    out, err = cluster.tmp / "follow.out", cluster.tmp / "follow.err"
    command = [sys.executable, "-m", "tether.cli", "submit", session, "go", "--follow", "--json"]
    process = subprocess.Popen(
        command, env=cluster.env(), cwd=cluster.tmp, stdout=out.open("wb"), stderr=err.open("wb")
    )
    wait_for(lambda: err.read_text().startswith("run "), 60, "the follower's run id")
    return Follower(process, err.read_text().split()[1], out)


def config(cluster: Cluster) -> DurableConfig:
    return DurableConfig(system_database=cluster.system, sessions=cluster.sessions)


def wait_for_runs(cluster: Cluster, runs: dict[str, str], seconds: float) -> None:
    with DurableClient(config(cluster)) as client:
        wait_for(
            lambda: all(client.status(run) in ("SUCCESS", "ERROR") for run in runs.values()), seconds, "runs"
        )
        statuses = {session: client.status(run) for session, run in runs.items()}
    assert set(statuses.values()) == {"SUCCESS"}, statuses


def check_transcripts(cluster: Cluster, runs: dict[str, str]) -> dict[str, str]:
    """Every session holds one valid run; returns how each session's ``work`` call ended."""
    endings: dict[str, str] = {}
    with SessionManager.at(cluster.sessions) as sessions:
        for session_id in runs:
            entries = sessions.store.entries(session_id)
            assert len({e.id for e in entries}) == len(entries)
            messages: list[dict[str, Any]] = [
                json.loads(e.payload)["message"] for e in entries if e.type == "message"
            ]
            roles = [m["role"] for m in messages]
            assert roles == ["user", "assistant", "toolResult", "toolResult", "assistant"], (
                session_id,
                roles,
            )
            calls = [b["id"] for b in messages[1]["content"] if b["type"] == "toolCall"]
            results = [m["toolCallId"] for m in messages if m["role"] == "toolResult"]
            assert sorted(calls) == sorted(results) == sorted({*results})
            work = next(m for m in messages if m["role"] == "toolResult" and m["toolName"] == "work")
            text = work["content"][0]["text"]
            assert text in ("worked on a", interrupted_text("work")), text
            endings[session_id] = "interrupted" if work["isError"] else "worked"
            assert messages[4]["content"][0]["text"] == "all work is done"
    return endings


def check_counter(cluster: Cluster, endings: dict[str, str]) -> None:
    """No finished step ran twice: one ``model-done`` per model call; a ``work`` call (not
    rerunnable) started at most once, and finished once when its result says it worked. (An
    interrupted call may never have started: its start is checkpointed just before it runs.)"""
    lines = cluster.lines()
    done = Counter((line[0], line[2], line[3]) for line in lines if line[0].endswith("-done"))
    started = Counter(line[3] for line in lines if line[0] == "tool-start")
    for session, ending in endings.items():
        assert done[("model-done", session, "0")] == 1
        assert done[("model-done", session, "1")] == 1
        if ending == "worked":
            assert started[f"{session}-work"] == done[("tool-done", session, f"{session}-work")] == 1
        else:
            assert started[f"{session}-work"] <= 1
            assert done[("tool-done", session, f"{session}-work")] <= 1


def recovered_within(cluster: Cluster, sessions: set[str], pid: int, killed: float) -> float:
    """Seconds from the kill until another worker ran a step of each of ``sessions`` (the worst)."""
    worst = 0.0
    for session in sessions:
        later = [
            float(line[4])
            for line in cluster.lines()
            if line[2] == session and line[1] != str(pid) and float(line[4]) > killed
        ]
        assert later, f"no live worker took over session {session}"
        worst = max(worst, min(later) - killed)
    return worst


def test_postgres_workers_killed_mid_stream_and_mid_tool(
    postgres: PostgresServer, cluster: Callable[[str, str], Cluster]
) -> None:
    with psycopg.connect(postgres.url(), autocommit=True) as db:
        db.execute("CREATE DATABASE durable_crash")
    url = postgres.url(database="durable_crash")
    c = cluster(url, url)
    first = c.start("w1")
    second = c.start("w2")
    followed = new_session(c)
    follower = follow(c, followed)
    runs = {followed: follower.run_id, **submit_all(c, RUNS - 1)}

    wait_for(lambda: well_inside(c, first, "model"), 60, "w1 mid-stream")
    streaming = {s for s, _ in open_calls(c, first, "model")}
    first_killed = c.kill("w1")
    wait_for(lambda: well_inside(c, second, "tool"), 60, "w2 mid-tool")
    working = {s for s, _ in open_calls(c, second, "tool")}
    second_killed = c.kill("w2")
    # The live worker, which finishes the runs of both. With room for every run: with less, the
    # runs beyond its room would start only as others end, so the bound would time whole runs
    # (at a load of 10, the second half started 21 s after the kill; at 19, after 30 s).
    c.start("w3", "--concurrency", str(RUNS))

    wait_for_runs(c, runs, 120)
    assert recovered_within(c, streaming, first, first_killed) < RECOVERY_SECONDS
    assert recovered_within(c, working, second, second_killed) < RECOVERY_SECONDS
    endings = check_transcripts(c, runs)
    assert all(endings[session] == "interrupted" for session in working)
    check_counter(c, endings)
    # The follower saw the run from whichever worker ran it, to its end.
    assert follower.process.wait(30) == 0
    events = follower.events()
    assert events[0]["type"] == "agent_start" and events[-1]["type"] == "agent_settled"
    ends = [
        e["message"] for e in events if e["type"] == "message_end" and e["message"]["role"] == "assistant"
    ]
    assert ends[-1]["content"][0]["text"] == "all work is done"


def test_sqlite_worker_restarted_finishes_its_own_runs(
    cluster: Callable[[str, str], Cluster], tmp_path: Path
) -> None:
    c = cluster(str(tmp_path / "sessions.db"), f"sqlite:///{tmp_path / 'durable.sqlite'}")
    first = c.start("w1")
    c.start("w2")
    runs = submit_all(c)

    wait_for(lambda: well_inside(c, first, "model"), 60, "w1 mid-stream")
    streaming = {s for s, _ in open_calls(c, first, "model")}
    killed = c.kill("w1")
    restarted = c.start("w1")

    wait_for_runs(c, runs, 120)
    # Resumed by the restart's own recovery, which puts them back in the queue, where the
    # restarted worker takes them (w2 is busy with its own), not by w2 taking w1 for dead.
    assert recovered_within(c, streaming, first, killed) < RECOVERY_SECONDS
    taken = {line[2] for line in c.lines() if line[1] == str(restarted)}
    assert streaming <= taken
    assert b"of a dead worker" not in (c.tmp / "w2.log").read_bytes()
    check_counter(c, check_transcripts(c, runs))
