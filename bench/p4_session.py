"""P4: open a 10,000-message session (~50 MB) and rebuild its context; append one message durably.

Content is realistic coding-agent traffic built from real text: tool results carry the source
of Python standard-library modules (as a `read` tool would), assistant replies and tool calls
quote them, prompts are short. The reference is the simplest durable alternative: the same
entries as a JSONL file read back with ``json.loads`` per line.

Durability of the measured append: WAL + ``synchronous=NORMAL`` (the default): every append is
committed to the WAL before it returns, so no process crash loses or tears it; a power loss can
drop the last commits. ``durability="full"`` (an fsync per commit) is printed for comparison.

Goals (issue 5): open + rebuild <= 150 ms; append p50 <= 1 ms.
"""

from __future__ import annotations

import json
import statistics
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

from _table import print_table
from tether.session import SessionManager, SQLiteStore
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


def timed(runs: int, fn: Any) -> tuple[float, float, float]:
    """Best and median wall time, and best CPU time (the figure a shared, loaded machine distorts least)."""
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return min(wall), statistics.median(wall), min(cpu)


def main() -> None:
    messages = conversation(MESSAGES)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "sessions.db"
        with SessionManager.at(db) as manager:
            session = manager.create("/bench")
            for i in range(0, len(messages), 500):
                session.append_messages(messages[i : i + 500])
            session_id = session.id
            session.close()
            jsonl = Path(tmp) / "session.jsonl"
            manager.export(session_id, jsonl)
        size_mb = jsonl.stat().st_size / 1e6

        def open_and_rebuild() -> None:
            with SessionManager.at(db) as m:
                s = m.open(session_id, readonly=True)
                assert len(s.messages) == MESSAGES

        def read_jsonl() -> None:
            with jsonl.open("rb") as f:
                entries = [json.loads(line) for line in f]
            assert len(entries) == MESSAGES + 1

        open_best, open_median, open_cpu = timed(7, open_and_rebuild)
        jsonl_best, jsonl_median, jsonl_cpu = timed(7, read_jsonl)

        append_times: dict[str, list[float]] = {}
        for durability in ("normal", "full"):
            with SessionManager(SQLiteStore(db, durability=durability)) as m:  # type: ignore[arg-type]
                s = m.open(session_id)
                times = []
                for i in range(400):
                    message = messages[i % len(messages)]
                    start = time.perf_counter()
                    s.append_message(message)
                    times.append(time.perf_counter() - start)
                s.close()
            append_times[durability] = sorted(times)

    def pct(values: list[float], p: float) -> str:
        return f"{values[min(len(values) - 1, int(p * len(values)))] * 1e3:.3f}"

    def ms(seconds: float) -> str:
        return f"{seconds * 1e3:.1f}"

    print_table(
        f"P4 open + rebuild context: {MESSAGES} messages, {size_mb:.1f} MB of JSON (goal <= 150 ms)",
        ["reader", "best ms", "median ms", "cpu ms", "ratio (median)"],
        [
            ["tether SQLite session", ms(open_best), ms(open_median), ms(open_cpu),
             f"{open_median / jsonl_median:.2f}x"],
            ["reference: JSONL + json.loads", ms(jsonl_best), ms(jsonl_median), ms(jsonl_cpu), "1.00x"],
        ],
    )  # fmt: skip
    print()
    normal, full = append_times["normal"], append_times["full"]
    print_table(
        "P4 append one message durably (goal p50 <= 1 ms)",
        ["durability", "p50 ms", "p99 ms"],
        [
            [
                "WAL, synchronous=NORMAL (default; survives process crash)",
                pct(normal, 0.5),
                pct(normal, 0.99),
            ],
            [
                "WAL, synchronous=FULL (fsync per commit; survives power loss)",
                pct(full, 0.5),
                pct(full, 0.99),
            ],
        ],
    )


if __name__ == "__main__":
    main()
