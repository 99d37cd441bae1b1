"""OAuth for HTTP MCP servers against a real OAuth-protected server on 127.0.0.1, built from the
SDK's own server auth pieces (``oauth_server.py``; no internet): the first start signs in through
the "browser" ``$BROWSER`` names (it follows the redirects), the tokens are kept in a 0600 file
under the data folder and never appear in output or logs, and the next start uses them without
signing in again; ``tether mcp logout`` forgets them (and the registered client), so the start
after signs in and registers again."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.mcp.conftest import free_port, listening

pytestmark = pytest.mark.subprocess

HERE = Path(__file__).parent


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    port, log = free_port(), tmp_path / "server.log"
    log.write_text("")
    command = [sys.executable, str(HERE / "oauth_server.py"), str(port), str(log)]
    with listening(command, port, tmp_path / "server-output.log", "the OAuth MCP server"):
        yield port, log


def mcp_list(home: Path, browser_log: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "TETHER_HOME": str(home),
        "HOME": str(home / "user"),
        "BROWSER": f"{sys.executable} {HERE / 'fake_browser.py'} %s",
        "FAKE_BROWSER_LOG": str(browser_log),
    }
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", "mcp", *(args or ("list",))],
        capture_output=True,
        text=True,
        env=env,
        cwd=home,
        timeout=120,
    )


def test_sign_in_once_then_use_the_kept_tokens(guarded: tuple[int, Path], tmp_path: Path) -> None:
    port, server_log = guarded
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    entry = {"url": f"http://127.0.0.1:{port}/mcp"}
    (home / "config" / "mcp.json").write_text(json.dumps({"mcpServers": {"guarded": entry}}))
    browser_log = tmp_path / "browser.log"

    first = mcp_list(home, browser_log)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "guarded (http, user): ready" in first.stdout and "mcp__guarded__secret" in first.stdout
    assert (
        f"MCP server 'guarded' asks you to sign in: open http://127.0.0.1:{port}/authorize?" in first.stderr
    )
    [opened] = browser_log.read_text().splitlines()
    assert opened.startswith(f"http://127.0.0.1:{port}/authorize?") and "code_challenge=" in opened

    kept = home / "data" / "mcp-oauth" / "guarded.json"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
    token = json.loads(kept.read_text())["tokens"]["access_token"]
    lines = server_log.read_text().splitlines()
    assert f"issued {token}" in lines and f"request with {token}" in lines  # the kept token was sent
    # never in tether's output or its logs
    assert token not in first.stdout + first.stderr
    others = [p for p in home.rglob("*") if p.is_file() and p != kept]
    assert all(token not in p.read_text(errors="replace") for p in others)

    second = mcp_list(home, browser_log)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "ready" in second.stdout and "sign in" not in second.stderr
    assert len(browser_log.read_text().splitlines()) == 1  # no second sign-in
    assert sum(line.startswith("registered") for line in server_log.read_text().splitlines()) == 1

    logout = mcp_list(home, browser_log, "logout", "guarded")
    assert logout.returncode == 0 and logout.stdout == f"signed out of guarded: removed {kept}\n"
    assert not kept.exists() and token not in logout.stdout + logout.stderr
    again = mcp_list(home, browser_log, "logout", "guarded")
    assert again.returncode == 1 and again.stderr == "tether: no stored MCP sign-in for guarded\n"
    third = mcp_list(home, browser_log)
    assert third.returncode == 0 and "ready" in third.stdout and "asks you to sign in" in third.stderr
    assert len(browser_log.read_text().splitlines()) == 2  # signed in afresh
    assert sum(line.startswith("registered") for line in server_log.read_text().splitlines()) == 2


def test_another_writers_temporary_token_file_is_left_alone(tmp_path: Path) -> None:
    """Two tethers keeping a sign-in at once: each writes a temporary file of its own. The fixed
    ``NAME.tmp`` was unlinked first, so one removed (or renamed in place) the other's."""
    from tether.mcp.oauth import TokenFile, token_file

    path = token_file(tmp_path, "guarded")
    path.parent.mkdir(parents=True)
    theirs = path.with_name(path.name + ".tmp")
    theirs.write_text('{"callbackPort": 1}')
    port = TokenFile(path).callback_port(None)
    assert theirs.read_text() == '{"callbackPort": 1}'
    assert json.loads(path.read_text()) == {"callbackPort": port}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert {p.name for p in path.parent.iterdir()} == {path.name, theirs.name}  # none of ours left
