"""P8: ``tether --mode rpc`` — start-up, command round trips, and streaming a long answer.

Reference: pi's own ``pi --mode rpc`` in both generations the interop tests install (on first
use): ``@mariozechner/pi-coding-agent`` 0.73.1 (``tests/rpc/interop``) and
``@earendil-works/pi-coding-agent`` 1.6.0 (``tests/rpc/interop16``, on the Node 22 that folder's
npm ``node`` package brings), on the same commands, so the ratios compare servers of one protocol.
Every figure is taken in ``ROUNDS`` interleaved rounds (each round measures every server in
turn, all of them running meanwhile), every ratio within a round, and printed as the median of
the rounds with their spread (min-max), with the load average the rounds ran under:
- start: spawn -> first answer to ``get_state`` (one start per server per round);
- server CPU per command: the server process's CPU time (all its threads, from
  ``/proc/PID/task/*/schedstat``, in ns: the server's own figure, read from outside, not ours)
  over ``PIPELINED`` pipelined ``get_state``: what a command costs the server, steady under load,
  and the goal (<= pi);
- pipelined: ``PIPELINED`` ``get_state`` written at once -> the last response (commands/s), also
  a goal;
- round trip: one ``get_state`` at a time, 100 a round (p50 per round; p95 of all): on a shared
  machine this is mostly scheduling latency (one run measured 0.03 ms, the next 0.09 ms), so it
  is shown with its spread and is not a goal.
Before the rounds, every server answers one batch unmeasured (V8's JIT and CPython's caches
warm: the steady state a long session runs at), and within a round the servers take turns going
first.
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
from collections.abc import Callable
from pathlib import Path

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
            argv,
            env=env,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
        )
        self.frames: queue.Queue[bytes] = queue.Queue()
        self.bytes = 0
        self.batch: Batch | None = None
        """A pipelined batch the reading thread counts the answers of itself (see ``Batch``)."""
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        partial = b""
        while chunk := os.read(fd, 1 << 16):
            self.bytes += len(chunk)
            batch = self.batch
            if batch is not None:  # only the batch's end matters: its frames are not looked at
                batch.left -= chunk.count(b"\n")
                if batch.left <= 0:
                    batch.done.set()
                continue
            lines = (partial + chunk).split(b"\n")
            partial = lines.pop()
            for line in lines:
                self.frames.put(line)

    def send(self, *frames: dict[str, object]) -> None:
        self.send_bytes(b"".join(json.dumps(f).encode() + b"\n" for f in frames))

    def send_bytes(self, data: bytes) -> None:
        assert self.process.stdin is not None
        rest = memoryview(data)
        while rest:  # unbuffered: a write may take part of it
            rest = rest[self.process.stdin.write(rest) or 0 :]

    def until(self, predicate: Callable[[dict[str, object]], bool], timeout: float = 60) -> dict[str, object]:
        while True:
            frame = json.loads(self.frames.get(timeout=timeout))
            if predicate(frame):
                return frame

    def answer(self, id: str) -> dict[str, object]:
        """The response to command ``id`` (frames before it are dropped)."""
        return self.until(lambda frame: is_response(frame) and frame.get("id") == id)

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


def start_time(argv: list[str], env: dict[str, str], cwd: str) -> float:
    """Seconds from spawning a server to its first answer."""
    began = time.perf_counter()
    server = Server(argv, env, cwd)
    try:
        server.send({"id": "s", "type": "get_state"})
        server.until(is_response)
        return time.perf_counter() - began
    finally:
        server.close()


ROUNDS = 5


def round_trips(server: Server, count: int = 100) -> list[float]:
    """One round: ``count`` sequential ``get_state`` round trips, in seconds each."""
    times: list[float] = []
    for i in range(count):
        began = time.perf_counter()
        server.send({"id": f"r{i}", "type": "get_state"})
        server.answer(f"r{i}")
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


PIPELINED = 10_000
"""Commands in one pipelined batch: at ~10 µs of server CPU each, ~0.1 s, long enough that a
scheduler tick or a stray thread of the server does not move the figure much."""


class Batch:
    """The answers of a pipelined batch still to come, counted by the server's reading thread: a
    ``get_state`` is answered by exactly one line, so the batch ends at its ``count``-th line."""

    def __init__(self, count: int) -> None:
        self.left = count
        self.done = threading.Event()


def pipelined(server: Server, count: int = PIPELINED) -> tuple[float, float]:
    """Commands/s and the server's CPU seconds per command for ``count`` commands written at once.

    The commands are encoded before the clock starts, and their answers are counted in the
    chunks the pipe gives, not split, parsed and queued a line at a time: the figure is the
    server's, not this process's JSON work (which, on 2 cores, competes with the server)."""
    batch = Batch(count)
    data = b"".join(b'{"id": "p%d", "type": "get_state"}\n' % i for i in range(count))
    server.batch = batch
    cpu = server_cpu(server.process.pid)
    began = time.perf_counter()
    server.send_bytes(data)
    if not batch.done.wait(timeout=120):
        raise TimeoutError(f"no answer to the last of {count} pipelined commands")
    seconds = time.perf_counter() - began
    cpu = (server_cpu(server.process.pid) - cpu) / count
    server.batch = None
    return count / seconds, cpu


Command = tuple[list[str], dict[str, str]]
"""A server's argv and environment."""


def measure(servers: dict[str, Command], cwd: str) -> dict[str, dict[str, list[float]]]:
    """Per server and figure, one value per round: ``start``, ``rt`` (p50 of the round's round
    trips), ``pipelined`` (commands/s), ``cpu`` (server CPU seconds per command); ``rt_all``: every
    round trip. The rounds interleave the servers, which all run from the first round to the last."""
    figures: dict[str, dict[str, list[float]]] = {
        name: {"start": [], "rt": [], "pipelined": [], "cpu": [], "rt_all": []} for name in servers
    }
    running = {name: Server(argv, env, cwd) for name, (argv, env) in servers.items()}
    try:
        for server in running.values():  # steady state: V8's JIT and CPython's caches warm
            server.send({"id": "warm", "type": "get_state"})
            server.until(is_response)
            pipelined(server)
        names = list(running)
        for r in range(ROUNDS):
            for name in names[r % len(names) :] + names[: r % len(names)]:  # each goes first in turn
                server = running[name]
                mine = figures[name]
                mine["start"].append(start_time(*servers[name], cwd))
                times = round_trips(server)
                mine["rt"].append(statistics.median(times))
                mine["rt_all"] += times
                rate, cpu = pipelined(server)
                mine["pipelined"].append(rate)
                mine["cpu"].append(cpu)
    finally:
        for server in running.values():
            server.close()
    return figures


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
        servers: dict[str, Command] = {"tether": (tether, tether_env)}
        for name, argv in (("pi 0.73.1", pi_argv()), ("pi 1.6.0", pi16_argv())):
            pi_env = {**base, "HOME": home, "PI_CODING_AGENT_DIR": str(Path(home) / name), "PI_OFFLINE": "1"}
            if argv is not None:
                servers[name] = (argv, pi_env)
        load_before = os.getloadavg()
        figures = measure(servers, home)
        load = (
            " ".join(f"{x:.2f}" for x in load_before) + " -> " + " ".join(f"{x:.2f}" for x in os.getloadavg())
        )
        ours = figures.pop("tether")
        measures = [  # key, label, unit, format, higher is better
            ("start", "start to first answer (ms)", 1e3, ".0f", False),
            ("cpu", "server CPU per get_state (µs)", 1e6, ".1f", False),
            ("pipelined", "pipelined get_state (cmd/s)", 1, ".0f", True),
            ("rt", "get_state round trip p50 (ms)", 1e3, ".3f", False),
        ]
        rows: list[list[str]] = []
        for key, label, unit, fmt, higher in measures:
            row = [label, _median_spread(ours[key], unit, fmt)]
            for theirs in figures.values():
                # tether's cost over theirs: a throughput is turned around
                paired = [b / a if higher else a / b for a, b in zip(ours[key], theirs[key], strict=True)]
                row += [_median_spread(theirs[key], unit, fmt), _median_spread(paired, 1, ".2f") + "x"]
            rows.append(row)
        p95 = ["get_state round trip p95 (ms)", _p95(ours)]
        for theirs in figures.values():
            p95 += [_p95(theirs), ""]
        rows.append(p95)
        for name, theirs in figures.items():
            for key, measure_name, goal in (
                ("start", "start to first answer", ""),
                ("cpu", "server CPU per command", "<= 1"),
                ("pipelined", "pipelined get_state", "<= 1"),
                ("rt", "get_state round trip p50 (no goal)", ""),
            ):
                higher = key == "pipelined"
                paired = [b / a if higher else a / b for a, b in zip(ours[key], theirs[key], strict=True)]
                record(measure_name, statistics.median(paired), name, goal, samples=paired)
        columns = ["measure", "tether"]
        for name in figures:
            columns += [name, "ratio"]
        print_table(
            f"P8 rpc: tether vs pi --mode rpc, {ROUNDS} interleaved rounds: median (min-max); ratio = "
            f"tether's cost / pi's (< 1: tether is cheaper; throughput turned around); load average {load}",
            columns,
            rows,
        )
        stream_rows: list[list[str]] = []
        for mode in ("full", "delta"):
            seconds, frames, size = stream(tether, tether_env, home, mode, deltas)
            stream_rows.append([mode, f"{seconds * 1e3:.0f}", f"{frames / seconds:.0f}", f"{size / 1e6:.2f}"])
        print()
        print_table(
            f"P8 rpc: one scripted answer of {deltas} text deltas, prompt -> prompt_result (tether)",
            ["message_update", "ms", "frames/s", "MB written"],
            stream_rows,
        )


def _median_spread(values: list[float], unit: float, fmt: str) -> str:
    return f"{format(statistics.median(values) * unit, fmt)} ({format(min(values) * unit, fmt)}-{format(max(values) * unit, fmt)})"


def _p95(figures: dict[str, list[float]]) -> str:
    every = sorted(figures["rt_all"])
    return f"{every[int(len(every) * 0.95)] * 1e3:.3f}"


if __name__ == "__main__":
    main()
