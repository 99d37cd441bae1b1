"""``exec_program`` (an extension's ``api.exec``): real programs, stdout and stderr apart and raw,
pi's exit codes (128 + the signal), a timeout, an abort and ``max_buffer`` stopping the whole
group, no credentials in the environment, and the session's sandbox (a write outside the
workspace fails confined and works without it)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.ai.abort import AbortController
from tether.tools.exec_program import exec_program
from tether.tools.sandbox import Sandbox, SandboxPolicy, unavailable

pytestmark = pytest.mark.subprocess


async def test_stdout_and_stderr_apart_and_the_exit_status(tmp_path: Path) -> None:
    program = "import sys; print('out\\x1b[1m'); print('err', file=sys.stderr); sys.exit(3)"
    result = await exec_program(sys.executable, ["-c", program], cwd=tmp_path)
    assert (result.stdout, result.stderr, result.code) == ("out\x1b[1m\n", "err\n", 3)
    assert (result.killed, result.truncated) == (False, False)
    missing = await exec_program("no-such-program-here", cwd=tmp_path)
    assert missing.code == 127 and "no-such-program-here" in missing.stderr


async def test_timeout_abort_and_max_buffer_stop_the_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    # a child in the background that outlives its shell unless the whole group is stopped
    sleeper = f"sleep 300 & echo $! > {pids}; wait"
    result = await exec_program("sh", ["-c", sleeper], cwd=tmp_path, timeout=0.5)
    assert (result.killed, result.code) == (True, 143)  # SIGTERM, as a shell reports it
    child = int(pids.read_text())
    for _ in range(100):
        if not Path(f"/proc/{child}").exists() or "Z" in _state(child):
            break
        await asyncio.sleep(0.05)
    assert not Path(f"/proc/{child}").exists() or "Z" in _state(child)

    controller = AbortController()
    running = asyncio.ensure_future(exec_program("sleep", ["300"], cwd=tmp_path, signal=controller.signal))
    await asyncio.sleep(0.2)
    controller.abort()
    aborted = await running
    assert aborted.killed and aborted.code == 143

    flood = await exec_program("yes", cwd=tmp_path, max_buffer=10_000)
    assert (flood.killed, flood.truncated, len(flood.stdout)) == (True, True, 10_000)
    assert flood.stdout.startswith("y\ny\n") and flood.code != 0


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0]
    except OSError:
        return "gone"


async def test_no_credentials_reach_the_program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_API_KEY", "sk-very-secret-value")
    monkeypatch.setenv("DATABASE_URL", "postgresql://app:hunter22@db/app")
    monkeypatch.setenv("HARMLESS", "kept")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_passed_on_purpose")
    result = await exec_program("env", cwd=tmp_path, env_passthrough=("GITHUB_TOKEN",))
    assert "HARMLESS=kept" in result.stdout and "GITHUB_TOKEN=ghp_passed_on_purpose" in result.stdout
    assert "sk-very-secret-value" not in result.stdout and "hunter22" not in result.stdout


async def test_credentials_by_their_other_usual_names_stay_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {
        "MYSQL_PWD": "mysql-pw-1",
        "GITHUB_PAT": "ghp_pat_2",
        "DB_PASS": "db-pass-3",
        "SMTP_PASS": "smtp-4",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    result = await exec_program("env", cwd=tmp_path)
    assert [value for value in secrets.values() if value in result.stdout] == []
    # the names they look like are not taken for them
    kept = {line.partition("=")[0] for line in result.stdout.splitlines()}
    assert {name for name in ("PATH", "PWD", "OLDPWD") if name in os.environ} <= kept


async def test_a_urls_user_part_is_a_secret_though_it_has_no_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Sentry DSN carries its key as the URL's user name, no password after it; an ``@`` in a
    URL's path, query or fragment is no user part (an address in a link is kept)."""
    monkeypatch.setenv("APP_DSN", "https://0123456789abcdef@o123.ingest.sentry.io/1")
    monkeypatch.setenv("APP_LINKS", "https://example.com/u/a@b.c https://example.com?to=a@b.c#x@y")
    result = await exec_program("env", cwd=tmp_path)
    assert (
        "0123456789abcdef" not in result.stdout and "APP_LINKS=https://example.com/u/a@b.c" in result.stdout
    )


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside the workspace and outside /tmp (which the sandbox replaces)."""
    path = Path(tempfile.mkdtemp(prefix="tether-exec-test-", dir=Path.home()))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.skipif(
    unavailable() is not None and not os.environ.get("TETHER_REQUIRE_SANDBOX"),
    reason=f"no sandbox here: {unavailable()}",
)
async def test_the_sessions_sandbox_confines_the_program(tmp_path: Path, outside: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    sandbox = Sandbox(SandboxPolicy(), writable=(workspace.resolve(),))
    write = ["-c", f"echo x > {outside}/escaped && echo y > inside"]
    confined = await exec_program("sh", write, cwd=workspace, sandbox=sandbox)
    assert confined.code != 0 and not (outside / "escaped").exists()
    assert "Read-only file system" in confined.stderr
    inside = await exec_program("sh", ["-c", "echo y > inside"], cwd=workspace, sandbox=sandbox)
    assert inside.code == 0 and (workspace / "inside").read_text() == "y\n"
    free = await exec_program("sh", write, cwd=workspace)  # the same attempt, unconfined: it works
    assert free.code == 0 and (outside / "escaped").exists()
