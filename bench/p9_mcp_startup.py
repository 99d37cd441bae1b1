"""Benchmark P9: start to the first answer with stdio MCP servers configured, against none.

Each repetition runs every server set in turn (paired, interleaved: the machine's load hits all
alike), after one warm-up repetition, with the scripted model:
- ``tether -p hi --no-session``: start, the first prompt's answer, exit, as whole-process CPU
  (``RUSAGE_CHILDREN``: tether and every server it started and reaped) and wall time;
- ``tether --mode rpc``: from spawn to the ``ready`` frame, and to the first ``prompt_result``
  (wall), and the whole process's CPU.
Server sets (``--mcp-config``, a file in a temporary folder):
- ``none``;
- ``1 toy``, ``3 toy``: one and three copies of ``tests/mcp/toy_server.py`` (the Python SDK's server API);
- ``1 toy, cold``: the same server with its kept listing removed before each run, so the run
  starts it and waits for it (the first run after its configuration changed);
- ``time+fs+everything``: ``mcp-server-time`` (PyPI) and the npm filesystem and everything servers,
  when the MCP tests have installed them (``tests/mcp_packages.py``); otherwise left out.
A server's listing is kept after its first start (``tether.mcp.tool_cache``; the warm-up fills
it), so the warm rows measure a run that offers the servers' tools without starting them (the
model calls none); the cold row measures a server's own start (a Python interpreter importing
the SDK, as tether also does), which tether overlaps across servers by starting them in parallel.
Ratios are to ``none``: the median of the per-repetition ratios, with their lowest and highest.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _summary import record
from _table import print_table

RUNS = 7
ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "tests" / "mcp" / "toy_server.py"
sys.path.insert(0, str(ROOT / "tests"))

from mcp_packages import NPM_BIN, TIME_FOLDER, everything_server, filesystem_server, time_server  # noqa: E402
from tether.rpc import RpcClient  # noqa: E402


def server_sets(files: Path) -> dict[str, dict[str, Any]]:
    toy = {"command": sys.executable, "args": [str(TOY)]}
    sets: dict[str, dict[str, Any]] = {
        "none": {},
        "1 toy": {"a": toy},
        "3 toy": {"a": toy, "b": toy, "c": toy},
        "1 toy, cold": {"a": toy},  # in a home of its own, whose kept listings are removed each run
    }
    if (TIME_FOLDER / "mcp_server_time").is_dir() and (NPM_BIN / "mcp-server-everything").exists():
        sets["time+fs+everything"] = {
            "time": time_server(),
            "fs": filesystem_server(files),
            "everything": everything_server(),
        }
    return sets


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def print_mode(config: Path, env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one ``tether -p`` (its servers' CPU included)."""
    cpu, start = cpu_of_children(), time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli", "-p", "hi", "--no-session", "--mcp-config", str(config)],
        env=env,
        cwd=cwd,
        capture_output=True,
        check=False,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"tether -p failed: {done.stderr.decode()[-500:]}")
    return wall, cpu_of_children() - cpu


async def rpc_mode(config: Path, env: dict[str, str], cwd: Path) -> tuple[float, float, float]:
    """Seconds to ``ready``, to the first answer, and the whole process's CPU."""
    cpu, start = cpu_of_children(), time.perf_counter()
    async with RpcClient.spawn(["--no-session", "--mcp-config", str(config)], cwd=cwd, env=env) as client:
        ready = time.perf_counter() - start
        result = await client.prompt("hi")
        answered = time.perf_counter() - start
        if result["status"] != "completed":
            raise SystemExit(f"the RPC prompt ended {result['status']}")
    return ready, answered, cpu_of_children() - cpu


def ratios(samples: dict[str, list[float]], name: str) -> list[float]:
    return [a / b for a, b in zip(samples[name], samples["none"], strict=True)]


def main() -> None:
    figures = ("-p cpu", "-p wall", "rpc ready", "rpc 1st answer", "rpc cpu")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "home").mkdir()
        (folder / "files").mkdir()
        script = folder / "script.json"
        script.write_text(
            json.dumps({"responses": [{"content": [{"type": "text", "chunks": ["hello"]}]}] * 99})
        )
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update({"TETHER_HOME": str(folder / "home"), "TETHER_SCRIPTED": str(script), "NO_COLOR": "1"})
        cold_env = {**env, "TETHER_HOME": str(folder / "cold-home")}
        kept = folder / "cold-home" / "data" / "mcp-tools"
        sets = server_sets(folder / "files")
        configs: dict[str, Path] = {}
        for name, servers in sets.items():
            configs[name] = folder / f"{name.replace(' ', '-').replace(',', '')}.json"
            configs[name].write_text(json.dumps({"mcpServers": servers}))
        samples: dict[str, dict[str, list[float]]] = {name: {f: [] for f in figures} for name in sets}
        for repetition in range(RUNS + 1):
            for name, config in configs.items():
                cold = name.endswith("cold")
                shutil.rmtree(kept, ignore_errors=True)
                wall, cpu = print_mode(config, cold_env if cold else env, folder)
                shutil.rmtree(kept, ignore_errors=True)
                ready, answered, rpc_cpu = asyncio.run(rpc_mode(config, cold_env if cold else env, folder))
                if repetition:  # the first repetition warms caches and keeps the listings
                    for figure, value in zip(figures, (cpu, wall, ready, answered, rpc_cpu), strict=True):
                        samples[name][figure].append(value)
    load = os.getloadavg()
    rows: list[tuple[str, ...]] = []
    for name, figure_samples in samples.items():
        row = [name]
        for figure in figures:
            median = statistics.median(figure_samples[figure]) * 1000
            paired = ratios({n: s[figure] for n, s in samples.items()}, name)
            row += [f"{median:.0f}", f"{statistics.median(paired):.2f} ({min(paired):.2f}-{max(paired):.2f})"]
            if name != "none" and figure in ("-p cpu", "-p wall", "rpc 1st answer", "rpc cpu"):
                record(f"{figure} with {name}", statistics.median(paired), "no MCP server", samples=paired)
        rows.append(tuple(row))
    print_table(
        f"P9 start to first answer with MCP servers, {RUNS} paired repetitions (ms; x = ratio to none, "
        f"median (min-max)); load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
        ["servers", *(h for f in figures for h in (f"{f} ms", "x"))],
        rows,
    )
    if "time+fs+everything" not in samples:
        print("time+fs+everything: not installed (run tests/cli/test_cli_mcp_third_party.py once)")


if __name__ == "__main__":
    main()
