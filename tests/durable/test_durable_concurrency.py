"""Per-worker and global limits, with real `tether worker` processes on a real PostgreSQL: a
worker started with ``--concurrency 2`` never runs more than 2 runs at once while a second
worker takes the rest, and ``--global-concurrency`` holds over both (``tether.durable.dispatch``).

What ran when comes from the workload's counter file (``workload.py``): a run is under way on a
worker from its first model call's start to its last model call's end there."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest
from test_durable_crash import (
    Cluster,
    check_counter,
    check_transcripts,
    cluster as cluster,  # the fixture
    submit_all,
    wait_for_runs,
)

from tether.testing.postgres import PostgresServer

pytestmark = pytest.mark.subprocess

RUNS = 12
GLOBAL = 5


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    """The most intervals open at one moment (an end before a start at the same instant)."""
    moments = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    peak = now = 0
    for _, step in moments:
        now += step
        peak = max(peak, now)
    return peak


def runs_by_worker(c: Cluster) -> dict[str, list[tuple[float, float]]]:
    """pid -> (start, end) of each run it carried out."""
    spans: dict[tuple[str, str], list[float]] = {}
    for kind, pid, session, _, moment in c.lines():
        if kind in ("model-start", "model-done"):
            spans.setdefault((pid, session), []).append(float(moment))
    by_worker: dict[str, list[tuple[float, float]]] = {}
    for (pid, _), moments in spans.items():
        by_worker.setdefault(pid, []).append((min(moments), max(moments)))
    return by_worker


def test_a_worker_runs_at_most_its_concurrency_and_the_global_limit_holds(
    postgres: PostgresServer, cluster: Callable[[str, str], Cluster]
) -> None:
    with psycopg.connect(postgres.url(), autocommit=True) as db:
        db.execute("CREATE DATABASE durable_limits")
    url = postgres.url(database="durable_limits")
    c = cluster(url, url)
    small = c.start("small", "--concurrency", "2", "--global-concurrency", str(GLOBAL))
    large = c.start("large", "--concurrency", "10", "--global-concurrency", str(GLOBAL))
    runs = submit_all(c, RUNS)
    wait_for_runs(c, runs, 240)
    check_counter(c, check_transcripts(c, runs))

    by_worker = runs_by_worker(c)
    assert set(by_worker) <= {str(small), str(large)}
    assert sum(len(spans) for spans in by_worker.values()) == RUNS  # each run carried out once
    assert most_at_once(by_worker.get(str(small), [])) <= 2
    # The other worker took the rest: more at once than the small one may (its own limit, 10,
    # is out of reach under the global one) ...
    assert 2 < most_at_once(by_worker[str(large)]) <= GLOBAL
    # ... and never did both together exceed the global limit.
    assert most_at_once([span for spans in by_worker.values() for span in spans]) <= GLOBAL
