"""P11: 1,000 sessions x 20 entries, each entry its own ``append``, on SQLite and on PostgreSQL.

What the store's synchronous path costs the client: each append is one transaction (entries,
leaf, counters, and on PostgreSQL the follower notification and the lease check, all in one
statement: one round trip). The appends go round-robin over the sessions, all 1,000 writer
leases held, one thread. Measured per store, each in a fresh process: the client's CPU
(``process_time``) and the wall time of the 20,000 appends. Afterwards every session's row must
count its 20 entries. Each round runs every measure once, in alternating order; medians shown,
with the spread over the rounds; the ratio is PostgreSQL's client CPU over SQLite's, paired by
round (goal: at most 1.5; 2.97 with the notification a second round trip, 2.15 once it moved
into the append's statement).

Beside tether, each database's floor (``_p11_floor.py``): a bare client inserting one row per
append in its own transaction, nothing else. The floors' ratio is what PostgreSQL's client costs
over SQLite's whatever tether does, so tether's ratio cannot be expected below it; tether's
distance to each floor (per append, and as a ratio) is what tether's own code costs there.

Two PostgreSQL servers. The goal's compares like with like: a commit written to the operating
system before it is answered, not flushed to the disk (``fsync`` off), as SQLite's WAL with
``synchronous=NORMAL`` (the store's default) does. The other flushes every commit (PostgreSQL's
default), so each append waits for the disk: the client then sleeps a few milliseconds per
append, and waking from a longer sleep costs the client more CPU on a loaded machine (its caches
went to other processes meanwhile: a ``SELECT pg_sleep(0.005)`` costs the client about 3x the CPU
of a ``SELECT 1`` there). That is the machine's cost, not work the client does, so it is shown
beside the goal's figure, not in it.

    python bench/p11_appends.py [rounds]      # P11_SESSIONS=300 for a shorter run
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

from _p11_floor import payloads, postgres_floor, sqlite_floor
from _summary import record
from _table import print_table
from tether.store.database import open_store
from tether.store.entries import EntryDict
from tether.store.ids import new_id

SESSIONS = int(os.environ.get("P11_SESSIONS", 1_000))
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


def spawn(kind: str, location: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", kind, location], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out)


def worker(kind: str, location: str) -> dict[str, float]:
    if kind == "tether":
        return run(location)
    rows = payloads(SESSIONS, ENTRIES)
    return sqlite_floor(location, rows) if kind == "floor-sqlite" else postgres_floor(location, rows)


def fresh_schema(server_url: str, name: str) -> str:
    with psycopg.connect(server_url, autocommit=True) as db:
        db.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    return f"{server_url}?options=-csearch_path%3D{name}"


TETHER_LITE, TETHER_PG, TETHER_FLUSHED = "tether, SQLite", "tether, PostgreSQL", "tether, PostgreSQL flushed"
FLOOR_LITE, FLOOR_PG = "floor, SQLite", "floor, PostgreSQL"


def main(rounds: int = ROUNDS) -> None:
    from tether.testing.postgres import INSTALL_HINT, find_bin_dir, postgres_server

    if find_bin_dir() is None:
        print(f"P11 skipped: the benchmark {INSTALL_HINT}")
        return
    results: dict[str, list[dict[str, float]]] = {
        name: [] for name in (TETHER_LITE, TETHER_PG, FLOOR_LITE, FLOOR_PG, TETHER_FLUSHED)
    }
    with (
        tempfile.TemporaryDirectory() as tmp,
        postgres_server(settings={"fsync": "off"}) as fast,
        postgres_server(settings={}) as durable,
    ):
        for r in range(rounds):
            runs = [
                (TETHER_LITE, "tether", str(Path(tmp) / f"sessions-{r}.db")),
                (TETHER_PG, "tether", fresh_schema(fast.url(), f"bench_{r}")),
                (FLOOR_LITE, "floor-sqlite", str(Path(tmp) / f"floor-{r}.db")),
                (FLOOR_PG, "floor-postgres", fresh_schema(fast.url(), f"floor_{r}")),
                (TETHER_FLUSHED, "tether", fresh_schema(durable.url(), f"bench_{r}")),
            ]
            for name, kind, location in runs if r % 2 == 0 else reversed(runs):  # neither order favoured
                results[name].append(spawn(kind, location))
    appends = SESSIONS * ENTRIES
    rows: list[list[str]] = []
    for name, runs in results.items():
        cpu = [run["cpu"] * 1e6 / appends for run in runs]
        wall = statistics.median(run["wall"] for run in runs)
        rows.append([name, f"{statistics.median(cpu):.1f}", f"{min(cpu):.1f}-{max(cpu):.1f}", f"{wall:.2f}"])

    def paired(over: str, under: str) -> list[float]:
        return [a["cpu"] / b["cpu"] for a, b in zip(results[over], results[under], strict=True)]

    def overhead(tether: str, floor: str) -> list[float]:
        return [
            (a["cpu"] - b["cpu"]) * 1e6 / appends
            for a, b in zip(results[tether], results[floor], strict=True)
        ]

    ratios = {
        "tether: PostgreSQL / SQLite": paired(TETHER_PG, TETHER_LITE),
        "floor: PostgreSQL / SQLite": paired(FLOOR_PG, FLOOR_LITE),
        "PostgreSQL: tether / floor": paired(TETHER_PG, FLOOR_PG),
        "SQLite: tether / floor": paired(TETHER_LITE, FLOOR_LITE),
        "PostgreSQL flushed / SQLite": paired(TETHER_FLUSHED, TETHER_LITE),
    }
    for name, values in ratios.items():
        low, high = min(values), max(values)
        rows.append([name, f"{statistics.median(values):.2f}x", f"{low:.2f}-{high:.2f}x", ""])
    for name, (tether, floor) in {
        "tether over floor, PostgreSQL (us)": (TETHER_PG, FLOOR_PG),
        "tether over floor, SQLite (us)": (TETHER_LITE, FLOOR_LITE),
    }.items():
        values = overhead(tether, floor)
        rows.append([name, f"{statistics.median(values):.1f}", f"{min(values):.1f}-{max(values):.1f}", ""])
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print_table(
        f"P11 {SESSIONS} sessions x {ENTRIES} entries, one append each (medians of {rounds} rounds, "
        f"each a fresh process, order alternating; load {load})",
        ["store", "client CPU us/append", "spread", "wall s"],
        rows,
    )
    record(
        "append client CPU, PostgreSQL",
        statistics.median(ratios["tether: PostgreSQL / SQLite"]),
        "the same appends on SQLite (commits written, not flushed, on both)",
        f"<= {GOAL}",
        ratios["tether: PostgreSQL / SQLite"],
    )
    record(
        "append client CPU, bare clients' floor",
        statistics.median(ratios["floor: PostgreSQL / SQLite"]),
        "one INSERT per append on SQLite (bench/_p11_floor.py)",
        samples=ratios["floor: PostgreSQL / SQLite"],
    )
    record(
        "append client CPU, PostgreSQL flushing each commit",
        statistics.median(ratios["PostgreSQL flushed / SQLite"]),
        "the same appends on SQLite",
        samples=ratios["PostgreSQL flushed / SQLite"],
    )


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "--worker":
        print(json.dumps(worker(sys.argv[2], sys.argv[3])))
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS)
