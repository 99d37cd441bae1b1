"""Interop with the current pi client: pi 1.6.0's own ``RpcClient`` drives ``tether --mode rpc``.

``interop16/pi16-client.test.mjs`` uses ``RpcClient`` from ``@earendil-works/pi-coding-agent@1.6.0``
with ``cliPath`` pointing at the shim that runs tether (``interop/tether-shim.mjs``). pi 1.x needs
Node >= 22.19, so the folder's ``package.json`` also pins npm's ``node`` package: ``npm ci``
(run here when ``node_modules`` is missing; the folder is git-ignored) puts a Node 22 binary in
``node_modules/.bin``, which goes first on ``PATH`` (pi's client starts the shim with ``node``).
The script walks the 1.x protocol: dispositions, ``agent_settled``, delta fields, queues, abort,
retry, compaction, entries and tree, model and thinking commands, sessions.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from rpc_support import RpcEnv, bash_reply, run_node_client, text_reply

from pi_packages import PI_16, installed

pytestmark = [pytest.mark.node, pytest.mark.subprocess]

INTEROP = PI_16.folder
NODE_BIN = Path(PI_16.node).parent


@pytest.mark.skipif(shutil.which("npm") is None, reason="needs npm (it brings its own Node 22)")
def test_pi16_rpc_client_drives_tether(rpc: RpcEnv) -> None:
    installed(PI_16)
    rpc.settings(retry={"baseDelayMs": 20}, compaction={"keepRecentTokens": 1})
    rpc.script(
        [
            text_reply("Hello ", "from ", "tether"),
            bash_reply("sleep 1; echo tool-ran"),
            text_reply("steered"),
            text_reply("followed up"),
            text_reply("one more done"),
            bash_reply("sleep 30"),
            text_reply("never reached"),  # the call the abort cuts short takes a reply too
            {"content": [], "error": "529 overloaded_error: Overloaded"},
            text_reply("worked the second time"),
            text_reply("SUMMARY: a short talk"),
        ]
    )
    env = rpc.env(
        TETHER_COMMAND=json.dumps([sys.executable, "-m", "tether.cli"]),
        PATH=f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    script = INTEROP / "pi16-client.test.mjs"
    result = run_node_client(
        str(NODE_BIN / "node"), script, cwd=rpc.project, env=env, timeout=300, who="pi 1.6's client"
    )
    assert result == {
        "ok": True,
        "steps": [
            "prompt",
            "state",
            "steer_follow_up",
            "clear_queue_abort",
            "retry",
            "compact",
            "entries_tree",
            "model_thinking",
            "session",
            "misc",
        ],
    }
