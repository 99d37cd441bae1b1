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


SERVICE_PROBE = """
import gc, json, sys
import tether.cli.serve_cmd as serve_cmd
import tether.durable.worker as worker
from tether.cli.main import command, main

seen = []

def state():
    return [gc.isenabled(), gc.get_freeze_count() > 0, gc.get_threshold()[0]]

async def spy_serve(*args):
    seen.append(state())

def spy_worker(runtime, stop, on_ready=None):
    on_ready()
    seen.append(state())
    return worker.Stopped(cut=False, left=0)

serve_cmd._serve, worker.serve = spy_serve, spy_worker
entry, *args = sys.argv[1:]
sys.argv = ["tether", *args]
try:
    command() if entry == "command" else main()
except SystemExit as exit:
    assert not exit.code, exit.code
finally:
    print(json.dumps(seen))
"""


@pytest.mark.subprocess
@pytest.mark.parametrize("args", [["serve", "--port", "0"], ["worker"]], ids=["serve", "worker"])
@pytest.mark.parametrize("entry", ["command", "main"])
def test_serve_and_the_worker_run_with_the_collector_tuned_for_many_sessions(
    tmp_path: Path, args: list[str], entry: str
) -> None:
    """Once started, ``tether serve`` and ``tether worker`` run with what the start-up made frozen
    and the young threshold raised (``tune_gc``); ``main`` in a process of its own, as a test
    or a program calls it, leaves the collector as it found it."""
    from tether.gc_tuning import YOUNG_THRESHOLD

    env = probe_env(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", SERVICE_PROBE, entry, *args], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    expected = [True, True, YOUNG_THRESHOLD] if entry == "command" else [True, False, 700]
    assert json.loads(done.stdout.splitlines()[-1]) == [expected]
