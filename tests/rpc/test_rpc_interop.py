"""Interop with a client we did not write: pi's own ``RpcClient`` drives ``tether --mode rpc``.

``interop/pi-client.test.mjs`` uses ``RpcClient`` from ``@mariozechner/pi-coding-agent@0.73.1``
(installed here with ``npm ci`` when ``node_modules`` is missing; the folder is git-ignored) with
``cliPath`` pointing at a shim that runs tether. It calls every method of that client (prompting,
streaming, steering and following up, abort, the session, model, thinking and compaction
commands); every call must succeed as against pi.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rpc_support import RpcEnv, bash_reply, run_node_client, text_reply

pytestmark = [pytest.mark.node, pytest.mark.subprocess]

INTEROP = Path(__file__).with_name("interop")


def _install() -> None:
    if (INTEROP / "node_modules" / "@mariozechner" / "pi-coding-agent" / "package.json").is_file():
        return
    done = subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=INTEROP,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"npm ci failed:\n{done.stderr[-3000:]}"


@pytest.mark.skipif(shutil.which("node") is None or shutil.which("npm") is None, reason="needs node and npm")
def test_pi_rpc_client_drives_tether(rpc: RpcEnv) -> None:
    _install()
    rpc.script(
        [
            text_reply("Hello ", "from ", "tether"),
            bash_reply("sleep 1; echo tool-ran"),
            text_reply("steered"),
            text_reply("followed up"),
            bash_reply("sleep 30"),
            text_reply("never reached"),  # the call the abort cuts short takes a reply too
            text_reply("again"),
            text_reply("SUMMARY: a short talk"),
        ]
    )
    rpc.settings(compaction={"keepRecentTokens": 1})
    env = rpc.env(TETHER_COMMAND=json.dumps([sys.executable, "-m", "tether.cli"]))
    script = INTEROP / "pi-client.test.mjs"
    result = run_node_client("node", script, cwd=rpc.project, env=env, timeout=180, who="pi's client")
    assert result == {
        "ok": True,
        "steps": [
            "prompt",
            "get_state",
            "get_messages",
            "steer",
            "abort",
            "rest",
            "new_session",
            "switch_session",
            "misc",
        ],
    }
