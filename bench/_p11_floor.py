"""P11's floor: the least a client does for the same 1,000 sessions x 20 appends on each database.

One row per append (session id, entry id, the entry's JSON, encoded beforehand), in a transaction
of its own, as the appends go: on SQLite, ``BEGIN``/``INSERT``/``COMMIT`` on a WAL database with
``synchronous=NORMAL`` (the store's settings); on PostgreSQL, one prepared ``INSERT`` in autocommit
(one round trip, psycopg's C implementation, as the store uses). No fence, no counters, no leaf,
no notification, no pool. The floor's ratio is what the two databases' clients cost apart from
anything tether does; tether's distance to each floor is what its own code costs on that database.
"""

from __future__ import annotations

import json
import sqlite3
import time

import psycopg


def payloads(sessions: int, entries: int) -> list[tuple[str, str, str]]:
    """(session, entry id, JSON) per append, in the benchmark's round-robin order."""
    words = "some words of a conversation " * 4
    return [
        (f"s{i}", f"e{i}.{k}", json.dumps({"type": "message", "message": {"role": "user", "content": words}}))
        for k in range(entries)
        for i in range(sessions)
    ]


def sqlite_floor(path: str, rows: list[tuple[str, str, str]]) -> dict[str, float]:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE entries (session_id TEXT, id TEXT, payload TEXT, PRIMARY KEY (session_id, id))")
    wall, cpu = time.perf_counter(), time.process_time()
    for row in rows:
        db.execute("BEGIN")
        db.execute("INSERT INTO entries VALUES (?, ?, ?)", row)
        db.execute("COMMIT")
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    db.close()
    return {"wall": wall, "cpu": cpu}


def postgres_floor(url: str, rows: list[tuple[str, str, str]]) -> dict[str, float]:
    with psycopg.connect(url, autocommit=True) as db:
        db.execute(
            "CREATE TABLE entries (session_id text, id text, payload json, PRIMARY KEY (session_id, id))"
        )
        wall, cpu = time.perf_counter(), time.process_time()
        for row in rows:
            db.execute("INSERT INTO entries VALUES (%s, %s, %s)", row, prepare=True)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"wall": wall, "cpu": cpu}
