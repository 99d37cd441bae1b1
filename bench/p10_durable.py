"""P10: durable runs — what making each step durable costs, against the same runs in-process.

200 runs of the durable tests' workload (``tests/durable/workload.py``: a scripted model that
calls two tools, then answers; no sleeps), each of 4 steps (2 model calls, 2 tool calls):

- in-process: one process runs them one after the other through ``AgentSession`` on the same
  session store (CPU time of the process, ``time.process_time``);
- durable: ``tether submit`` (the library call) queues them, two ``tether worker`` processes run
  them (CPU time of both workers from ``/proc``, between "ready" and the last run's end, so start-up
  is left out; the database server's CPU is left out of both).

The headline ratio is CPU per step, durable / in-process (the median of ``ROUNDS`` rounds' ratios,
with their spread): the price of the checkpoints (one row per
step, one per forwarded event), the queue and the replay bookkeeping. The wall-clock throughput is
printed too (noisy on a shared machine). PostgreSQL when ``tether.testing.postgres`` finds a server,
else SQLite.
"""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from _summary import record_paired
from _table import print_table

if TYPE_CHECKING:
    from tether.durable.client import DurableClient

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
WORKLOAD = HERE.parent / "tests" / "durable"
RUNS = 200
STEPS = 4
ROUNDS = 3
"""Rounds of both (in-process, then durable); the ratio is taken within a round."""
MODEL = "anthropic/claude-sonnet-4-5"


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a live process, from ``/proc/PID/stat``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def in_process(sessions_url: str, workspace: Path, runs: int | None = None) -> tuple[float, float]:
    """CPU and wall seconds of ``runs`` (default ``RUNS``) sequential runs in this process."""
    sys.path.insert(0, str(WORKLOAD))
    import workload

    from tether.session.factory import SessionChoice, create_agent_session
    from tether.session.manager import SessionManager
    from tether.session.options import AgentOptions
    from tether.session.settings import Settings

    with SessionManager.at(sessions_url) as sessions:
        ids = [sessions.create(workspace) for _ in range(RUNS if runs is None else runs)]
        for session in ids:
            session.close()
    cpu, wall = time.process_time(), time.perf_counter()
    for session in ids:
        core = create_agent_session(
            AgentOptions(model=MODEL),
            cwd=workspace,
            settings=Settings(),
            session=SessionChoice(session_id=session.id),
            sessions=SessionManager.at(sessions_url),
        )
        workload.setup(core)
        await core.prompt("go")
        await core.close()
    return time.process_time() - cpu, time.perf_counter() - wall


def durable(sessions_url: str, system_url: str, workspace: Path, tmp: Path) -> tuple[float, float]:
    """CPU (both workers) and wall seconds of RUNS runs over two workers."""
    from tether.durable.client import DurableClient
    from tether.durable.config import DurableConfig
    from tether.session.manager import SessionManager

    env = {
        **os.environ,
        "PYTHONPATH": f"{SRC}{os.pathsep}{WORKLOAD}",
        "TETHER_HOME": str(tmp / "home"),
        "TETHER_DATABASE_URL": sessions_url,
        "TETHER_DURABLE_DATABASE_URL": system_url,
    }
    workers: list[subprocess.Popen[bytes]] = []
    try:
        for name in ("w1", "w2"):
            log = tmp / f"{name}.log"
            command = [sys.executable, "-m", "tether.cli", "worker", "--name", name, "--concurrency", "10"]
            command += ["--setup", "workload:setup", "--model", MODEL]
            workers.append(
                subprocess.Popen(command, env=env, cwd=tmp, stdout=log.open("wb"), stderr=subprocess.STDOUT)
            )
            deadline = time.monotonic() + 60
            while b"taking runs" not in log.read_bytes():
                if time.monotonic() > deadline or workers[-1].poll() is not None:
                    raise RuntimeError(f"worker {name} did not start: {log.read_text()[-2000:]}")
                time.sleep(0.1)
        config = DurableConfig(system_database=system_url, sessions=sessions_url)
        with SessionManager.at(sessions_url) as sessions:
            warm_up = [sessions.create(workspace) for _ in range(len(workers))]
            ids = [sessions.create(workspace) for _ in range(RUNS)]
            for session in warm_up + ids:
                session.close()
        with DurableClient(config) as client:
            # A run per worker first, unmeasured: lazy imports are start-up, as in-process.
            submit_all(client, [session.id for session in warm_up])
            before = sum(cpu_seconds(w.pid) for w in workers)
            wall = time.perf_counter()
            submit_all(client, [session.id for session in ids])
            wall = time.perf_counter() - wall
            cpu = sum(cpu_seconds(w.pid) for w in workers) - before
        return cpu, wall
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        for worker in workers:
            worker.wait(30)


def submit_all(client: DurableClient, session_ids: list[str]) -> None:
    """Submit a run per session and wait for all; raise if any failed."""
    runs = [client.submit(session_id, "go") for session_id in session_ids]
    pending = set(runs)
    while pending:
        time.sleep(0.2)
        pending = {run for run in pending if client.status(run) not in ("SUCCESS", "ERROR")}
    failed = [run for run in runs if client.status(run) != "SUCCESS"]
    if failed:
        raise RuntimeError(f"{len(failed)} durable runs failed")


def main() -> None:
    from tether.testing.postgres import find_bin_dir, postgres_server

    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        os.environ["TETHER_HOME"] = str(tmp / "home")
        workspace = tmp / "workspace"
        workspace.mkdir()
        bin_dir = find_bin_dir()
        if bin_dir is not None:
            server = stack.enter_context(postgres_server(bin_dir))
            sessions_url = system_url = server.url()
            backend = "PostgreSQL"
        else:
            sessions_url, system_url = str(tmp / "sessions.db"), f"sqlite:///{tmp / 'durable.sqlite'}"
            backend = "SQLite"
        local: list[tuple[float, float]] = []
        remote: list[tuple[float, float]] = []
        asyncio.run(in_process(sessions_url, workspace, runs=2))  # lazy imports: start-up, not the runs
        for _ in range(ROUNDS):
            local.append(asyncio.run(in_process(sessions_url, workspace)))
            remote.append(durable(sessions_url, system_url, workspace, tmp))

    steps = RUNS * STEPS

    def row(name: str, runs: list[tuple[float, float]]) -> list[str]:
        per_step = [cpu / steps * 1000 for cpu, _ in runs]
        rate = statistics.median(RUNS / wall for _, wall in runs)
        spread = f"{min(per_step):.2f}-{max(per_step):.2f}"
        return [name, f"{statistics.median(per_step):.2f} ({spread})", f"{rate:.1f}"]

    print_table(
        f"{RUNS} runs of {STEPS} steps on {backend}, {ROUNDS} rounds (median, range)",
        ["run", "CPU ms per step", "runs/s (wall)"],
        [row("in-process (1 process)", local), row("durable (2 workers)", remote)],
    )
    paired = record_paired(
        "CPU per step (200 runs, 2 workers)",
        [cpu for cpu, _ in remote],
        [cpu for cpu, _ in local],
        "the same runs in-process",
        "the price of checkpoints",
    )
    print(
        f"durable / in-process, CPU per step: {statistics.median(paired):.2f}x "
        f"({min(paired):.2f}-{max(paired):.2f})"
    )
