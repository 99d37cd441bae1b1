"""The interactive mode in a real terminal (tmux): first paint and keystroke echo on a resumed
session, at 40 messages and at 10,000.

- First paint: from starting ``tether -c`` in a 100x30 tmux window to the status line drawn under
  the redrawn end of the conversation (the header, two screens of history, the input box).
- Keystroke echo: one character typed (``tmux send-keys``) until the input box shows it; the
  median of 20.

Both are read by polling ``tmux capture-pane`` (a poll costs a few milliseconds, which bounds the
resolution); medians of 3 launches, sizes interleaved. The ratio recorded is the 10,000-message
figure over the 40-message one, per launch (median, spread): 1.00 is flat. Nothing here is
asserted; the tmux test at 10,000 messages (tests/cli/test_cli_tui_pi.py) checks what is drawn.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _summary import record_paired
from _table import print_table
from tether.session import SessionManager
from tether.store import default_db_path

SIZES = (40, 10_000)
LAUNCHES = 3
KEYS = 20
USAGE = {
    "input": 10,
    "output": 5,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 15,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.001},
}


def fill(home: Path, project: Path, messages: int) -> None:
    """Turns of a prompt, an answer with a tool call, and its 12-line result."""
    with SessionManager.at(default_db_path({"TETHER_HOME": str(home)})) as sessions:
        session = sessions.create(project)
        for turn in range(messages // 3 + 1):
            session.append_message({"role": "user", "content": f"question {turn}", "timestamp": 0})
            answer: dict[str, Any] = {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Answer **{turn}**:\n- one\n- two"},
                    {
                        "type": "toolCall",
                        "id": f"c{turn}",
                        "name": "read",
                        "arguments": {"path": f"{turn}.py"},
                    },
                ],
                "api": "x",
                "provider": "x",
                "model": "x",
                "usage": USAGE,
                "stopReason": "toolUse",
                "timestamp": 0,
            }
            session.append_message(answer)  # pyright: ignore[reportArgumentType]
            lines = "\n".join(f"{n}: value_{n} = compute({n})" for n in range(12))
            session.append_message(
                {
                    "role": "toolResult",
                    "toolCallId": f"c{turn}",
                    "toolName": "read",
                    "content": [{"type": "text", "text": lines}],
                    "isError": False,
                    "timestamp": 0,
                }
            )
        session.close()


class Tmux:
    def __init__(self) -> None:
        self.socket = f"tether-bench-{uuid.uuid4().hex[:8]}"

    def __call__(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=False)
        return done.stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "t")

    def wait(self, check: Callable[[str], bool], timeout: float = 60) -> float:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if check(self.screen()):
                return time.perf_counter()
        raise SystemExit(f"timed out; screen:\n{self.screen()}")


def input_text(screen: str) -> str:
    below = screen.rsplit("─" * 20, 1)[-1].lstrip("─").split("\n")
    return below[1].rstrip() if len(below) > 1 else ""


def launch(home: Path, project: Path, script: Path) -> tuple[float, float]:
    """Milliseconds to the first paint, and the median keystroke echo."""
    tmux = Tmux()
    env = {
        "TETHER_HOME": str(home),
        "TETHER_SCRIPTED": str(script),
        "NO_COLOR": "1",
        "TERM": "xterm-256color",
        "PATH": os.environ["PATH"],
    }
    command = ["env", *(f"{k}={v}" for k, v in env.items()), sys.executable, "-m", "tether.cli", "-c"]
    try:
        start = time.perf_counter()
        tmux("new-session", "-d", "-s", "t", "-x", "100", "-y", "30", "-c", str(project), *command)
        painted = tmux.wait(lambda s: "resumed:" in s and " · thinking " in s.split("resumed:")[-1])
        echoes: list[float] = []
        typed = ""
        for n in range(KEYS):
            char = "abcdefghij"[n % 10]
            typed += char
            sent = time.perf_counter()
            tmux("send-keys", "-t", "t", "-l", char)
            echoes.append(tmux.wait(lambda s, t=typed: input_text(s) == f"› {t}") - sent)
        return (painted - start) * 1000, statistics.median(echoes) * 1000
    finally:
        tmux("kill-server")


def main() -> None:
    if shutil.which("tmux") is None:
        print("tmux is not installed: skipped")
        return
    with tempfile.TemporaryDirectory() as tmp:
        setups: dict[int, tuple[Path, Path, Path]] = {}
        for size in SIZES:
            home, project = Path(tmp) / f"home-{size}", Path(tmp) / f"project-{size}"
            project.mkdir(parents=True)
            fill(home, project, size)
            script = Path(tmp) / f"script-{size}.json"
            script.write_text(json.dumps({"responses": []}))
            setups[size] = (home, project, script)
        runs: dict[int, list[tuple[float, float]]] = {size: [] for size in SIZES}
        for _ in range(LAUNCHES):  # sizes interleaved: the ratios are taken within a round
            for size in SIZES:
                runs[size].append(launch(*setups[size]))
    results = {
        size: (statistics.median(r[0] for r in runs[size]), statistics.median(r[1] for r in runs[size]))
        for size in SIZES
    }
    small, large = results[SIZES[0]], results[SIZES[-1]]
    for index, measure in ((0, "first paint of -c"), (1, "keystroke echo")):
        record_paired(
            f"tmux: {measure}, {SIZES[-1]:,} vs {SIZES[0]} messages",
            [r[index] for r in runs[SIZES[-1]]],
            [r[index] for r in runs[SIZES[0]]],
            "40 messages",
            "flat",
        )
    print_table(
        "tether -c in tmux (100x30), ms: medians (ratio: of the medians; the summary's: per launch)",
        ["measure", *(f"{size:,} msgs" for size in SIZES), "ratio"],
        [
            [
                "first paint (launch to status line)",
                f"{small[0]:.0f}",
                f"{large[0]:.0f}",
                f"{large[0] / small[0]:.2f}",
            ],
            ["keystroke echo", f"{small[1]:.1f}", f"{large[1]:.1f}", f"{large[1] / small[1]:.2f}"],
        ],
    )


if __name__ == "__main__":
    main()
