"""Issue 14, classes 3, 4 and 6: what tether's child processes inherit, and that they go with it.

Real ``tether`` processes run a scripted model's ``bash`` calls (and the user's ``!cmd``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_support import CliEnv, alive, json_lines, text_reply, tool_reply

from tether.tools import run_shell_input

pytestmark = pytest.mark.subprocess

CREDENTIALS = {
    "OPENAI_API_KEY": "sk-test-openai-0001",
    "GITHUB_TOKEN": "ghp-test-0002",
    "DB_PASSWORD": "hunter2-test-0003",
    "AWS_SECRET_ACCESS_KEY": "aws-test-0004",
    "COPY_OF_KEY_VALUE": "sk-test-openai-0001",
    # No secret in the name, a password in the value (tether's own database settings look so).
    "TETHER_DATABASE_URL": "postgresql://app:pg-test-0005@db.internal/app",
    "PGCONN": "host=db.internal password=pg-test-0006 user=app",
    # The API key of the telemetry backend tether itself exports to, in a header.
    "OTEL_EXPORTER_OTLP_HEADERS": "x-honeycomb-team=hc-test-0007",
}


def _bash_output(cli: CliEnv, command: str) -> str:
    replies = [tool_reply("bash", {"command": command}), text_reply("done")]
    done = cli.run(
        "--mode", "json", "go", "--no-session", "--yes", script=cli.script("s", replies), env=CREDENTIALS
    )
    assert done.returncode == 0, done.stderr
    end = next(e for e in json_lines(done.stdout) if e["type"] == "tool_execution_end")
    return str(end["result"]["content"][0]["text"])


def test_tool_processes_do_not_see_credentials(cli: CliEnv) -> None:
    output = _bash_output(cli, "env; echo marker-$HOME")
    for value in CREDENTIALS.values():
        assert value not in output
    assert "marker-/" in output and "PATH=" in output  # the rest of the environment is there


def test_passthrough_setting_keeps_named_variables(cli: CliEnv) -> None:
    (cli.home / "config").mkdir()
    (cli.home / "config" / "settings.json").write_text(json.dumps({"shellEnvPassthrough": ["GITHUB_TOKEN"]}))
    output = _bash_output(cli, "env")
    assert "GITHUB_TOKEN=ghp-test-0002" in output
    assert "sk-test-openai-0001" not in output


async def test_user_shell_input_does_not_see_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    message = await run_shell_input("env", cwd=tmp_path)
    assert "PATH=" in message["output"]
    for value in CREDENTIALS.values():
        assert value not in message["output"]
    kept = await run_shell_input("env", cwd=tmp_path, env_passthrough=["DB_PASSWORD"])
    assert "DB_PASSWORD=hunter2-test-0003" in kept["output"]


def _pids_of(marker: str) -> list[int]:
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False)
    return [int(pid) for pid in found.stdout.split()]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signals are Linux's")
@pytest.mark.parametrize("sandbox", ["off", "workspace-write"])
def test_children_die_when_tether_is_killed(cli: CliEnv, sandbox: str) -> None:
    # found by their command lines: inside the sandbox, $$ and $! are another PID namespace's numbers
    marker = f"sleep 300.{os.getpid()}{len(sandbox)}"
    command = f"{marker} & ({marker} | cat) & {marker}"
    script = cli.script("s", [tool_reply("bash", {"command": command}), text_reply("done")])
    process = subprocess.Popen(
        [sys.executable, "-m", "tether.cli", "-p", "go", "--no-session", "--yes", "--sandbox", sandbox],
        cwd=cli.project,
        env=cli.env(TETHER_SCRIPTED=str(script)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while len(_pids_of(marker)) < 3:
            assert time.monotonic() < deadline, "the bash tool never started"
            time.sleep(0.05)
        children = _pids_of(marker)
        assert all(alive(pid) for pid in children)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)
        deadline = time.monotonic() + 5
        while any(alive(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [pid for pid in children if alive(pid)] == []
    finally:
        if process.poll() is None:
            process.kill()
        subprocess.run(["pkill", "-f", marker], check=False)


def test_spools_are_deleted_when_the_session_ends(cli: CliEnv) -> None:
    output = _bash_output(cli, "seq 1 200000")
    saved = [line for line in output.splitlines() if "saved to" in line]
    assert len(saved) == 1
    path = Path(saved[0].rsplit("saved to ", 1)[1].rstrip("]"))
    assert path.name.endswith(".log")
    assert not path.exists() and not path.parent.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox's placeholders are Linux's")
@pytest.mark.parametrize("mode", [("-p",), ("--mode", "json")])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_ends_the_run_as_ctrl_c_does(cli: CliEnv, signum: int, mode: tuple[str, ...]) -> None:
    """``kill`` (or a closed terminal) mid-``bash`` ends ``-p`` and JSON mode at once, leaves no
    process behind and the workspace as it was: their default action had left the sandbox's
    read-only placeholders (``.git``, ``.mcp.json``, ...) in the project, and the next start
    there named the empty ``.mcp.json`` as an untrusted project's servers."""
    marker = f"sleep 300.{os.getpid()}{signum}{len(mode)}"
    script = cli.script("s", [tool_reply("bash", {"command": marker}), text_reply("done")])
    process = subprocess.Popen(
        [sys.executable, "-m", "tether.cli", *mode, "go", "--no-session", "--yes"],
        cwd=cli.project,
        env=cli.env(TETHER_SCRIPTED=str(script)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not _pids_of(marker):
            assert time.monotonic() < deadline, "the bash tool never started"
            time.sleep(0.05)
        process.send_signal(signum)
        _, err = process.communicate(timeout=20)
        assert process.returncode == 128 + signum, err
        assert "Traceback" not in err
        assert sorted(os.listdir(cli.project)) == []
        deadline = time.monotonic() + 5
        while _pids_of(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _pids_of(marker) == []
    finally:
        if process.poll() is None:
            process.kill()
        subprocess.run(["pkill", "-f", marker], check=False)
