"""``tether`` and Python's cyclic collector: paused while starting, on for the run, and out of the
way at exit.

The pause (``cli/main.py``) saves the collections that the loading of a run's modules would
trigger; the run (``cli/run.py``, once the session core is built) must collect as any long-lived
process does, or an hour-long interactive session would never free a cycle. At exit, the command
freezes what is left, so that the interpreter's shutdown frees it without collecting it first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tether

SOURCE = str(Path(tether.__file__).resolve().parents[1])

PROBE = """
import gc, json, sys
import tether.cli.headless as headless
from tether.session.factory import SessionOptions

seen = []
create, run_print = SessionOptions.create, headless.run_print

def spy_create(self, *args, **kwargs):
    seen.append(("building the core", gc.isenabled()))
    return create(self, *args, **kwargs)

async def spy_run_print(*args, **kwargs):
    seen.append(("running", gc.isenabled()))
    return await run_print(*args, **kwargs)

SessionOptions.create, headless.run_print = spy_create, spy_run_print
from tether.cli.main import main
try:
    main(["-p", "hi", *sys.argv[1:]])
except SystemExit as exit:
    assert not exit.code
seen.append(("after", gc.isenabled()))
print(json.dumps(seen))
"""


@pytest.mark.subprocess
@pytest.mark.parametrize("options", [["--no-session"], []], ids=["no-session", "stored"])
def test_the_collector_is_paused_while_starting_and_on_for_the_run(
    tmp_path: Path, options: list[str]
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": [{"type": "text", "chunks": ["hello"]}]}]))
    env = {
        "TETHER_HOME": str(tmp_path),
        "TETHER_SCRIPTED": str(script),
        "NO_COLOR": "1",
        "PATH": "/usr/bin:/bin",
    }
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", SOURCE)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *options], capture_output=True, text=True, env=env, check=True
    )
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen == [["building the core", False], ["running", True], ["after", True]]


ACP_PROBE = """
import gc, json
import tether.acp.server as server

seen = []
def spy_run_acp(options):
    seen.append(gc.isenabled())
    return 0

server.run_acp = spy_run_acp
from tether.cli.main import main
try:
    main(["--mode", "acp"])
except SystemExit as exit:
    assert not exit.code
print(json.dumps(seen))
"""


@pytest.mark.subprocess
def test_the_acp_server_runs_with_the_collector_on(tmp_path: Path) -> None:
    env = {"TETHER_HOME": str(tmp_path), "NO_COLOR": "1", "PATH": "/usr/bin:/bin"}
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", SOURCE)
    done = subprocess.run(
        [sys.executable, "-c", ACP_PROBE], capture_output=True, text=True, env=env, check=True
    )
    assert json.loads(done.stdout.splitlines()[-1]) == [True]


EXIT_PROBE = """
import atexit, gc, sys
from tether.cli.main import command, main
atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0))
sys.argv = ["tether", "-p", "hi", "--no-session"]
{entry}()
"""


@pytest.mark.subprocess
@pytest.mark.parametrize(("entry", "frozen"), [("command", True), ("main", False)])
def test_the_command_freezes_what_is_left_before_exiting(tmp_path: Path, entry: str, frozen: bool) -> None:
    """The console script does; ``main``, which tests call in their own process, does not."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": [{"type": "text", "chunks": ["hello"]}]}]))
    env = {
        "TETHER_HOME": str(tmp_path),
        "TETHER_SCRIPTED": str(script),
        "NO_COLOR": "1",
        "PATH": "/usr/bin:/bin",
    }
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", SOURCE)
    probe = EXIT_PROBE.replace("{entry}", entry)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.splitlines() == ["hello", f"frozen at exit: {frozen}"]
