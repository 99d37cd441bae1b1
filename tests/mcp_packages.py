"""Third-party MCP servers for the tests that show tether with servers it did not write.

- ``mcp-server-time`` (PyPI) is installed with ``pip install --target`` into
  ``.cache/mcp-server-time-<version>`` at the repository root (git-ignored) the first time a test
  needs it. Not in the ``dev`` extra: a server is a separate program with its own dependency
  closure (users run it with ``uvx``), so it gets its own folder, started with this interpreter and
  ``PYTHONPATH`` pointing there — its pins can never move tether's environment, and tether never
  sees the server's copy of the SDK.
- ``@modelcontextprotocol/server-filesystem`` and ``@modelcontextprotocol/server-everything`` (npm)
  live in ``tests/mcp/npm_servers``: ``npm ci`` from the committed ``package-lock.json`` installs
  them into its git-ignored ``node_modules`` the first time. Both run on Node 20.

Each function returns one ``mcpServers`` entry (the ``.mcp.json`` shape), so the same server can
go into a config file, an ACP ``session/new`` or an ``McpServerConfig``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TIME_VERSION = "2026.10.19"
TIME_FOLDER = ROOT / ".cache" / f"mcp-server-time-{TIME_VERSION}"
NPM_FOLDER = Path(__file__).resolve().parent / "mcp" / "npm_servers"
NPM_BIN = NPM_FOLDER / "node_modules" / ".bin"


def time_server() -> dict[str, Any]:
    """``mcp-server-time`` over stdio, its local time zone fixed to UTC."""
    if not (TIME_FOLDER / "mcp_server_time").is_dir():
        TIME_FOLDER.parent.mkdir(parents=True, exist_ok=True)
        # installed next to the final folder, then renamed: a run cut short leaves no half install
        staging = Path(tempfile.mkdtemp(prefix="mcp-server-time-", dir=TIME_FOLDER.parent))
        done = subprocess.run(
            [
                *(sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"),
                *("--target", str(staging), f"mcp-server-time=={TIME_VERSION}"),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
        assert done.returncode == 0, f"pip could not install mcp-server-time:\n{done.stderr[-3000:]}"
        try:
            staging.rename(TIME_FOLDER)
        except OSError:  # another run installed it first
            shutil.rmtree(staging, ignore_errors=True)
    return {
        "command": sys.executable,
        "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
        "env": {"PYTHONPATH": str(TIME_FOLDER)},
    }


def _npm_installed() -> None:
    if not (NPM_BIN / "mcp-server-everything").exists() or not (NPM_BIN / "mcp-server-filesystem").exists():
        done = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=NPM_FOLDER,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        assert done.returncode == 0, f"npm ci in {NPM_FOLDER} failed:\n{done.stderr[-3000:]}"


def filesystem_server(*roots: Path) -> dict[str, Any]:
    """The reference filesystem server, allowed to read and write under ``roots`` only."""
    _npm_installed()
    return {"command": str(NPM_BIN / "mcp-server-filesystem"), "args": [str(r) for r in roots]}


def everything_server() -> dict[str, Any]:
    """The reference server that exercises the protocol (``get-sum``, ``get-tiny-image``, ...)."""
    _npm_installed()
    return {"command": str(NPM_BIN / "mcp-server-everything"), "args": ["stdio"]}
