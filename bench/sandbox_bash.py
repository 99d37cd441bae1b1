"""Sandbox: what confining a ``bash`` call costs (goal: at most 10 ms added per command).

The same ``bash`` tool call (``true``) through ``run_bash``, unconfined and in the default
``workspace-write`` sandbox, interleaved so machine load hits both alike. The floor is the
minimum a confined command needs beyond an unconfined one: one ``bwrap`` exec setting up the same
namespaces and mounts around ``true``, timed from Python with nothing else (no cgroup, no
supervisor). Figures are the median and the spread (min-max) of ``RUNS`` calls.
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from _summary import record
from _table import print_table
from tether.tools.bash import run_bash
from tether.tools.sandbox import SandboxPolicy, secret_paths, unavailable
from tether.tools.workspace import Workspace

RUNS = 40


def spread(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    return f"{statistics.median(ms):.1f} ({ms[0]:.1f}-{ms[-1]:.1f})"


def main() -> None:
    reason = unavailable()
    if reason is not None:
        print(f"skipped: {reason}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        plain = Workspace(root)
        boxed = Workspace(root, sandbox=SandboxPolicy(hide=secret_paths(Path.home())))
        sandbox = boxed.confinement()
        assert sandbox is not None
        floor_argv = sandbox.argv(["true"], root)

        async def measure() -> tuple[list[float], list[float]]:
            unconfined: list[float] = []
            confined: list[float] = []
            for _ in range(RUNS):
                for workspace, samples in ((plain, unconfined), (boxed, confined)):
                    start = time.perf_counter()
                    await run_bash(workspace, {"command": "true"}, None, None)
                    samples.append(time.perf_counter() - start)
            return unconfined, confined

        unconfined, confined = asyncio.run(measure())
        floor: list[float] = []
        bare: list[float] = []
        true = shutil.which("true") or "true"
        for _ in range(RUNS):
            start = time.perf_counter()
            subprocess.run([true], check=True)
            bare.append(time.perf_counter() - start)
            start = time.perf_counter()
            subprocess.run(floor_argv, check=True)
            floor.append(time.perf_counter() - start)

    added = statistics.median(confined) - statistics.median(unconfined)
    floor_added = statistics.median(floor) - statistics.median(bare)
    print_table(
        f"bash 'true', {RUNS} calls each, ms: median (min-max)",
        ["what", "unconfined", "confined", "added"],
        [
            ["tether bash tool", spread(unconfined), spread(confined), f"{added * 1000:.1f}"],
            ["floor: bare exec vs bwrap exec", spread(bare), spread(floor), f"{floor_added * 1000:.1f}"],
        ],
    )
    print(f"added per command: {added * 1000:.1f} ms (goal <= 10 ms); floor {floor_added * 1000:.1f} ms")
    record(
        "sandboxed bash call (vs unconfined)",
        statistics.median(confined) / statistics.median(unconfined),
        "unconfined bash",
        "added <= 10 ms",
    )


if __name__ == "__main__":
    main()
