"""``tether serve`` as a command: the token rule, the ``serve.token`` setting, one-line errors."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from serve_support import WAIT_SECONDS

from session_helpers import user
from tether.cli.serve_cmd import is_loopback
from tether.session import SessionManager
from tether.store import open_store


def test_only_loopback_addresses_may_go_without_a_token() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("127.0.0.2")
    assert not is_loopback("0.0.0.0")
    assert not is_loopback("192.168.1.5")
    assert not is_loopback("localhost")  # a name: a resolver could send it anywhere


@asynccontextmanager
async def tether_serve(project: Path, *flags: str) -> AsyncGenerator[tuple[str, list[str]]]:
    """A ``tether serve`` process; its URL and the stderr lines before it listened (and, once it
    has ended, after it: the rest are added on the way out)."""
    process = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "tether.cli", "serve", "--port", "0", *flags],
        cwd=project,
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stderr is not None and process.stdout is not None
        lines: list[str] = []
        async with asyncio.timeout(WAIT_SECONDS):
            while not (found := re.search(r"listening on (http://\S+)", lines[-1] if lines else "")):
                line = (await process.stderr.readline()).decode()
                assert line, f"tether serve ended: {lines}"
                lines.append(line)
        yield found.group(1), lines
    finally:
        process.terminate()
        async with asyncio.timeout(WAIT_SECONDS):
            await process.wait()
    assert process.stdout is not None and process.stderr is not None
    lines += (await process.stderr.read()).decode().splitlines(keepends=True)
    assert await process.stdout.read() == b""  # nothing on stdout: it is nobody's protocol here


@pytest.mark.subprocess
async def test_a_read_only_token_alone_gets_a_generated_full_token_printed_once(project: Path) -> None:
    async with tether_serve(project, "--read-only-token", "ro") as (url, lines):
        printed = [re.search(r"token \(shown once\): (\S+)", line) for line in lines]
        tokens = [m.group(1) for m in printed if m]
        assert len(tokens) == 1 and len(tokens[0]) >= 32
        async with httpx2.AsyncClient(base_url=url, timeout=WAIT_SECONDS) as client:
            assert (await client.get("/api/sessions")).status_code == 401
            reader = {"Authorization": "Bearer ro"}
            assert (await client.get("/api/sessions", headers=reader)).status_code == 200
            assert (await client.post("/api/sessions", headers=reader, json={})).status_code == 403
            writer = {"Authorization": f"Bearer {tokens[0]}"}
            answer = await client.post("/api/sessions", headers=writer, json={})
            assert answer.json() == {"error": "message: Field required"}  # past the guard


@pytest.mark.subprocess
@pytest.mark.parametrize(("allowed", "sent"), [("*", "http://evil.example"), ("null", "null")])
async def test_origins_any_site_can_send_get_a_generated_token(
    project: Path, allowed: str, sent: str
) -> None:
    """``--cors-origin '*'`` on a server without a token let the page of any site the user had
    open start a session (and read the answers): the Origin check is what keeps other sites out
    of a server with no token, and '*' turned it off; ``null`` is the origin of a sandboxed
    frame, which any site can make. Now such a server gets a token, as one listening beyond
    loopback does."""
    evil = {"Origin": sent, "Content-Type": "text/plain"}
    async with tether_serve(project, "--cors-origin", allowed) as (url, lines):
        printed = [re.search(r"token \(shown once\): (\S+)", line) for line in lines]
        tokens = [m.group(1) for m in printed if m]
        async with httpx2.AsyncClient(base_url=url, timeout=WAIT_SECONDS) as client:
            answer = await client.post("/api/sessions", headers=evil, content=b"{}")
            assert answer.status_code == 401, answer.text
            assert len(tokens) == 1
            mine = {**evil, "Content-Type": "application/json", "Authorization": f"Bearer {tokens[0]}"}
            answer = await client.post("/api/sessions", headers=mine, content=b"{}")
            assert answer.json() == {"error": "message: Field required"}  # past the guard
            assert answer.headers["access-control-allow-origin"] == allowed


@pytest.mark.subprocess
async def test_the_serve_token_setting_is_the_default_token(project: Path, tmp_path: Path) -> None:
    config = tmp_path / "home" / "config"
    config.mkdir(parents=True)
    (config / "settings.json").write_text(json.dumps({"serve": {"token": "from-settings"}}))
    async with tether_serve(project) as (url, lines):
        assert not any("shown once" in line for line in lines)
        async with httpx2.AsyncClient(base_url=url, timeout=WAIT_SECONDS) as client:
            assert (await client.get("/api/sessions")).status_code == 401
            ok = await client.get("/api/sessions", headers={"Authorization": "Bearer from-settings"})
            assert ok.status_code == 200


@pytest.mark.subprocess
def test_a_bad_serve_setting_is_one_line(project: Path, tmp_path: Path) -> None:
    config = tmp_path / "home" / "config"
    config.mkdir(parents=True)
    (config / "settings.json").write_text(json.dumps({"serve": {"token": ""}}))
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli", "serve", "--port", "0"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS,
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and '"serve.token": expected a non-empty string' in done.stderr


@pytest.mark.subprocess
async def test_followers_do_not_hold_the_server_up_on_sigterm(project: Path, tmp_path: Path) -> None:
    """A follow stream never ends by itself: uvicorn waited ``timeout_graceful_shutdown`` for
    each, then cancelled them with a traceback apiece on stderr. They are closed at once, one
    that reads nothing of a history larger than its socket buffers included."""
    store = open_store()
    session = SessionManager(store).create(str(project))
    for i in range(8):  # 8 MB: more than the socket buffers of a client that reads nothing
        session.append_message(user(f"{i}" + "x" * 1_000_000))
    session.close()
    store.close()
    async with tether_serve(project) as (url, lines):
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        followers: list[asyncio.StreamWriter] = []
        for _ in range(3):  # none of them reads past the status line
            stalled = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            stalled.connect(("127.0.0.1", port))
            stalled.setblocking(False)
            reader, writer = await asyncio.open_connection(sock=stalled)
            writer.write(
                f"GET /api/sessions/{session.id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
            )
            async with asyncio.timeout(WAIT_SECONDS):
                assert (await reader.readline()).startswith(b"HTTP/1.1 200")
            followers.append(writer)
    for writer in followers:
        writer.close()
    said = "".join(lines)
    assert "Traceback" not in said and "graceful shutdown exceeded" not in said, said
