"""Fixtures for the MCP tests: real servers (tests/mcp/toy_server.py) over stdio and HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tether.mcp import McpServerConfig

TOY = Path(__file__).with_name("toy_server.py")


@pytest.fixture(autouse=True)
def tether_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def toy(name: str = "toy", *mode: str, **changes: object) -> McpServerConfig:
    """The toy server over stdio, run by this interpreter."""
    return McpServerConfig(name, command=sys.executable, args=(str(TOY), *mode), **changes)  # type: ignore[arg-type]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead too: its parent (this process) just has not reaped it yet
    status = Path(f"/proc/{pid}/stat")
    return status.exists() and status.read_text().split(") ", 1)[1][0] != "Z"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def listening(command: list[str], port: int, log: Path, what: str) -> Generator[None]:
    """``command`` started (its output in ``log``) until it accepts connections on 127.0.0.1:``port``
    (bounded: 30 s, or its exit, fail with its log); stopped on the way out."""
    with log.open("a") as out:
        process = subprocess.Popen(command, stdout=out, stderr=out)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    if time.monotonic() > deadline or process.poll() is not None:
                        raise RuntimeError(f"{what} did not start: {log.read_text()}") from None
                    time.sleep(0.1)
            yield
        finally:
            process.terminate()
            process.wait(10)


@pytest.fixture
def http_toy(tmp_path: Path) -> Iterator[str]:
    """The toy server over streamable HTTP on 127.0.0.1; yields its URL."""
    port = free_port()
    with listening(
        [sys.executable, str(TOY), "http", str(port)], port, tmp_path / "http-toy.log", "the HTTP toy server"
    ):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture
def sse_toy(tmp_path: Path) -> Iterator[str]:
    """The toy server over the older HTTP+SSE transport on 127.0.0.1; yields its URL."""
    port = free_port()
    with listening(
        [sys.executable, str(TOY), "sse", str(port)], port, tmp_path / "sse-toy.log", "the SSE toy server"
    ):
        yield f"http://127.0.0.1:{port}/sse"
