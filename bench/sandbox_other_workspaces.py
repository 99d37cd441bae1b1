"""Sandbox: what hiding the other sessions' workspaces costs a confined ``bash`` call.

Each hidden workspace is a stat and a ``--tmpfs`` mount in every confined command, so the cost
grows with their number (capped at ``OTHER_WORKSPACES_MAX``). As ``sandbox_bash.py`` does: the
``bash`` tool runs ``true`` confined with the default hidden paths only, and with 20, 64 and the
cap's worth of other workspaces, interleaved in each round so machine load hits them alike; CPU
(this process and its children) and wall, median and quartiles. Then the once-per-session part: the store's query
for the distinct workspaces and their filtering (``other_workspaces``), on a store of 2,000
sessions in 400 folders.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from _table import print_table
from sandbox_bash import Samples, median_ms, spread
from tether.session.manager import SessionManager
from tether.tools.bash import run_bash
from tether.tools.sandbox import (
    OTHER_WORKSPACES_MAX,
    SandboxPolicy,
    other_workspaces,
    secret_paths,
    unavailable,
)
from tether.tools.workspace import Workspace

RUNS = 60


def main() -> None:
    reason = unavailable()
    if reason is not None:
        print(f"skipped: {reason}")
        return
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(dir=Path.home()) as tmp:
        place = Path(tmp)
        root = place / "mine"
        root.mkdir()
        folders = [place / f"other-{i}" for i in range(400)]
        for folder in folders:
            folder.mkdir()
        base = SandboxPolicy(hide=secret_paths(Path.home()))
        variants = {"default hidden paths only": Workspace(root, sandbox=base)}
        for count in (20, 64, OTHER_WORKSPACES_MAX):
            label = f"+ {count} other workspaces" + (" (the cap)" if count == OTHER_WORKSPACES_MAX else "")
            variants[label] = Workspace(root, sandbox=replace(base, other_workspaces=tuple(folders[:count])))
        samples = {name: Samples() for name in variants}

        async def rounds() -> None:
            for _ in range(RUNS):
                for name, workspace in variants.items():
                    await samples[name].time(lambda w=workspace: run_bash(w, {"command": "true"}, None, None))

        asyncio.run(rounds())
        query, filtering = _per_session(place, root, folders)

    first = next(iter(samples.values()))
    rows = [
        [
            name,
            spread(s.wall),
            spread(s.cpu),
            f"{median_ms(s.wall) - median_ms(first.wall):.1f}",
            f"{median_ms(s.cpu) - median_ms(first.cpu):.1f}",
        ]
        for name, s in samples.items()
    ]
    print_table(
        f"confined bash 'true', {RUNS} interleaved rounds, ms: median (quartiles); "
        f"load {load[0]:.2f} {load[1]:.2f}",
        ["hidden", "wall", "CPU", "wall added", "CPU added"],
        rows,
    )
    print_table(
        "once per session, 2,000 sessions in 400 folders, ms: median (quartiles)",
        ["part", "CPU"],
        [["distinct workspaces query", spread(query)], ["filtering and resolving", spread(filtering)]],
    )


def _per_session(place: Path, root: Path, folders: list[Path]) -> tuple[list[float], list[float]]:
    query: list[float] = []
    filtering: list[float] = []
    with SessionManager.at(place / "sessions.sqlite") as sessions:
        for i in range(2000):
            sessions.create(folders[i % len(folders)]).close()
        for _ in range(20):
            cpu = time.process_time()
            cwds = sessions.workspaces(OTHER_WORKSPACES_MAX * 2)
            query.append(time.process_time() - cpu)
            cpu = time.process_time()
            other_workspaces(cwds, [root], Path.home())
            filtering.append(time.process_time() - cpu)
    return query, filtering


if __name__ == "__main__":
    main()
