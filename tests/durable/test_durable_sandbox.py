"""A durable worker runs each run's tools in the sandbox of that run's workspace.

A real ``tether worker`` process (SQLite session and run databases) takes a run whose model calls
``bash`` to write in the workspace, write beside it, read the session and run databases, and read
a file in another session's workspace (hidden without any setting).
Confined (the default settings, no ``--yes``: sandboxed commands need no approval), only the
write in the workspace works. Then the same run with ``"sandbox": "off"`` in the user's settings
(and ``--yes``, since unconfined commands need approval) shows that every attempt was real.

Everything lives under the home folder, not in ``/tmp``: the sandbox gives commands a private
``/tmp``, where a database or a target would be invisible for the wrong reason.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether.durable.client import DurableClient
from tether.durable.config import DurableConfig
from tether.session.manager import SessionManager
from tether.tools.sandbox import unavailable

pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.skipif(
        unavailable() is not None and not os.environ.get("TETHER_REQUIRE_SANDBOX"),
        reason=f"no sandbox here: {unavailable()}",
    ),
]

SRC = Path(__file__).resolve().parents[2] / "src"
HERE = Path(__file__).resolve().parent
MODEL = "anthropic/claude-sonnet-4-5"
SQLITE_HEADER = "SQLite format 3"


@pytest.fixture
def place() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="tether-durable-sandbox-", dir=Path.home()))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def wait_for(done: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


class Worker:
    """One ``tether worker`` process, stopped with SIGTERM at the end of the block."""

    def __init__(self, place: Path, env: dict[str, str], *flags: str) -> None:
        self.log = place / "worker.log"
        command = [sys.executable, "-m", "tether.cli", "worker", "--name", "w1", "--model", MODEL]
        command += ["--setup", "confined_workload:setup", *flags]
        start = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(command, env=env, cwd=place, stdout=log, stderr=log)
        wait_for(lambda: b"taking runs" in self.log.read_bytes()[start:], 60, "the worker")

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def run_once(place: Path, sessions: str, system: str) -> list[dict[str, Any]]:
    """A new session in the workspace, one run on it to its end: the run's bash results in order."""
    with SessionManager.at(sessions) as manager:
        session = manager.create(place / "workspace")
        session.close()
    with DurableClient(DurableConfig(system_database=system, sessions=sessions)) as client:
        run = client.submit(session.id, "go")
        wait_for(lambda: client.status(run) in ("SUCCESS", "ERROR"), 120, "the run")
        assert client.status(run) == "SUCCESS", (place / "worker.log").read_text()[-3000:]
    with SessionManager.at(sessions) as manager:
        messages = [
            json.loads(e.payload)["message"] for e in manager.store.entries(session.id) if e.type == "message"
        ]
    results = {m["toolCallId"]: m for m in messages if m["role"] == "toolResult"}
    return [results[f"call-{i}"] for i in range(len(results))]


def said(result: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in result["content"])


def test_a_workers_run_is_confined_to_its_workspace(place: Path) -> None:
    workspace, beside, home = place / "workspace", place / "beside", place / "home"
    for folder in (workspace, beside, home):
        folder.mkdir()
    database, runs = place / "db" / "sessions.sqlite", place / "db" / "runs.sqlite"
    database.parent.mkdir()
    sessions, system = f"sqlite:///{database}", f"sqlite:///{runs}"
    sibling = place / "sibling"  # another session's workspace on this worker: hidden, no setting
    sibling.mkdir()
    (sibling / "secret.txt").write_text("SIBLING-SECRET")
    with SessionManager.at(sessions) as manager:  # the file exists before the worker starts
        manager.create(sibling).close()
    commands = [
        "echo made > made.txt && cat made.txt",
        f"echo escaped > {beside / 'escaped.txt'}",
        f"head -c 15 {database}",
        f"head -c 15 {runs}",
        f"cat {sibling / 'secret.txt'}",
    ]
    env = {
        **os.environ,
        "PYTHONPATH": f"{SRC}{os.pathsep}{HERE}",
        "TETHER_HOME": str(home),
        "TETHER_DATABASE_URL": sessions,
        "TETHER_DURABLE_DATABASE_URL": system,
        "TETHER_TEST_COMMANDS": json.dumps(commands),
    }

    with Worker(place, env):
        made, escaped, session_db, run_db, other = run_once(place, sessions, system)
    assert not made["isError"] and said(made).strip() == "made"
    assert (workspace / "made.txt").read_text() == "made\n"
    assert escaped["isError"] and "Read-only file system" in said(escaped)
    assert not (beside / "escaped.txt").exists()
    assert SQLITE_HEADER not in said(session_db) and SQLITE_HEADER not in said(run_db)
    assert other["isError"] and "SIBLING-SECRET" not in said(other)

    (home / "config").mkdir(exist_ok=True)
    (home / "config" / "settings.json").write_text(json.dumps({"sandbox": "off"}))
    (workspace / "made.txt").unlink()
    with Worker(place, env, "--yes"):
        made, escaped, session_db, run_db, other = run_once(place, sessions, system)
    assert not made["isError"] and (workspace / "made.txt").exists()
    assert not escaped["isError"] and (beside / "escaped.txt").read_text() == "escaped\n"
    assert said(session_db).startswith(SQLITE_HEADER) and said(run_db).startswith(SQLITE_HEADER)
    assert not other["isError"] and said(other) == "SIBLING-SECRET"
