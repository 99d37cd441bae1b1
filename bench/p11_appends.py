"""P11: 1,000 sessions x 20 entries, each entry its own ``append``, on SQLite and on PostgreSQL.

What the store's synchronous path costs the client: each append is one transaction (entries,
leaf, counters, and on PostgreSQL the follower notification and the lease check, all in one
statement: one round trip). The appends go round-robin over the sessions, all 1,000 writer
leases held, one thread. Measured per store, each in a fresh process: the client's CPU
(``process_time``) and the wall time of the 20,000 appends. Afterwards every session's row must
count its 20 entries. Runs alternate SQLite/PostgreSQL, medians shown; the ratio is PostgreSQL's
client CPU over SQLite's, paired by round (goal: at most 1.5; before the notification moved into
the append's statement, 2.97).

Two PostgreSQL servers. The goal's compares like with like: a commit written to the operating
system before it is answered, not flushed to the disk (``fsync`` off), as SQLite's WAL with
``synchronous=NORMAL`` (the store's default) does. The other flushes every commit (PostgreSQL's
default), so each append waits for the disk: the client then sleeps a few milliseconds per
append, and waking from a longer sleep costs the client more CPU on a loaded machine (its caches
went to other processes meanwhile: a ``SELECT pg_sleep(0.005)`` costs the client about 3x the CPU
of a ``SELECT 1`` there). That is the machine's cost, not work the client does, so it is shown
beside the goal's figure, not in it.

    python bench/p11_appends.py [rounds]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
from psycopg import sql

from _summary import record
from _table import print_table
from tether.store.database import open_store
from tether.store.entries import EntryDict
from tether.store.ids import new_id

SESSIONS = 1_000
ENTRIES = 20
ROUNDS = 3
GOAL = 1.5


def entry(session: int, k: int, parent: str | None) -> EntryDict:
    role = "user" if k % 2 == 0 else "assistant"
    content = f"session {session} entry {k}: " + "some words of a conversation " * 4
    message = {"role": role, "content": content, "timestamp": 1}
    return {"type": "message", "id": new_id(), "parentId": parent, "timestamp": 1, "message": message}  # pyright: ignore[reportReturnType]


def run(location: str) -> dict[str, float]:
    store = open_store(location)
    ids = [new_id() for _ in range(SESSIONS)]
    for session_id in ids:
        store.create_session(session_id, "/bench", 1, version=3)
    leases = [store.acquire_writer(session_id) for session_id in ids]
    leaves: list[str | None] = [None] * SESSIONS
    batches = [[entry(i, k, None) for i in range(SESSIONS)] for k in range(ENTRIES)]
    wall, cpu = time.perf_counter(), time.process_time()
    for k in range(ENTRIES):
        for i, lease in enumerate(leases):
            e = batches[k][i]
            e["parentId"] = leaves[i]
            store.append(lease, [e], e["id"], 2)
            leaves[i] = e["id"]
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    counts = {record.entry_count for record in store.list_sessions()}
    for lease in leases:
        lease.release()
    store.close()
    if counts != {ENTRIES}:
        raise RuntimeError(f"expected {SESSIONS} sessions of {ENTRIES} entries, found {sorted(counts)}")
    return {"wall": wall, "cpu": cpu}


def spawn(location: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", location], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out)


def fresh_schema(server_url: str, name: str) -> str:
    with psycopg.connect(server_url, autocommit=True) as db:
        db.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    return f"{server_url}?options=-csearch_path%3D{name}"


def main(rounds: int = ROUNDS) -> None:
    from tether.testing.postgres import INSTALL_HINT, find_bin_dir, postgres_server

    if find_bin_dir() is None:
        print(f"P11 skipped: the benchmark {INSTALL_HINT}")
        return
    written, flushed = "PostgreSQL, commit written", "PostgreSQL, commit flushed"
    results: dict[str, list[dict[str, float]]] = {"SQLite": [], written: [], flushed: []}
    with (
        tempfile.TemporaryDirectory() as tmp,
        postgres_server(settings={"fsync": "off"}) as fast,
        postgres_server(settings={}) as durable,
    ):
        for r in range(rounds):
            results["SQLite"].append(spawn(str(Path(tmp) / f"sessions-{r}.db")))
            results[written].append(spawn(fresh_schema(fast.url(), f"bench_{r}")))
            results[flushed].append(spawn(fresh_schema(durable.url(), f"bench_{r}")))
    median = {
        store: {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        for store, runs in results.items()
    }
    rows = [[store, f"{m['cpu']:.2f}", f"{m['wall']:.2f}", ""] for store, m in median.items()]
    ratios: dict[str, list[float]] = {}
    for store in (written, flushed):
        ratios[store] = [
            pg["cpu"] / lite["cpu"] for pg, lite in zip(results[store], results["SQLite"], strict=True)
        ]
        low, high = min(ratios[store]), max(ratios[store])
        rows.append(
            [
                f"{store} / SQLite",
                f"{median[store]['cpu'] / median['SQLite']['cpu']:.2f}x",
                f"{median[store]['wall'] / median['SQLite']['wall']:.2f}x",
                f"{low:.2f}-{high:.2f}x",
            ]
        )
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print_table(
        f"P11 {SESSIONS} sessions x {ENTRIES} entries, one append each (medians of {rounds}, "
        f"alternating; load {load})",
        ["store", "client CPU s", "wall s", "CPU ratio per round"],
        rows,
    )
    record(
        "append client CPU, PostgreSQL",
        median[written]["cpu"] / median["SQLite"]["cpu"],
        "the same appends on SQLite (commits written, not flushed, on both)",
        f"<= {GOAL}",
        ratios[written],
    )
    record(
        "append client CPU, PostgreSQL flushing each commit",
        median[flushed]["cpu"] / median["SQLite"]["cpu"],
        "the same appends on SQLite",
        samples=ratios[flushed],
    )


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        print(json.dumps(run(sys.argv[2])))
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS)
