"""Crash safety: writers killed with SIGKILL at random points, 100 times, then every session opens;
on SQLite and on PostgreSQL.

Children come from a ``forkserver`` that imported tether (and psycopg) once, so a kill costs
milliseconds and the whole test stays well under 20 s per backend. Each child opens or creates a session and appends
entries of random size (single and multi-message transactions) until it is killed: after a
random number of its commits (zero: during start-up, schema creation or lock acquisition) plus
a random few milliseconds, so kills land inside writes and checkpoints whatever the machine's
load.
"""

from __future__ import annotations

import json
import multiprocessing
import random
import signal
import sqlite3
import time
from multiprocessing.connection import Connection
from pathlib import Path

import crash_writer
import pytest

from narrowing import content_of
from session_helpers import open_when_free
from tether.session import SessionManager

pytestmark = pytest.mark.subprocess

KILLS = 100
PRELOAD = ["tether.session", "tether.store.postgres_store", "crash_writer"]


def _drain(conn: Connection, wait_for: int = 0, timeout: float = 10.0) -> list[str]:
    """Reports available now, waiting until at least ``wait_for`` commit reports arrived."""
    reports: list[str] = []
    deadline = time.monotonic() + timeout
    while conn.poll(max(0.0, deadline - time.monotonic()) if _commits(reports) < wait_for else 0):
        reports.append(conn.recv_bytes().decode())
    return reports


def _commits(reports: list[str]) -> int:
    return sum(1 for r in reports if r.startswith("E"))


def test_sigkilled_writers_never_corrupt_or_lose_committed_entries(
    store_location: str, db_path: Path
) -> None:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    rng = random.Random(1234)
    sessions: list[str] = []
    committed: dict[str, list[str]] = {}
    reader, writer = ctx.Pipe(duplex=False)
    try:
        for kill in range(KILLS):
            target = rng.choice(sessions) if sessions and rng.random() < 0.8 else None
            child = ctx.Process(
                target=crash_writer.write_until_killed,
                args=(store_location, target, kill, writer),
                daemon=True,
            )
            child.start()
            reports = _drain(reader, wait_for=rng.choice([0, 0, 1, 2, 3, 5]))
            time.sleep(rng.uniform(0.0, 0.01))
            child.kill()
            child.join()
            assert child.exitcode == -signal.SIGKILL  # it was still writing, not failed
            for line in reports + _drain(reader):
                if line.startswith("S"):
                    sessions.append(line[1:])
                    committed.setdefault(line[1:], [])
                else:
                    committed.setdefault(line[1:27], []).append(line[27:])
    finally:
        reader.close()
        writer.close()

    assert len(sessions) >= 5 and sum(map(len, committed.values())) >= 50  # the kills hit real work

    if store_location == str(db_path):
        db = sqlite3.connect(db_path)
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        db.close()
    with SessionManager.at(store_location) as manager:
        records = {r.id: r for r in manager.list()}
        assert set(sessions) <= set(records)
        for record in records.values():
            with open_when_free(manager, record.id) as session:  # no stale lock survived its holder
                entries = session.entries()
                ids = [e["id"] for e in entries]
                assert record.entry_count == len(entries)  # counters moved in the same transaction
                assert set(committed.get(record.id, [])) <= set(ids)  # nothing committed was lost
                assert record.leaf_id == (ids[-1] if ids else None)  # leaf moved with its entry
                for entry in entries:  # no partial entry: every payload is whole JSON
                    assert entry["type"] == "message" and isinstance(entry["message"]["content"], str)
                    json.dumps(entry)
                assert [e["id"] for e in session.path()] == ids
                assert len(session.messages) == len(entries)
                session.append_message({"role": "user", "content": "still writable", "timestamp": 3})


def test_writers_of_different_sessions_share_the_database(store_location: str) -> None:
    with SessionManager.at(store_location) as manager:
        ids = [manager.create("/p").id for _ in range(3)]  # dropped handles release their lock
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    writers = [ctx.Process(target=crash_writer.append_n, args=(store_location, i, 150)) for i in ids]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
        assert w.exitcode == 0
    with SessionManager.at(store_location) as manager:
        for session_id in ids:
            s = manager.open(session_id, readonly=True)
            assert [content_of(m) for m in s.messages] == [f"{session_id} {i}" for i in range(150)]
            assert s.record.message_count == 150
