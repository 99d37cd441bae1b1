"""Sandbox: what confining a ``bash`` call costs (goal: at most 10 ms added per command).

Four things run interleaved in each round, so machine load hits them alike: the ``bash`` tool
(``true``) through ``run_bash`` unconfined and in the default ``workspace-write`` sandbox, and the
floor: a bare ``true`` exec against one ``bwrap`` exec with the same namespaces and mounts around
``true`` (nothing else: no supervisor, no cgroup). What the tool adds beyond that floor is
tether's own share. Wall and CPU (this process and its children) are the median and the middle
half (quartiles) of ``RUNS`` rounds; wall is what a user waits, CPU what the machine pays.

A fifth lane runs the confined call without the workspace's control files protected
(``tether.tools.sandbox_protect``: read-only mounts of ``.tether``, ``.mcp.json``, ``.git``, ...,
here all missing, so each command makes, locks and removes six placeholders: the dearest case);
its paired difference with the confined lane is what that protection adds.

Then the parts, each alone: building the ``bwrap`` command line, the protection's placeholders
(taken and released), making and removing the command's ``pids`` cgroup, and joining it (an RCU
grace period of waiting in the kernel: the supervisor's start-up hides it, see
``tether.tools.sandbox.Confined``).
"""

from __future__ import annotations

import asyncio
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Generator
from contextlib import contextmanager
from pathlib import Path

from _summary import record
from _table import print_table
from tether.tools.bash import run_bash
from tether.tools.sandbox import PidsGroup, Sandbox, SandboxPolicy, secret_paths, unavailable
from tether.tools.sandbox_protect import Protection
from tether.tools.workspace import Workspace

RUNS = 40
PARTS_RUNS = 20


def cpu_now() -> float:
    """CPU seconds of this process and its waited-for children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def spread(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    quarter = len(ms) // 4
    return f"{statistics.median(ms):.1f} ({ms[quarter]:.1f}-{ms[-quarter - 1]:.1f})"


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


class Samples:
    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    async def time(self, action: Callable[[], object]) -> None:
        cpu, start = cpu_now(), time.perf_counter()
        result = action()
        if asyncio.iscoroutine(result):
            await result
        self.wall.append(time.perf_counter() - start)
        self.cpu.append(cpu_now() - cpu)


@contextmanager
def unprotected() -> Generator[None]:
    """Commands confined as before the control files were protected (no mounts, no placeholders)."""
    take = Protection.__dict__["take"]
    Protection.take = classmethod(lambda cls, roots, **_: cls())  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        Protection.take = take  # type: ignore[method-assign]


def removed() -> None:
    """Wait for the placeholders' removal (a thread each; its CPU counts, the process's)."""
    for thread in threading.enumerate():
        if thread.name == "tether-placeholders":
            thread.join()


def parts(sandbox: Sandbox, root: Path) -> list[list[str]]:
    """The pieces of tether's share, each timed alone."""
    build: list[float] = []
    for _ in range(PARTS_RUNS):
        cpu = time.process_time()
        sandbox.argv(["true"], root)
        build.append(time.process_time() - cpu)
    protect: list[float] = []
    for _ in range(PARTS_RUNS):
        cpu = time.process_time()
        Protection.take([root]).release()
        removed()
        protect.append(time.process_time() - cpu)
    git = root / ".git"
    git.mkdir()
    protect_repo: list[float] = []
    for _ in range(PARTS_RUNS):
        cpu = time.process_time()
        Protection.take([root]).release()
        removed()
        protect_repo.append(time.process_time() - cpu)
    git.rmdir()
    protection = [
        ["control files: 6 placeholders made + removed (CPU)", spread(protect)],
        ["control files: .git present, 5 placeholders (CPU)", spread(protect_repo)],
    ]
    make: list[float] = []
    join: list[float] = []
    for _ in range(PARTS_RUNS):
        cpu = time.process_time()
        group = PidsGroup.create(sandbox.policy.pids_max)
        make.append(time.process_time() - cpu)
        if group is None:
            return [
                ["bwrap command line (CPU)", spread(build)],
                *protection,
                ["pids cgroup", "none here (RLIMIT_NPROC)"],
            ]
        sleeper = subprocess.Popen(["sleep", "0.05"])
        start = time.perf_counter()
        group.procs.write_text(f"{sleeper.pid}\n")
        join.append(time.perf_counter() - start)
        sleeper.wait()
        cpu = time.process_time()
        group.remove()
        make[-1] += time.process_time() - cpu
    return [
        ["bwrap command line (CPU)", spread(build)],
        *protection,
        ["pids cgroup mkdir + rmdir (CPU)", spread(make)],
        ["joining the cgroup (wall, hidden by the gate)", spread(join)],
    ]


def main() -> None:
    reason = unavailable()
    if reason is not None:
        print(f"skipped: {reason}")
        return
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        plain = Workspace(root)
        boxed = Workspace(root, sandbox=SandboxPolicy(hide=secret_paths(Path.home())))
        sandbox = boxed.confinement()
        assert sandbox is not None
        floor_argv = sandbox.argv(["true"], root)
        true = shutil.which("true") or "true"
        unconfined, confined, bare, floor = Samples(), Samples(), Samples(), Samples()
        before = Samples()

        async def rounds() -> None:
            for _ in range(RUNS):
                await unconfined.time(lambda: run_bash(plain, {"command": "true"}, None, None))
                await confined.time(lambda: run_bash(boxed, {"command": "true"}, None, None))
                with unprotected():
                    await before.time(lambda: run_bash(boxed, {"command": "true"}, None, None))
                await bare.time(lambda: subprocess.run([true], check=True))
                await floor.time(lambda: subprocess.run(floor_argv, check=True))

        asyncio.run(rounds())
        removed()
        pieces = parts(sandbox, root)

    added = median_ms(confined.wall) - median_ms(unconfined.wall)
    floor_added = median_ms(floor.wall) - median_ms(bare.wall)
    added_cpu = median_ms(confined.cpu) - median_ms(unconfined.cpu)
    floor_cpu = median_ms(floor.cpu) - median_ms(bare.cpu)
    print_table(
        f"bash 'true', {RUNS} interleaved rounds, ms: median (quartiles); load {load[0]:.2f} {load[1]:.2f}",
        ["what", "unconfined", "confined", "added"],
        [
            ["tether bash tool, wall", spread(unconfined.wall), spread(confined.wall), f"{added:.1f}"],
            ["tether bash tool, CPU", spread(unconfined.cpu), spread(confined.cpu), f"{added_cpu:.1f}"],
            ["floor: true vs bwrap true, wall", spread(bare.wall), spread(floor.wall), f"{floor_added:.1f}"],
            ["floor: true vs bwrap true, CPU", spread(bare.cpu), spread(floor.cpu), f"{floor_cpu:.1f}"],
        ],
    )
    paired = [c - b for c, b in zip(confined.wall, before.wall, strict=True)]
    paired_cpu = [c - b for c, b in zip(confined.cpu, before.cpu, strict=True)]
    print_table(
        f"the control files' protection, {RUNS} paired rounds, ms: median (quartiles)",
        ["what", "confined, unprotected", "confined", "added (paired)"],
        [
            ["wall", spread(before.wall), spread(confined.wall), spread(paired)],
            ["CPU", spread(before.cpu), spread(confined.cpu), spread(paired_cpu)],
        ],
    )
    print_table(f"tether's share, {PARTS_RUNS} runs each, ms: median (quartiles)", ["part", "ms"], pieces)
    print(
        f"added per command: {added:.1f} ms wall, {added_cpu:.1f} ms CPU (goal <= 10 ms); "
        f"bwrap floor {floor_added:.1f} ms wall; beyond the floor {added - floor_added:.1f} ms"
    )
    record(
        "sandboxed bash call (vs unconfined)",
        statistics.median(confined.wall) / statistics.median(unconfined.wall),
        "unconfined bash",
        "added <= 10 ms",
        [c / u for c, u in zip(confined.wall, unconfined.wall, strict=True)],
    )


if __name__ == "__main__":
    main()
