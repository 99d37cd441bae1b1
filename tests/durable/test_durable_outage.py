"""Workers ride out a PostgreSQL restart: real `tether worker` processes, a real server crashed
(``pg_ctl stop -m immediate``) and started again, once for 0.1 s while the runs stream and once
for a few seconds while their tools run. Every run completes, no worker exits, no run is
recovered (so nothing runs twice and no tool is answered "interrupted"), and each worker logs
the outage in one line, without a traceback."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import psycopg
import pytest
from test_durable_crash import (
    Cluster,
    check_counter,
    check_transcripts,
    cluster as cluster,  # the fixture
    open_calls,
    submit_all,
    wait_for,
    wait_for_runs,
)

from tether.testing.postgres import CRASH_SAFE_SETTINGS, PostgresServer, postgres_server

pytestmark = pytest.mark.subprocess

RUNS = 6
OUTAGE_SECONDS = 3.0


@pytest.fixture
def server(postgres: PostgresServer) -> Iterator[PostgresServer]:  # the shared one's binaries
    with postgres_server(postgres.bin_dir, CRASH_SAFE_SETTINGS) as own:
        yield own


def _in_flight(c: Cluster, pids: list[int], kind: str) -> int:
    return sum(len(open_calls(c, pid, kind)) for pid in pids)


def test_workers_ride_out_a_blip_and_an_outage(
    server: PostgresServer, cluster: Callable[[str, str], Cluster]
) -> None:
    with psycopg.connect(server.url(), autocommit=True) as db:
        db.execute("CREATE DATABASE durable_outage")
    url = server.url(database="durable_outage")
    c = cluster(url, url)
    pids = [c.start("w1"), c.start("w2")]
    runs = submit_all(c, RUNS)

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
