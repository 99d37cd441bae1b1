"""A worker stopped while its database is away leaves: a real `tether worker` process, a real
PostgreSQL crashed (``pg_ctl stop -m immediate``) or frozen (SIGSTOP: connections open, nothing
answers) while runs are in their tools, then SIGTERM. The worker exits within ``STOP_SECONDS``
and a margin, saying how many runs it left; with the database back, a second worker finishes
every run, none recorded twice and no finished step run twice."""

from __future__ import annotations

import signal
import subprocess
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
    open_calls,
    submit_all,
    wait_for,
    wait_for_runs,
)

from tether.durable.worker import CUT_EXIT, STOP_SECONDS
from tether.testing.postgres import PostgresServer

pytestmark = pytest.mark.subprocess

RUNS = 4
EXIT_MARGIN = 5.0
"""Beyond ``STOP_SECONDS``: the interpreter's own exit, on a loaded machine."""


@pytest.mark.parametrize("away", ["crashed", "frozen"])
def test_a_worker_stopped_while_its_database_is_away_exits_and_another_finishes_its_runs(
    away: str, server: PostgresServer, cluster: Callable[[str, str], Cluster]
) -> None:
    with psycopg.connect(server.url(), autocommit=True) as db:
        db.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(f"durable_stop_{away}")))
    url = server.url(database=f"durable_stop_{away}")
    c = cluster(url, url)
    c.tool_seconds = 60  # under way when the worker stops; the next worker answers them "interrupted"
    pid = c.start("w1")
    runs = submit_all(c, RUNS)
    wait_for(lambda: len(open_calls(c, pid, "tool")) == RUNS, 60, "every run in its tool")

    if away == "crashed":
        server.crash()
    else:
        server.freeze()
    # Long enough that the worker's looks (every heartbeat_seconds, 2 s) wait for the database.
    time.sleep(5)
    process = c.workers.pop("w1")
    process.send_signal(signal.SIGTERM)
    try:
        code = process.wait(STOP_SECONDS + EXIT_MARGIN)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError(f"the worker did not exit: {(c.tmp / 'w1.log').read_text()[-3000:]}") from None
    log = (c.tmp / "w1.log").read_text()
    assert code == CUT_EXIT, log
    left = [line for line in log.splitlines() if "left pending for another worker" in line]
    assert len(left) == 1 and f"{RUNS} runs left" in left[0], log
    assert "Traceback" not in log, log

    if away == "crashed":
        server.start_again()
    else:
        server.thaw()
    c.start("w2")
    wait_for_runs(c, runs, 120)
    check_counter(c, check_transcripts(c, runs))
