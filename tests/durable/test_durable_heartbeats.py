"""Workers' heartbeats are stamped and judged by the database's clock: a worker whose own clock
is off (another host's, or read by a starved process long before it wrote) is neither taken for
dead while it beats nor kept alive after it stopped."""

from __future__ import annotations

import time
from pathlib import Path

import psycopg
import pytest

from tether.durable.config import DurableConfig
from tether.durable.worker import Heartbeats
from tether.testing.postgres import PostgresServer

SKEW = 3600.0
DEAD_AFTER = 1.0


def _databases(tmp_path: Path, postgres: PostgresServer) -> list[str]:
    with psycopg.connect(postgres.url(), autocommit=True) as db:
        db.execute("CREATE DATABASE heartbeats")
    return [f"sqlite:///{tmp_path / 'durable.sqlite'}", postgres.url(database="heartbeats")]


def test_a_worker_with_a_clock_off_by_an_hour_is_judged_by_the_databases(
    tmp_path: Path, postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = time.time
    for url in _databases(tmp_path, postgres):
        ahead = Heartbeats(DurableConfig(system_database=url, name="ahead", dead_after_seconds=DEAD_AFTER))
        behind = Heartbeats(DurableConfig(system_database=url, name="behind", dead_after_seconds=DEAD_AFTER))
        try:
            monkeypatch.setattr(time, "time", lambda: real() + SKEW)
            assert ahead.beat()
            monkeypatch.setattr(time, "time", lambda: real() - SKEW)
            assert behind.beat()
            # Each judges the other live, whatever its own clock says.
            assert {"ahead", "behind"} <= behind.live()
            monkeypatch.setattr(time, "time", lambda: real() + SKEW)
            assert {"ahead", "behind"} <= ahead.live()
            # Once both stopped beating for longer than that, neither is live to the other (an
            # hour ahead on its own clock would otherwise keep "ahead" live for an hour).
            time.sleep(DEAD_AFTER + 0.5)
            monkeypatch.setattr(time, "time", lambda: real() - SKEW)
            assert not behind.live() & {"ahead", "behind"}
        finally:
            monkeypatch.setattr(time, "time", real)
            ahead.close()
            behind.close()
