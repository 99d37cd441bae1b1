"""A scripted HTTP server on 127.0.0.1 for provider tests and stream replay.

Real sockets, real HTTP/1.1, no mocking of the client: each request gets the next ``Reply``
(the last one repeats), which can also misbehave on purpose: send its body in given pieces,
stop after some bytes and reset the connection, promise more bytes than it sends, or stall with
the body unfinished. ``connections`` counts the TCP connections accepted, so a test can tell
whether the client kept one alive between requests; ``open_connections`` those the client has
not closed yet, and ``most_open`` the most that were open at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import cast

from tether.wire import ModelInfo


@dataclass(slots=True)
class Reply:
    """One scripted response."""

    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "text/event-stream"})
    chunks: Sequence[int] | None = None
    """Cut points (byte offsets) at which the body is sent as separate writes."""
    reset_after: int | None = None
    """Reset the connection (RST) after this many body bytes."""
    truncate_after: int | None = None
    """Close cleanly after this many body bytes although Content-Length promised all of them."""
    delay: float = 0.0
    """Seconds to wait between pieces."""
    stall_after: int | None = None
    """Send this many body bytes, then nothing more until the client hangs up (the body never ends)."""


@dataclass(slots=True)
class ReceivedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


def loopback_model(url: str, api: str = "openai-completions", **fields: object) -> ModelInfo:
    """A small free model served at ``url`` (a ``LoopbackServer``'s), speaking ``api``: the model
    record every test against a loopback server needs; ``fields`` override any key (cost, provider)."""
    model: dict[str, object] = {
        "id": "m",
        "name": "m",
        "api": api,
        "provider": "loopback",
        "baseUrl": url,
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 100_000,
        "maxTokens": 100,
    }
    model.update(fields)
    return cast(ModelInfo, model)


class LoopbackServer:
    """``async with LoopbackServer([Reply(...)]) as server: ... server.url ...``."""

    def __init__(self, replies: Sequence[Reply]) -> None:
        if not replies:
            raise ValueError("LoopbackServer needs at least one Reply")
        self.replies = list(replies)
        self.requests: list[ReceivedRequest] = []
        self.connections = 0
        """TCP connections accepted so far."""
        self.open_connections = 0
        """Accepted connections still open (the client has not hung up)."""
        self.most_open = 0
        """The most connections open at the same time so far."""
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    async def __aenter__(self) -> LoopbackServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)  # pyright: ignore[reportArgumentType]
        self.connections += 1
        self.open_connections += 1
        self.most_open = max(self.most_open, self.open_connections)
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    return
                self.requests.append(request)
                reply = self.replies[min(len(self.requests) - 1, len(self.replies) - 1)]
                if not await _write_reply(writer, reply):
                    return
                if reply.stall_after is not None:
                    await reader.read()  # until the client closes its end
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return  # a client that went away, or the server shutting down
        finally:
            self.open_connections -= 1
            if task is not None:
                self._tasks.discard(task)  # pyright: ignore[reportArgumentType]
            with contextlib.suppress(Exception):
                writer.close()


async def _read_request(reader: asyncio.StreamReader) -> ReceivedRequest | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    return ReceivedRequest(method, path, headers, body)


async def _write_reply(writer: asyncio.StreamWriter, reply: Reply) -> bool:
    """Send ``reply``; False when the connection was deliberately broken."""
    body = reply.body
    head = [f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Status')}"]
    head += [f"{name}: {value}" for name, value in reply.headers.items()]
    head.append(f"content-length: {len(body)}")
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
    limit = len(body)
    broken = reply.reset_after is not None or reply.truncate_after is not None
    for cut_at in (reply.reset_after, reply.truncate_after, reply.stall_after):
        if cut_at is not None:
            limit = min(limit, cut_at)
    cuts = sorted({c for c in (reply.chunks or ()) if 0 < c < limit} | {limit})
    start = 0
    for cut in cuts:
        writer.write(body[start:cut])
        await writer.drain()
        start = cut
        if reply.delay:
            await asyncio.sleep(reply.delay)
    if reply.reset_after is not None:
        writer.transport.abort()
        return False
    await writer.drain()
    if broken:
        writer.close()
        return False
    return True


_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    529: "Overloaded",
}
