"""P4: open a 10,000-message session (~50 MB) and rebuild its context; append one message durably.
On SQLite and on PostgreSQL.

Content is realistic coding-agent traffic built from real text: tool results carry the source
of Python standard-library modules (as a `read` tool would), assistant replies and tool calls
quote them, prompts are short. The reference is the simplest durable alternative: the same
entries as a JSONL file read back with ``json.loads`` per line.

Durability of the measured append: SQLite in WAL + ``synchronous=NORMAL`` (the default): every
append is committed to the WAL before it returns, so no process crash loses or tears it; a power
loss can drop the last commits. ``durability="full"`` (an fsync per commit) is printed for
comparison. PostgreSQL: a private server (``tether.testing.postgres``) on 127.0.0.1 with its
default settings, so each commit is fsynced (``synchronous_commit=on``) like SQLite's "full";
the open includes connecting (a pool and the lock connection) and reading over TCP.

Goals (issue 5): open + rebuild <= 150 ms; append p50 <= 1 ms. (Issue 21) PostgreSQL: open +
rebuild within 2x the SQLite figure; append p50 <= 2 ms on loopback.
"""

from __future__ import annotations

import json
import statistics
import sysconfig
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

from _summary import record_paired
from _table import print_table
from tether.session import SessionManager
from tether.store import SQLiteStore
from tether.testing.postgres import INSTALL_HINT, find_bin_dir, postgres_server
from tether.wire import AgentMessage

MESSAGES = 10_000
TURN = 4  # user, assistant(tool call), toolResult, assistant(text)


def corpus() -> list[str]:
    """Source files of the standard library, as a coding agent would read them."""
    lib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in lib.glob("*.py") if 16_000 < p.stat().st_size < 80_000)
    return [p.read_text(errors="replace") for p in files]


def usage(i: int) -> dict[str, Any]:
    return {
        "input": 20_000 + i,
        "output": 300,
        "cacheRead": 18_000,
        "cacheWrite": 0,
        "totalTokens": 38_300 + i,
        "cost": {"input": 0.06, "output": 0.0045, "cacheRead": 0.0054, "cacheWrite": 0, "total": 0.0699},
    }


def conversation(n: int) -> list[AgentMessage]:
    files = corpus()
    out: list[Any] = []
    ts = 1_700_000_000_000
    for turn in range(n // TURN):
        source = files[turn % len(files)]
        path = f"src/module_{turn}.py"
        excerpt = source[: 2_000 + (turn % 7) * 300]
        call_id = f"toolu_{turn:06d}"
        out.append(
            {
                "role": "user",
                "content": f"Please review {path} and fix the bug near line {turn % 400}.",
                "timestamp": ts,
            }
        )
        out.append({
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "I should read the file first. " + excerpt[:400], "thinkingSignature": "sig" * 30},
                {"type": "toolCall", "id": call_id, "name": "read", "arguments": {"path": path, "offset": 0, "limit": 400}},
            ],
            "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
            "usage": usage(turn), "stopReason": "toolUse", "timestamp": ts + 1,
        })  # fmt: skip
        out.append({
            "role": "toolResult", "toolCallId": call_id, "toolName": "read",
            "content": [{"type": "text", "text": source[:15_000]}], "isError": False, "timestamp": ts + 2,
        })  # fmt: skip
        out.append({
            "role": "assistant",
            "content": [{"type": "text", "text": "Here is the fix:\n```python\n" + excerpt + "\n```\n" + source[-800:]}],
            "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
            "usage": usage(turn), "stopReason": "stop", "timestamp": ts + 3,
        })  # fmt: skip
        ts += 10_000
    return out


RUNS = 7
Timing = tuple[list[float], list[float]]
"""Wall and CPU seconds of each run."""


def timed(*fns: Callable[[], None], runs: int = RUNS) -> list[Timing]:
    """Each of ``fns`` in each of ``runs`` interleaved rounds: the reader and its reference run
    under the same load, and their ratio is taken per round."""
    timings: list[Timing] = [([], []) for _ in fns]
    for _ in range(runs):
        for fn, (wall, cpu) in zip(fns, timings, strict=True):
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            wall.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
    return timings


def summary(timing: Timing) -> tuple[float, float, float]:
    """Best and median wall time, and best CPU time (the figure a shared, loaded machine distorts least)."""
    wall, cpu = timing
    return min(wall), statistics.median(wall), min(cpu)


def fill(manager: SessionManager, messages: list[AgentMessage]) -> str:
    session = manager.create("/bench")
    for i in range(0, len(messages), 500):
        session.append_messages(messages[i : i + 500])
    session.close()
    return session.id


def opener(location: str | Path, session_id: str) -> Callable[[], None]:
    def open_and_rebuild() -> None:
        with SessionManager.at(location) as m:
            s = m.open(session_id, readonly=True)
            assert len(s.messages) == MESSAGES

    return open_and_rebuild


def append_times(manager: SessionManager, session_id: str, messages: list[AgentMessage]) -> list[float]:
    s = manager.open(session_id)
    times: list[float] = []
    for i in range(400):
        message = messages[i % len(messages)]
        start = time.perf_counter()
        s.append_message(message)
        times.append(time.perf_counter() - start)
    s.close()
    return sorted(times)


def postgres_figures(
    messages: list[AgentMessage], reference: Callable[[], None]
) -> tuple[list[Timing], dict[str, list[float]]] | None:
    """Open (interleaved with ``reference``) and append figures on a private server with durable
    defaults; None without PostgreSQL.

    Appends also with ``synchronous_commit=off`` (set by the client, per connection), which
    separates the statement's own cost from the disk flush."""
    if find_bin_dir() is None:
        return None
    with postgres_server(settings={}) as server:
        url = server.url()
        with SessionManager.at(url) as manager:
            session_id = fill(manager, messages)
        opened = timed(opener(url, session_id), reference)
        appended: dict[str, list[float]] = {}
        for commit, location in (("on", url), ("off", server.url(options="-csynchronous_commit%3Doff"))):
            with SessionManager.at(location) as manager:
                appended[commit] = append_times(manager, session_id, messages)
    return opened, appended


def main() -> None:
    messages = conversation(MESSAGES)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "sessions.db"
        with SessionManager.at(db) as manager:
            session_id = fill(manager, messages)
            jsonl = Path(tmp) / "session.jsonl"
            manager.export(session_id, jsonl)
        size_mb = jsonl.stat().st_size / 1e6

        def read_jsonl() -> None:
            with jsonl.open("rb") as f:
                entries = [json.loads(line) for line in f]
            assert len(entries) == MESSAGES + 1

        sqlite_open, jsonl_read = timed(opener(db, session_id), read_jsonl)
        open_best, open_median, open_cpu = summary(sqlite_open)
        jsonl_best, jsonl_median, jsonl_cpu = summary(jsonl_read)

        appends: dict[str, list[float]] = {}
        for durability in ("normal", "full"):
            store = SQLiteStore(db, durability=durability)
            with closing(store), SessionManager(store) as m:  # type: ignore[arg-type]
                appends[durability] = append_times(m, session_id, messages)
        postgres = postgres_figures(messages, read_jsonl)

    def pct(values: list[float], p: float) -> str:
        return f"{values[min(len(values) - 1, int(p * len(values)))] * 1e3:.3f}"

    def ms(seconds: float) -> str:
        return f"{seconds * 1e3:.1f}"

    def ratio(paired: list[float]) -> str:
        return f"{statistics.median(paired):.2f}x ({min(paired):.2f}-{max(paired):.2f})"

    paired = record_paired("open a session (SQLite)", sqlite_open[0], jsonl_read[0], "JSONL + json.loads")
    rows = [["tether SQLite session", ms(open_best), ms(open_median), ms(open_cpu), ratio(paired), "1.00x"]]
    if postgres is not None:
        (pg_open, pg_jsonl), _ = postgres
        pg_best, pg_median, pg_cpu = summary(pg_open)
        paired = record_paired("open a session (PostgreSQL)", pg_open[0], pg_jsonl[0], "JSONL + json.loads")
        rows.append(
            ["tether PostgreSQL session (loopback)", ms(pg_best), ms(pg_median), ms(pg_cpu),
             ratio(paired), f"{pg_median / open_median:.2f}x"]
        )  # fmt: skip
    rows.append(
        ["reference: JSONL + json.loads", ms(jsonl_best), ms(jsonl_median), ms(jsonl_cpu), "1.00x", ""]
    )
    print_table(
        f"P4 open + rebuild context: {MESSAGES} messages, {size_mb:.1f} MB of JSON "
        "(goals: SQLite <= 150 ms, PostgreSQL <= 2x SQLite)",
        [
            "reader",
            "best ms",
            "median ms",
            "cpu ms",
            "vs JSONL (per-round wall, range)",
            "vs SQLite (median)",
        ],
        rows,
    )
    print()
    normal, full = appends["normal"], appends["full"]
    append_rows = [
        [
            "SQLite WAL, synchronous=NORMAL (default; survives process crash)",
            pct(normal, 0.5),
            pct(normal, 0.99),
        ],
        [
            "SQLite WAL, synchronous=FULL (fsync per commit; survives power loss)",
            pct(full, 0.5),
            pct(full, 0.99),
        ],
    ]
    if postgres is not None:
        _, pg = postgres
        append_rows += [
            ["PostgreSQL, synchronous_commit=on (default; fsync per commit)", pct(pg["on"], 0.5), pct(pg["on"], 0.99)],
            ["PostgreSQL, synchronous_commit=off (a server crash can drop the last commits)",
             pct(pg["off"], 0.5), pct(pg["off"], 0.99)],
        ]  # fmt: skip
    print_table("P4 append one message durably (goals: SQLite p50 <= 1 ms, PostgreSQL p50 <= 2 ms)",
                ["store", "p50 ms", "p99 ms"], append_rows)  # fmt: skip
    if postgres is None:
        print(f"(no PostgreSQL column: the benchmark {INSTALL_HINT})")


if __name__ == "__main__":
    main()
