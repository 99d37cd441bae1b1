"""The ``tether`` command and Python's cyclic collector: paused while a run starts, on (with the
start-up's objects frozen) for the run itself, and frozen again at exit.

The pause (``cli/main.py`` ``command``) saves the collections that loading a run's modules would
set off; the run (``cli/run.py``, once the session core is built) must collect as any long-lived
process does, or an hour-long interactive session would never free a cycle. At exit, the command
freezes what is left, so that the interpreter's shutdown frees it without collecting it first.
``main``, which tests and programs call in their own process, leaves the collector alone.
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
import atexit, gc, json, sys
import tether.cli.headless as headless
from tether.cli.main import command, main
import tether.session.factory as factory

seen = []
create, run_print = factory.start_session, headless.run_print

def spy_create(*args, **kwargs):
    seen.append(["building the core", gc.isenabled(), gc.get_freeze_count() > 0])
    return create(*args, **kwargs)

async def spy_run_print(*args, **kwargs):
    seen.append(["running", gc.isenabled(), gc.get_freeze_count() > 0])
    return await run_print(*args, **kwargs)

factory.start_session, headless.run_print = spy_create, spy_run_print
atexit.register(lambda: print(json.dumps(seen)))
entry, *options = sys.argv[1:]
sys.argv = ["tether", "-p", "hi", *options]
if entry == "command":
    command()
else:
    try:
        main()
    finally:
        seen.append(["after main", gc.isenabled(), gc.get_freeze_count() > 0])
"""


def probe_env(tmp_path: Path) -> dict[str, str]:
    """A fresh home, a scripted model answering "hello", and this checkout's tether."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": [{"type": "text", "chunks": ["hello"]}]}]))
    return {
        "TETHER_HOME": str(tmp_path),
        "TETHER_SCRIPTED": str(script),
        "NO_COLOR": "1",
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": os.environ.get("PYTHONPATH", SOURCE),
    }


def run_probe(tmp_path: Path, *args: str) -> list[list[object]]:
    env = probe_env(tmp_path)
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "hello"
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.subprocess
@pytest.mark.parametrize("options", [["--no-session"], []], ids=["no-session", "stored"])
def test_the_command_pauses_the_collector_while_starting_and_runs_with_it_on(
    tmp_path: Path, options: list[str]
) -> None:
    seen = run_probe(tmp_path, "command", *options)
    assert seen == [["building the core", False, False], ["running", True, True]]


@pytest.mark.subprocess
def test_main_leaves_the_collector_alone(tmp_path: Path) -> None:
    seen = run_probe(tmp_path, "main", "--no-session")
    assert seen == [["building the core", True, False], ["running", True, False], ["after main", True, False]]


@pytest.mark.subprocess
@pytest.mark.parametrize(
    "args",
    [["-p", "hi", "--no-session"], ["sessions", "list"], ["--version"]],
    ids=["run", "subcommand", "version"],
)
def test_the_command_freezes_what_is_left_before_exiting(tmp_path: Path, args: list[str]) -> None:
    env = probe_env(tmp_path)
    probe = "import atexit, gc, sys\nfrom tether.cli.main import command\n"
    probe += 'atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0))\n'
    probe += f"sys.argv = ['tether', *{args!r}]\ncommand()\n"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env)
    assert done.stdout.splitlines()[-1] == "frozen at exit: True"


ACP_PROBE = """
import gc, json, sys
import tether.acp.server as server
from tether.cli.main import command

seen = []
def spy_run_acp(*args):
    seen.append(gc.isenabled())
    return 0

server.run_acp = spy_run_acp
sys.argv = ["tether", "--mode", "acp"]
try:
    command()
except SystemExit as exit:
    assert not exit.code
finally:
    print(json.dumps(seen))
"""


@pytest.mark.subprocess
def test_the_acp_server_runs_with_the_collector_on(tmp_path: Path) -> None:
    env = probe_env(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", ACP_PROBE], capture_output=True, text=True, env=env, check=True
    )
    assert json.loads(done.stdout.splitlines()[-1]) == [True]
