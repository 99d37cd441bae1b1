"""Workers ride out a PostgreSQL restart: real `tether worker` processes, a real server crashed
(``pg_ctl stop -m immediate``) and started again, once for 0.1 s while the runs stream and once
for a few seconds while their tools run. Every run completes, no worker exits, no run is
recovered (so nothing runs twice and no tool is answered "interrupted"), and each worker logs
the outage in one line, without a traceback."""

from __future__ import annotations

import time
from collections.abc import Callable

import psycopg
import pytest
from psycopg import sql
from test_durable_crash import (
    Cluster,
    check_counter,
    check_transcripts,
    cluster as cluster,  # the fixture
    config,
    open_calls,
    submit_all,
    wait_for,
    wait_for_runs,
)

from tether.durable.client import DurableClient
from tether.testing.postgres import PostgresServer

pytestmark = pytest.mark.subprocess

RUNS = 6
OUTAGE_SECONDS = 3.0


def _in_flight(c: Cluster, pids: list[int], kind: str) -> int:
    return sum(len(open_calls(c, pid, kind)) for pid in pids)


def _two_workers_running(
    server: PostgresServer, cluster: Callable[[str, str], Cluster], database: str
) -> tuple[Cluster, list[int], dict[str, str]]:
    """A database of its own on ``server``, two workers on it, and ``RUNS`` submitted."""
    with psycopg.connect(server.url(), autocommit=True) as db:
        db.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    url = server.url(database=database)
    c = cluster(url, url)
    pids = [c.start("w1"), c.start("w2")]
    return c, pids, submit_all(c, RUNS)


def test_workers_ride_out_a_blip_and_an_outage(
    server: PostgresServer, cluster: Callable[[str, str], Cluster]
) -> None:
    c, pids, runs = _two_workers_running(server, cluster, "durable_outage")

    wait_for(lambda: _in_flight(c, pids, "model") >= 2, 60, "runs streaming")
    server.crash()
    time.sleep(0.1)
    server.start_again()
    wait_for(lambda: _in_flight(c, pids, "tool") >= 2, 60, "runs in their tools")
    server.crash()
    time.sleep(OUTAGE_SECONDS)
    server.start_again()

    wait_for_runs(c, runs, 120)
    assert all(process.poll() is None for process in c.workers.values()), "a worker exited"
    endings = check_transcripts(c, runs)
    assert set(endings.values()) == {"worked"}, endings  # no tool answered "interrupted"
    check_counter(c, endings)
    for name in c.workers:
        log = (c.tmp / f"{name}.log").read_text()
        assert "Traceback" not in log, log
        assert "recovering run" not in log, log
        away = [line for line in log.splitlines() if "unreachable" in line]
        assert 1 <= len(away) <= 4, log  # the outage, per database handle (and the blip, if seen)
        assert all("durable_outage" in line for line in away), away


def _read_only(server: PostgresServer, on: bool) -> None:
    """``default_transaction_read_only`` for every session, as a failover's standby answers."""
    with psycopg.connect(server.url(), autocommit=True) as db:
        db.execute(f"ALTER SYSTEM SET default_transaction_read_only = {'on' if on else 'off'}")
        db.execute("SELECT pg_reload_conf()")


def test_runs_whose_end_a_read_only_database_refused_are_run_again(
    server: PostgresServer, cluster: Callable[[str, str], Cluster]
) -> None:
    """A database that turns read-only for a while (a failover's standby) fails writes at once,
    DBOS's too: a run whose own write failed ended, and DBOS could not record that, so it stayed
    running on a live worker with nothing running it, which no one recovers: it waited for ever.
    Each such run is run again, and every run ends; no worker exits."""
    c, pids, runs = _two_workers_running(server, cluster, "durable_read_only")

    wait_for(lambda: _in_flight(c, pids, "model") >= 2, 60, "runs streaming")
    _read_only(server, True)

    def unrecorded() -> bool:  # DBOS's line, logged once it failed to record a run's end
        return any(
            "Exception encountered in asynchronous workflow" in (c.tmp / f"{name}.log").read_text()
            for name in c.workers
        )

    wait_for(unrecorded, 60, "a run ending while the database is read-only")
    _read_only(server, False)

    with DurableClient(config(c)) as client:
        wait_for(
            lambda: all(client.status(run) in ("SUCCESS", "ERROR") for run in runs.values()), 120, "runs"
        )
    assert all(process.poll() is None for process in c.workers.values()), "a worker exited"
    logs = "".join((c.tmp / f"{name}.log").read_text() for name in c.workers)
    assert "ended but the database did not record it: running it again" in logs
    # the heartbeat says it once; not DBOS's queue threads on every poll, each with its SQL
    assert not [line for line in logs.splitlines() if "WARNING" in line and "read-only" in line]
