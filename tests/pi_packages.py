"""pi's npm packages for the tests that run pi's own code (its RPC clients, its SessionManager).

Each version lives in its own git-ignored ``node_modules``, installed with ``npm ci`` from the
committed ``package-lock.json`` the first time a test needs it: 0.73.1
(``@mariozechner/pi-coding-agent``, runs on the machine's Node) in ``tests/rpc/interop``, 1.6.0
(``@earendil-works/pi-coding-agent``, needs Node >= 22.19, so that folder also installs npm's
``node`` package) in ``tests/rpc/interop16``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RPC = Path(__file__).parent / "rpc"


@dataclass(frozen=True)
class PiPackage:
    version: str
    folder: Path
    package: Path
    """The ``pi-coding-agent`` package directory."""
    node: str
    """The Node binary to run it with."""


PI_073 = PiPackage(
    "0.73.1",
    RPC / "interop",
    RPC / "interop" / "node_modules" / "@mariozechner" / "pi-coding-agent",
    shutil.which("node") or "node",
)
PI_16 = PiPackage(
    "1.6.0",
    RPC / "interop16",
    RPC / "interop16" / "node_modules" / "@earendil-works" / "pi-coding-agent",
    str(RPC / "interop16" / "node_modules" / ".bin" / "node"),
)


def installed(pi: PiPackage) -> PiPackage:
    """``pi`` after ``npm ci`` in its folder when its package is missing (fails the test if npm does)."""
    if not (pi.package / "package.json").is_file():
        done = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=pi.folder,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        assert done.returncode == 0, f"npm ci in {pi.folder} failed:\n{done.stderr[-3000:]}"
    return pi


SESSIONS_SCRIPT = Path(__file__).parent / "session" / "pi" / "pi-sessions.mjs"
"""Writes pi session files with pi's own SessionManager and reads them back (see the script)."""


def run_sessions_script(pi: PiPackage, command: str, *args: str) -> Any:
    """Run ``pi-sessions.mjs COMMAND`` with this pi version; its JSON output."""
    done = subprocess.run(
        [pi.node, str(SESSIONS_SCRIPT), command, str(installed(pi).package), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def pi_context(path: Path, *continue_with: str) -> dict[str, Any]:
    """pi 1.6.0's ``buildSessionContext()`` of a session file (after continuing it, if asked):
    ``{messages, thinkingLevel, model, leafId, name}``."""
    extra = ("--continue", *continue_with) if continue_with else ()
    return run_sessions_script(PI_16, "context", str(path), *extra)
