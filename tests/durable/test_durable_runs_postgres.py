"""``tether runs list|show|cancel|resume|retry|prune --json`` against a real PostgreSQL, on the
runs of a real ``tether worker`` process: each command a process of its own, as an operator
types it (the same commands on DBOS's SQLite: ``test_durable_runs.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from test_durable_crash import Cluster, cluster as cluster, new_session, wait_for  # the fixture

from tether.durable.client import DurableClient
from tether.durable.config import DurableConfig
from tether.session.manager import SessionManager
from tether.testing.postgres import PostgresServer

pytestmark = pytest.mark.subprocess


def run_tether(c: Cluster, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``tether ARGS --json`` on the cluster's databases."""
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", *args, "--json"],
        env=c.env(),
        cwd=c.tmp,
        capture_output=True,
        timeout=120,
        check=False,
    )


def tether(c: Cluster, *args: str) -> Any:
    """``tether ARGS --json`` on the cluster's databases; its one JSON document."""
    done = run_tether(c, *args)
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


def refused(c: Cluster, *args: str) -> str:
    """``tether ARGS --json`` failing as a user mistake: its one line on stderr."""
    done = run_tether(c, *args)
    assert done.returncode != 0 and done.stdout == b"", done.stdout
    assert "Traceback" not in done.stderr.decode()
    return done.stderr.decode()


def status(c: Cluster, run_id: str) -> str:
    return tether(c, "runs", "show", run_id)["run"]["status"]


def messages(c: Cluster, session_id: str) -> list[Any]:
    with SessionManager.at(c.sessions) as sessions:
        return sessions.open(session_id, readonly=True).messages


def test_the_runs_commands_on_postgresql_with_a_worker_process(
    postgres: PostgresServer, cluster: Callable[[str, str], Cluster], tmp_path: Path
) -> None:
    with psycopg.connect(postgres.url(), autocommit=True) as db:
        db.execute("CREATE DATABASE durable_runs")
    url = postgres.url(database="durable_runs")
    c = cluster(url, url)
    tool_seconds = tmp_path / "tool-seconds"
    tool_seconds.write_text("120")  # the first run's tool: until it is cancelled
    c.tool_seconds = tool_seconds
    c.start("w1")
    config = DurableConfig(system_database=url, sessions=url)
    session = new_session(c)
    with DurableClient(config) as client:
        first = client.submit(session, "go", key="order-17")
        assert client.submit(session, "go", key="order-17") == first  # idempotent: the same run
        second = client.submit(session, "go")  # waits: one run at a time per session
    wait_for(lambda: any(line[0] == "tool-start" for line in c.lines()), 60, "the first run's tool")

    pending = tether(c, "runs", "list", "--status", "pending")
    assert [(r["id"], r["session"], r["worker"], r["prompt"]) for r in pending] == [
        (first, session, "w1", "go")
    ]
    waiting = tether(c, "runs", "list", "--status", "enqueued", "--session", session)
    assert [r["id"] for r in waiting] == [second]
    assert tether(c, "runs", "cancel", second)["status"] == "CANCELLED"

    # Cancel the running run: its tool stops, every call and the prompt are answered, saying why.
    tool_seconds.write_text("0")
    assert tether(c, "runs", "cancel", first)["status"] == "CANCELLED"
    wait_for(lambda: len(messages(c, session)) >= 5, 30, "the cancelled run's answers")
    cancelled = messages(c, session)
    assert [m["role"] for m in cancelled] == ["user", "assistant", "toolResult", "toolResult", "assistant"]
    assert cancelled[-1]["stopReason"] == "aborted" and "cancelled" in cancelled[-1]["errorMessage"]
    assert not any(line[0] == "tool-done" and line[3].endswith("-work") for line in c.lines())
    assert [r["id"] for r in tether(c, "runs", "list", "--status", "cancelled")] == [second, first]

    # Resume the run cancelled while it waited: it runs, after what the first one left.
    assert tether(c, "runs", "resume", second)["status"] == "ENQUEUED"
    wait_for(lambda: status(c, second) == "SUCCESS", 90, "the resumed run")
    # The first was cancelled while it ran: resuming it is refused (its session holds the
    # cancel's answers); retry runs its prompt again, as a new run.
    assert "was cancelled while it ran" in refused(c, "runs", "resume", first)
    third = tether(c, "runs", "retry", first)["id"]
    assert third not in (first, second)
    wait_for(lambda: status(c, third) == "SUCCESS", 90, "the retried run")
    final = messages(c, session)
    # (The workload's model calls its tools on a session's first turn only: later runs answer.)
    assert [m["role"] for m in final[5:]] == ["user", "assistant"] * 2
    assert [m["content"][0]["text"] for m in final[6::2]] == ["all work is done"] * 2

    shown = tether(c, "runs", "show", third)
    assert shown["run"]["worker"] == "w1" and (shown["input_tokens"], shown["output_tokens"]) == (100, 20)
    assert [s["name"] for s in shown["steps"]].count("model") == 1
    assert shown["cost"] == pytest.approx(0.0006)
    succeeded = tether(c, "runs", "list", "--worker", "w1", "--status", "success")
    assert [r["id"] for r in succeeded] == [third, second]
    time.sleep(0.01)  # finished more than 0 s ago
    pruned = tether(c, "runs", "prune", "--older-than", "0s")
    assert sorted(r["id"] for r in pruned) == sorted([first, second, third])
    assert tether(c, "runs", "list") == []
