"""llama-cpp-python's own OpenAI-compatible server as a child process, for end-to-end tests.

``python -m llama_cpp.server`` (the ``llama-cpp-python[server]`` extra) serves a GGUF model over
Chat Completions. It is a real server with real quirks (it repeats the tool call's ``id`` and
``name`` in every fragment, adds the deprecated ``function_call`` field, and sends no usage in
streams), so driving our ``openai-completions`` provider through it checks what fixtures cannot.

``llama_server(path)`` starts it on 127.0.0.1 on a free port, waits until ``GET /v1/models``
answers, and stops it on exit (terminate, then kill). Its output goes to a log file, and a
server that dies or never answers raises ``LlamaServerError`` with the end of that log.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2

from tether.errors import TetherError
from tether.wire import ModelInfo

INSTALL_HINT = (
    "needs llama-cpp-python's server and the SmolLM2 model: `make test` installs both "
    "(scripts/install_local.py: a portable build of llama.cpp, 10-15 minutes the first time)"
)
STARTUP_TIMEOUT = 90.0
"""Seconds to wait for ``/v1/models``: importing the server and loading a small model takes a few
seconds, much longer on a machine busy with other builds."""


class LlamaServerError(TetherError, RuntimeError):
    """The server exited or did not answer in time; the message ends with its log."""


@dataclass(frozen=True, slots=True)
class LlamaServer:
    """A running server: where it listens and what it serves."""

    process: subprocess.Popen[bytes]
    port: int
    model_id: str
    """The id the server reports and accepts (its ``--model_alias``)."""
    context_window: int
    log_path: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def server_available() -> bool:
    """Whether ``llama_cpp.server`` and its web dependencies are installed (without importing them)."""
    return all(importlib.util.find_spec(name) is not None for name in ("llama_cpp", "fastapi", "uvicorn"))


def free_port() -> int:
    """A port nobody listens on right now (the OS picks it; it stays free until someone binds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def llama_server(
    model_path: Path,
    log_path: Path,
    *,
    model_id: str = "smollm2",
    context_window: int = 1024,
    threads: int = 1,
    startup_timeout: float = STARTUP_TIMEOUT,
) -> Generator[LlamaServer, None, None]:
    """Run the server on ``model_path`` for the duration of the ``with`` block.

    One thread by default: on a shared machine llama.cpp's worker threads wait on each other, and
    a single thread answers a 135M model faster than two.
    """
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path),
        "--model_alias",
        model_id,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(context_window),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
        "--verbose",
        "False",
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},  # the log is read while the server runs
        )
    server = LlamaServer(process, port, model_id, context_window, log_path)
    try:
        _wait_until_ready(server, startup_timeout)
        yield server
    finally:
        _stop(process)


def _wait_until_ready(server: LlamaServer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    url = server.base_url + "/models"
    while True:
        if server.process.poll() is not None:
            raise LlamaServerError(
                f"llama_cpp.server exited with status {server.process.returncode}:\n{_tail(server)}"
            )
        try:
            if httpx2.get(url, timeout=1.0, trust_env=False).status_code == 200:
                return
        except httpx2.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise LlamaServerError(
                f"llama_cpp.server did not answer {url} in {timeout:.0f} s:\n{_tail(server)}"
            )
        time.sleep(0.2)


def _tail(server: LlamaServer, lines: int = 30) -> str:
    return "\n".join(server.log().splitlines()[-lines:])


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def server_model(server: LlamaServer, provider: str = "llama.cpp") -> ModelInfo:
    """A descriptor for the served model, as a user would define it (no key, no cost)."""
    return {
        "id": server.model_id,
        "name": server.model_id,
        "api": "openai-completions",
        "provider": provider,
        "baseUrl": server.base_url,
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": server.context_window,
        "maxTokens": 256,
    }
