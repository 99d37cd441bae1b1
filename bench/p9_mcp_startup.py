"""Benchmark P9: time from start to the first prompt with 3 stdio MCP servers configured, against none.

Median wall time (N runs each, after one warm-up run) of, with the scripted model:
- ``tether -p hi --no-session``: start, the first prompt's answer, exit. The first prompt waits for
  the servers still starting, so this is the whole cost a script pays for its servers;
- ``tether --mode rpc``: from spawn to the ``ready`` frame (servers start in the background, so this
  should not move), and from spawn to the first ``prompt_result``.
Server sets (``--mcp-config``, a file in a temporary folder):
- ``none``;
- ``1 toy``, ``3 toy``: one and three copies of ``tests/mcp/toy_server.py`` (the Python SDK's server API);
- ``time+fs+everything``: ``mcp-server-time`` (PyPI) and the npm filesystem and everything servers,
  when the MCP tests have installed them (``tests/mcp_packages.py``); otherwise left out.
Ratios are to ``none``. The servers are separate processes, so the ratio mostly measures their own
start (a Python interpreter importing the SDK, or Node), which tether overlaps by starting them in
parallel: the goal is that 3 servers cost about as much as the slowest one, not 3 times it.
"""

from __future__ import annotations

import asyncio
import json
import os
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
    }
    if (TIME_FOLDER / "mcp_server_time").is_dir() and (NPM_BIN / "mcp-server-everything").exists():
        sets["time+fs+everything"] = {
            "time": time_server(),
            "fs": filesystem_server(files),
            "everything": everything_server(),
        }
    return sets


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples[1:]) * 1000  # the first run warms caches and is left out


def print_mode(config: Path, env: dict[str, str], cwd: Path) -> float:
    samples: list[float] = []
    for _ in range(RUNS + 1):
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "tether.cli", "-p", "hi", "--no-session", "--mcp-config", str(config)],
            env=env,
            cwd=cwd,
            capture_output=True,
            check=False,
        )
        samples.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"tether -p failed: {done.stderr.decode()[-500:]}")
    return median_ms(samples)


async def rpc_mode(config: Path, env: dict[str, str], cwd: Path) -> tuple[float, float]:
    ready: list[float] = []
    answered: list[float] = []
    for _ in range(RUNS + 1):
        start = time.perf_counter()
        async with RpcClient.spawn(["--no-session", "--mcp-config", str(config)], cwd=cwd, env=env) as client:
            ready.append(time.perf_counter() - start)
            result = await client.prompt("hi")
            answered.append(time.perf_counter() - start)
            if result["status"] != "completed":
                raise SystemExit(f"the RPC prompt ended {result['status']}")
    return median_ms(ready), median_ms(answered)


def main() -> None:
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
        rows: list[tuple[str, float, float, float]] = []
        for name, servers in server_sets(folder / "files").items():
            config = folder / f"{name.replace(' ', '-')}.json"
            config.write_text(json.dumps({"mcpServers": servers}))
            printed = print_mode(config, env, folder)
            ready, answered = asyncio.run(rpc_mode(config, env, folder))
            rows.append((name, printed, ready, answered))
    base = rows[0]
    for name, printed, _ready, answered in rows[1:]:
        record(f"-p with {name}", printed / base[1], "no MCP server")
        record(f"rpc 1st answer with {name}", answered / base[3], "no MCP server")
    print_table(
        f"P9 start to first prompt with MCP servers, median of {RUNS} runs (ms; x = ratio to none)",
        ["servers", "-p ms", "x", "rpc ready ms", "x", "rpc 1st answer ms", "x"],
        [
            (
                name,
                f"{p:.0f}",
                f"{p / base[1]:.2f}",
                f"{r:.0f}",
                f"{r / base[2]:.2f}",
                f"{a:.0f}",
                f"{a / base[3]:.2f}",
            )
            for name, p, r, a in rows
        ],
    )
    if len(rows) < 4:
        print("time+fs+everything: not installed (run tests/cli/test_cli_mcp_third_party.py once)")


if __name__ == "__main__":
    main()
