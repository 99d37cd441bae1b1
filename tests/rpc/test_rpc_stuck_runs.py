"""A run stuck on a dependency never takes the RPC front end with it: ``abort`` is answered
whatever the run waits for, closing stdin ends the process, and a PostgreSQL outage ends the run
with one clear error (one log line, not one per reconnection attempt). Real processes: ``tether
--mode rpc``, a hung extension hook, a private PostgreSQL server killed mid-run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from postgres_support import postgres_bin_dir
from tether.testing.postgres import PostgresServer, postgres_server

pytestmark = pytest.mark.subprocess


class Rpc:
    """``tether --mode rpc`` with its frames and stderr lines collected by threads."""

    def __init__(self, cwd: Path, env: dict[str, str], *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tether.cli", "--mode", "rpc", *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.frames: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._changed = threading.Condition()
        threading.Thread(target=self._collect, args=(self.process.stdout, True), daemon=True).start()
        threading.Thread(target=self._collect, args=(self.process.stderr, False), daemon=True).start()

    def _collect(self, stream: Any, frames: bool) -> None:
        for line in stream:
            with self._changed:
                if frames:
                    self.frames.append(json.loads(line))
                else:
                    self.errors.append(line.decode())
                self._changed.notify_all()

    def send(self, **command: Any) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command).encode() + b"\n")
        self.process.stdin.flush()

    def wait_for(
        self, test: Callable[[dict[str, Any]], bool], what: str, timeout: float = 60
    ) -> dict[str, Any]:
        """The first frame passing ``test``; fails naming ``what`` when none comes (a hang)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = next((f for f in self.frames if test(f)), None)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                assert left > 0, f"no {what}; frames: {[f.get('type') for f in self.frames]}"
                self._changed.wait(left)

    def close_stdin_and_wait(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            return self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError("closing stdin did not end the RPC process") from None


def _env(home: Path, script: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "TETHER_DATABASE_URL"}
    return env | {"TETHER_HOME": str(home), "TETHER_SCRIPTED": str(script), "NO_COLOR": "1"} | extra


def _script(path: Path, *responses: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"responses": list(responses)}))
    return path


def _response(request_id: str) -> Callable[[dict[str, Any]], bool]:
    return lambda f: f.get("type") == "response" and f.get("id") == request_id


HUNG_HOOK = """\
import asyncio

def setup(api):
    @api.on("before_run")
    async def hang(context):
        await asyncio.Event().wait()  # a hook that never returns and ignores aborts
"""


def test_abort_is_answered_and_stdin_closes_while_a_hook_hangs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "config" / "extensions").mkdir(parents=True)
    (home / "config" / "extensions" / "hang.py").write_text(HUNG_HOOK)
    script = _script(tmp_path / "s.json", {"content": [{"type": "text", "text": "never"}]})
    rpc = Rpc(tmp_path, _env(home, script))
    try:
        rpc.send(type="prompt", id="p1", message="go")
        rpc.wait_for(_response("p1"), "answer to the prompt")
        rpc.send(type="abort", id="a1")
        answer = rpc.wait_for(_response("a1"), "answer to abort while the hook hangs")
        assert answer["success"] is True
        rpc.send(type="get_state", id="s1")
        assert rpc.wait_for(_response("s1"), "answer to get_state")["success"] is True
        code = rpc.close_stdin_and_wait()
    finally:
        if rpc.process.poll() is None:
            rpc.process.kill()
            rpc.process.wait()
    assert code == 0, rpc.errors
    assert not any("Traceback" in line for line in rpc.errors), rpc.errors


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    """A server of this test's own: it is killed mid-run."""
    with postgres_server(postgres_bin_dir()) as server:
        yield server


def test_a_database_outage_ends_the_run_with_one_clear_error(
    tmp_path: Path, own_postgres: PostgresServer
) -> None:
    home = tmp_path / "home"
    marker = tmp_path / "started"
    call = {
        "type": "toolCall",
        "id": "c1",
        "name": "bash",
        "arguments": {"command": f"touch {marker}; sleep 3"},
    }
    script = _script(
        tmp_path / "s.json", {"content": [call]}, {"content": [{"type": "text", "text": "done"}]}
    )
    rpc = Rpc(tmp_path, _env(home, script, TETHER_DATABASE_URL=own_postgres.url()), "--yes")
    try:
        rpc.send(type="prompt", id="p1", message="go")
        rpc.wait_for(lambda f: f.get("type") == "tool_execution_start", "tool call")
        while not marker.exists():
            assert rpc.process.poll() is None
            time.sleep(0.05)
        own_postgres.process.send_signal(signal.SIGKILL)  # the server dies mid-run
        own_postgres.process.wait(30)
        rpc.send(type="abort", id="a1")
        assert rpc.wait_for(_response("a1"), "answer to abort during the outage")["success"] is True
        # the store rides an outage for a bounded time (a restart), then gives up: the run ends
        result = rpc.wait_for(lambda f: f.get("type") == "prompt_result", "end of the run", timeout=240)
        assert result["status"] == "error"
        assert result["error"].startswith(f"session database {own_postgres.url()}: ")
        rpc.close_stdin_and_wait()
    finally:
        if rpc.process.poll() is None:
            rpc.process.kill()
            rpc.process.wait()
    database_lines = [line for line in rpc.errors if "session database" in line]
    pool_lines = [line for line in database_lines if "further connection errors are not shown" in line]
    assert len(pool_lines) == 1, rpc.errors  # the pool's reconnection attempts: one line, not a flood
    assert len(database_lines) <= 3, rpc.errors  # with the run's and the close's own error
    assert not any("Traceback" in line for line in rpc.errors), rpc.errors
