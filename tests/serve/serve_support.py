"""A real ``tether serve`` application on uvicorn, in the test's event loop, on 127.0.0.1:0.

The sessions it starts run the scripted model of a script file (``scripted:PATH``), in an
isolated ``TETHER_HOME`` and project folder.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import uvicorn

from reference_paths import FIXTURE_STREAMS
from tether.ai.paths import config_dir
from tether.durable.config import DurableConfig
from tether.serve import ServeConfig, create_app
from tether.serve.app import HISTORY_BUDGET
from tether.serve.auth import Tokens
from tether.serve.feeds import SUBSCRIBER_BUFFER
from tether.serve.hub import IDLE_CLOSE_SECONDS, SessionHub
from tether.serve.slow_clients import HeaderDeadline
from tether.session.options import SessionOptions
from tether.session.settings import Settings
from tether.store import open_store

WAIT_SECONDS = 20.0
"""Bound on every wait for the server: a hang fails the test instead of stalling the run."""


@dataclass
class Served:
    url: str
    config: ServeConfig

    def client(self, token: str | None = None) -> httpx2.AsyncClient:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx2.AsyncClient(base_url=self.url, headers=headers, timeout=WAIT_SECONDS)


def write_script(path: Path, responses: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"responses": responses}), encoding="utf-8")
    return path


def text(*chunks: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "chunks": list(chunks)}]}


def recorded_stream() -> tuple[bytes, list[str]]:
    """A real OpenAI chat completions stream (a recorded fixture) and its text deltas, in order."""
    fixture = json.loads((FIXTURE_STREAMS / "openai-completions" / "openai-text.json").read_text())
    body: str = fixture["response"]["body"]
    deltas = [
        chunk["choices"][0]["delta"].get("content") or ""
        for line in body.splitlines()
        if line.startswith("data: {")
        for chunk in [json.loads(line.removeprefix("data: "))]
        if chunk.get("choices")
    ]
    return body.encode(), [d for d in deltas if d]


def stalled_after(body: bytes, deltas: list[str], shown: int) -> tuple[int, str]:
    """Where to stall ``body`` so that only its first ``shown`` text deltas are sent, and their text."""
    cut = body.index(b"data: ", body.index(deltas[shown - 1].encode()))
    return cut, "".join(deltas[:shown])


def use_provider(url: str) -> str:
    """Make the user's ``models.json`` name an OpenAI-compatible provider at ``url``; its model."""
    provider_file = {
        "providers": {"box": {"baseUrl": f"{url}/v1", "api": "openai-completions", "models": [{"id": "m"}]}}
    }
    config_dir().mkdir(parents=True, exist_ok=True)
    (config_dir() / "models.json").write_text(json.dumps(provider_file))
    return "box/m"


@asynccontextmanager
async def serving(
    project: Path,
    script: Path,
    *,
    tokens: Tokens | None = None,
    prompts_per_minute: int = 30,
    cors_origins: tuple[str, ...] = (),
    yes: bool = False,
    max_followers: int = 10_000,
    follower_buffer: int = SUBSCRIBER_BUFFER,
    history_budget: int = HISTORY_BUDGET,
    durable: DurableConfig | None = None,
    extensions: tuple[Path, ...] = (),
    model: str | None = None,
    idle_close: float = IDLE_CLOSE_SECONDS,
) -> AsyncGenerator[Served]:
    """``extensions``: extension files every session of the server loads (``tether serve -e``);
    ``model``: the sessions' model instead of the script's (``provider/id``); ``idle_close``:
    seconds after which an idle session is closed."""
    store = open_store()
    options = SessionOptions(
        model=model or f"scripted:{script}",
        approval="yes" if yes else None,
        mcp=False,
        extension_paths=extensions,
    )
    config = ServeConfig(
        store=store,
        hub=SessionHub(options, lambda _folder: Settings(), project, idle_close=idle_close),
        tokens=tokens or Tokens(),
        prompts_per_minute=prompts_per_minute,
        cors_origins=cors_origins,
        max_followers=max_followers,
        follower_buffer=follower_buffer,
        history_budget=history_budget,
        durable=durable,
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(config),
            http=HeaderDeadline,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=2,
        )
    )
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]  # pytest owns them
    task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(WAIT_SECONDS):
            while not server.started:
                await asyncio.sleep(0.01)
        yield Served(f"http://127.0.0.1:{sock.getsockname()[1]}", config)
    finally:
        server.should_exit = True
        async with asyncio.timeout(WAIT_SECONDS):
            await task
        sock.close()
        store.close()


async def settled(client: httpx2.AsyncClient, session_id: str) -> dict[str, Any]:
    """The session once this server's run of it has ended (bounded by ``WAIT_SECONDS``)."""
    async with asyncio.timeout(WAIT_SECONDS):
        while True:
            state = (await client.get(f"/api/sessions/{session_id}/state")).json()
            if not state["running"]:
                return (await client.get(f"/api/sessions/{session_id}")).json()
            await asyncio.sleep(0.02)


Event = tuple[str | None, str, str]
"""An SSE event: (id, event, data)."""


async def sse_events(
    client: httpx2.AsyncClient,
    path: str,
    count: int | None = None,
    headers: dict[str, str] | None = None,
    until: Callable[[Event], bool] | None = None,
    opened: asyncio.Event | None = None,
) -> list[Event]:
    """The events of an SSE stream: the first ``count``, or up to the one ``until`` accepts;
    ``opened`` is set once the stream's first line came (the server is following by then)."""
    events: list[tuple[str | None, str, str]] = []
    async with asyncio.timeout(WAIT_SECONDS), client.stream("GET", path, headers=headers) as response:
        assert response.status_code == 200, response.status_code
        assert response.headers["content-type"].startswith("text/event-stream")
        fields: dict[str, str] = {}
        async for line in response.aiter_lines():
            if opened is not None:
                opened.set()
            if line:
                name, _, value = line.partition(":")
                if name:  # a line starting with ":" is a comment
                    fields[name] = value.removeprefix(" ")
                continue
            if "data" in fields:
                events.append((fields.get("id"), fields.get("event", "message"), fields["data"]))
                if len(events) == count or (until is not None and until(events[-1])):
                    break
            fields = {}
    return events


@asynccontextmanager
async def tether_serve(project: Path, *args: str) -> AsyncGenerator[str]:
    """``tether serve --port 0 ARGS`` as a child process in ``project``; its URL (no trailing /)."""
    command = [sys.executable, "-m", "tether.cli", "serve", "--port", "0", *args]
    process = await asyncio.create_subprocess_exec(
        *command, cwd=project, env=os.environ.copy(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        assert process.stderr is not None
        async with asyncio.timeout(WAIT_SECONDS):
            line = (await process.stderr.readline()).decode()
            while line.startswith("tether serve: no /api/runs"):
                line = (await process.stderr.readline()).decode()
        found = re.search(r"listening on (http://\S+)", line)
        assert found, line
        yield found.group(1).rstrip("/")
    finally:
        process.terminate()
        async with asyncio.timeout(WAIT_SECONDS):
            await process.wait()
