"""P8: ``tether --mode rpc`` — start-up, command round trips, and streaming a long answer.

Reference: pi's own ``pi --mode rpc`` in both generations the interop tests install (on first
use): ``@mariozechner/pi-coding-agent`` 0.73.1 (``tests/rpc/interop``) and
``@earendil-works/pi-coding-agent`` 1.6.0 (``tests/rpc/interop16``, on the Node 22 that folder's
npm ``node`` package brings), on the same commands, so the ratios compare servers of one protocol:
- start: spawn -> first answer to ``get_state`` (median of 5 starts);
- server CPU per command: the server process's CPU time (all its threads, from
  ``/proc/PID/task/*/schedstat``, in ns) over 2,000 pipelined ``get_state``, median of 3 batches:
  what a command costs the server, steady under load, and the goal (<= pi);
- pipelined: 2,000 ``get_state`` written at once -> the last response (commands/s, the best of
  the 3 batches), also a goal;
- round trip: one ``get_state`` at a time, 3 rounds of 100 (p50 per round, its median and
  spread; p95): on a shared machine this is mostly scheduling latency (one run measured 0.03 ms,
  the next 0.09 ms), so it is shown with its spread and is not a goal.
tether only (pi needs a real model to stream): a scripted answer of 2,000 text deltas, from
``prompt`` to ``prompt_result``, with pi's full ``message_update`` frames and with the ``delta``
event filter (frames/s and bytes on the wire). Wall-clock times on a shared machine: compare
the ratios, not the absolute numbers.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _summary import record
from _table import print_table

HERE = Path(__file__).resolve().parent
INTEROP = HERE.parent / "tests" / "rpc" / "interop"
PI_CLI = INTEROP / "node_modules" / "@mariozechner" / "pi-coding-agent" / "dist" / "cli.js"
INTEROP16 = HERE.parent / "tests" / "rpc" / "interop16"
PI16_CLI = INTEROP16 / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "bundle" / "cli.js"
PI16_NODE = INTEROP16 / "node_modules" / ".bin" / "node"


class Server:
    """A protocol server in a subprocess; frames are read by a thread into a queue."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str) -> None:
        self.process = subprocess.Popen(
            argv, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.frames: queue.Queue[bytes] = queue.Queue()
        self.bytes = 0
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in iter(self.process.stdout.readline, b""):
            self.bytes += len(line)
            self.frames.put(line)

    def send(self, *frames: dict[str, object]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"".join(json.dumps(f).encode() + b"\n" for f in frames))
        self.process.stdin.flush()

    def until(self, predicate: object, timeout: float = 60) -> dict[str, object]:
        while True:
            frame = json.loads(self.frames.get(timeout=timeout))
            if callable(predicate) and predicate(frame):
                return frame

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def is_response(frame: dict[str, object]) -> bool:
    return frame.get("type") == "response"


def start_time(argv: list[str], env: dict[str, str], cwd: str, runs: int = 5) -> float:
    times: list[float] = []
    for _ in range(runs):
        began = time.perf_counter()
        server = Server(argv, env, cwd)
        server.send({"id": "s", "type": "get_state"})
        server.until(is_response)
        times.append(time.perf_counter() - began)
        server.close()
    return statistics.median(times)


ROUNDS = 3


def round_trips(server: Server, count: int = 100) -> list[float]:
    """One round: ``count`` sequential ``get_state`` round trips, in seconds each."""
    times: list[float] = []
    for i in range(count):
        began = time.perf_counter()
        server.send({"id": f"r{i}", "type": "get_state"})
        server.until(is_response)
        times.append(time.perf_counter() - began)
    return times


def server_cpu(pid: int) -> float:
    """CPU seconds the process has run, all threads (``schedstat``: nanoseconds, unlike ``stat``'s ticks)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return total / 1e9


def pipelined(server: Server, count: int = 2000) -> tuple[float, float]:
    """Commands/s and the server's CPU seconds per command for ``count`` commands written at once."""
    cpu = server_cpu(server.process.pid)
    began = time.perf_counter()
    server.send(*({"id": f"p{i}", "type": "get_state"} for i in range(count)))
    last = f"p{count - 1}"
    server.until(lambda f: is_response(f) and f.get("id") == last)
    seconds = time.perf_counter() - began
    return count / seconds, (server_cpu(server.process.pid) - cpu) / count


def measure(argv: list[str], env: dict[str, str], cwd: str) -> dict[str, Any]:
    results: dict[str, Any] = {"start": start_time(argv, env, cwd)}
    server = Server(argv, env, cwd)
    try:
        server.send({"id": "warm", "type": "get_state"})
        server.until(is_response)
        rounds: list[list[float]] = []
        batches: list[tuple[float, float]] = []
        for _ in range(ROUNDS):
            rounds.append(round_trips(server))
            batches.append(pipelined(server))
        every = sorted(t for times in rounds for t in times)
        results["rt_rounds"] = [statistics.median(times) for times in rounds]
        results["rt_median"] = statistics.median(results["rt_rounds"])
        results["rt_p95"] = every[int(len(every) * 0.95)]
        results["pipelined"] = max(rate for rate, _ in batches)
        results["cpu_rounds"] = [cpu for _, cpu in batches]
        results["cpu_per_cmd"] = statistics.median(results["cpu_rounds"])
    finally:
        server.close()
    return results


def stream(argv: list[str], env: dict[str, str], cwd: str, mode: str, deltas: int) -> tuple[float, int, int]:
    """Seconds from prompt to prompt_result, frames and bytes written, for one scripted answer."""
    server = Server(argv, env, cwd)
    try:
        server.send({"id": "f", "type": "set_event_filter", "messageUpdate": mode})
        server.until(is_response)
        before = server.bytes
        began = time.perf_counter()
        server.send({"id": "p", "type": "prompt", "message": "stream"})
        frames = 0

        def settled(frame: dict[str, object]) -> bool:
            nonlocal frames
            frames += 1
            return frame.get("type") == "prompt_result"

        server.until(settled)
        return time.perf_counter() - began, frames, server.bytes - before
    finally:
        server.close()


def _installed(cli: Path, folder: Path, needs_node: bool) -> bool:
    if not cli.exists():
        if shutil.which("npm") is None or (needs_node and shutil.which("node") is None):
            return False
        print(f"installing pi into {folder.relative_to(HERE.parent)} (once) ...", file=sys.stderr)
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=folder, check=True, capture_output=True)
    return True


def pi_argv() -> list[str] | None:
    if not _installed(PI_CLI, INTEROP, needs_node=True):
        return None
    return ["node", str(PI_CLI), "--mode", "rpc", "--no-session"]


def pi16_argv() -> list[str] | None:
    """pi 1.6.0 on npm's Node 22 (pi 1.x needs Node >= 22.19)."""
    if not _installed(PI16_CLI, INTEROP16, needs_node=False):
        return None
    return [str(PI16_NODE), str(PI16_CLI), "--mode", "rpc", "--no-session"]


def main() -> None:
    with tempfile.TemporaryDirectory() as home:
        deltas = 2000
        script = Path(home) / "script.json"
        chunks = [f"word{i} " for i in range(deltas)]
        script.write_text(json.dumps({"responses": [{"content": [{"type": "text", "chunks": chunks}]}] * 2}))
        base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        tether_env = {**base, "TETHER_HOME": home, "TETHER_SCRIPTED": str(script)}
        tether = [sys.executable, "-m", "tether.cli", "--mode", "rpc", "--no-session"]
        ours = measure(tether, tether_env, home)
        references: dict[str, dict[str, Any] | None] = {}
        for name, argv in (("pi 0.73.1", pi_argv()), ("pi 1.6.0", pi16_argv())):
            pi_env = {**base, "HOME": home, "PI_CODING_AGENT_DIR": str(Path(home) / name), "PI_OFFLINE": "1"}
            references[name] = measure(argv, pi_env, home) if argv is not None else None

        def cells(key: str, unit: float, fmt: str, lower_is_better: bool = True) -> list[str]:
            """tether's value, then per pi version its value and tether's ratio to it."""
            row = [format(ours[key] * unit, fmt)]
            for theirs in references.values():
                if theirs is None:
                    row += ["n/a", "-"]
                    continue
                value = ours[key] / theirs[key] if lower_is_better else theirs[key] / ours[key]
                row += [format(theirs[key] * unit, fmt), f"{value:.2f}x"]
            return row

        def spread_cells() -> list[str]:
            """The per-round p50s, lowest-highest: how far one round trip figure moves."""

            def spread(values: dict[str, Any]) -> str:
                return f"{min(values['rt_rounds']) * 1e3:.3f}-{max(values['rt_rounds']) * 1e3:.3f}"

            return [
                spread(ours),
                *(
                    cell
                    for theirs in references.values()
                    for cell in ([spread(theirs), ""] if theirs else ["n/a", ""])
                ),
            ]

        for name, theirs in references.items():
            if theirs is not None:
                record("start to first answer", ours["start"] / theirs["start"], name)
                cpu = [a / b for a, b in zip(ours["cpu_rounds"], theirs["cpu_rounds"], strict=True)]
                record("server CPU per command", statistics.median(cpu), name, "<= 1", samples=cpu)
                record("pipelined get_state", theirs["pipelined"] / ours["pipelined"], name, "<= 1")
                rt = [a / b for a, b in zip(ours["rt_rounds"], theirs["rt_rounds"], strict=True)]
                record("get_state round trip p50 (no goal)", statistics.median(rt), name, samples=rt)
        columns = ["measure", "tether"]
        for name in references:
            columns += [name, "ratio"]
        print_table(
            "P8 rpc: tether vs pi --mode rpc (ratio = tether / pi time; < 1 is faster)",
            columns,
            [
                ["start to first answer (ms)", *cells("start", 1e3, ".0f")],
                ["server CPU per get_state (µs)", *cells("cpu_per_cmd", 1e6, ".1f")],
                ["pipelined get_state (cmd/s)", *cells("pipelined", 1, ".0f", lower_is_better=False)],
                ["get_state round trip p50 (ms)", *cells("rt_median", 1e3, ".3f")],
                ["  p50 of each round (ms)", *spread_cells()],
                ["get_state round trip p95 (ms)", *cells("rt_p95", 1e3, ".3f")],
            ],
        )
        rows: list[list[str]] = []
        for mode in ("full", "delta"):
            seconds, frames, size = stream(tether, tether_env, home, mode, deltas)
            rows.append([mode, f"{seconds * 1e3:.0f}", f"{frames / seconds:.0f}", f"{size / 1e6:.2f}"])
        print()
        print_table(
            f"P8 rpc: one scripted answer of {deltas} text deltas, prompt -> prompt_result (tether)",
            ["message_update", "ms", "frames/s", "MB written"],
            rows,
        )


if __name__ == "__main__":
    main()
