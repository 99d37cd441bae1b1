"""Keep-alive: sequential requests to one server share one TCP connection on every API, counted by
the loopback server. A connection dropped after each answer costs a TCP (and, against a real
endpoint, a TLS) handshake per turn. The openai-completions body goes on after its ``[DONE]``
marker, so the driver reads the rest before releasing the connection, within a bound: a server
that never ends the body costs a new connection, never a hang."""

from __future__ import annotations

import asyncio

import pytest
from faultkit import APIS, COMPLETIONS, TEXT, collect, fast, model

from tether.testing.loopback import LoopbackServer, Reply


@pytest.mark.parametrize("api", APIS)
async def test_three_sequential_requests_use_one_connection(api: str) -> None:
    async with LoopbackServer([Reply(TEXT[api].body)]) as server:
        for _ in range(3):
            _, final = await collect(model(server.url, api), fast())
            assert final["stopReason"] == "stop"
    assert len(server.requests) == 3
    assert server.connections == 1


async def test_completions_body_split_right_after_done_still_reuses() -> None:
    body = TEXT[COMPLETIONS].body
    assert body.endswith(b"data: [DONE]\n\n")
    cut = len(body) - 2  # "[DONE]" arrives in one read, the blank line ending it in the next
    async with LoopbackServer([Reply(body, chunks=[cut], delay=0.01)]) as server:
        for _ in range(3):
            _, final = await collect(model(server.url), fast())
            assert final["content"][0]["text"] == "Hello"
    assert server.connections == 1


async def test_completions_body_left_open_after_done_neither_hangs_nor_is_reused() -> None:
    body = TEXT[COMPLETIONS].body
    # Content-Length promises a comment line after [DONE] that never comes.
    stalled = Reply(body + b": keep-alive\n\n", stall_after=len(body))
    async with LoopbackServer([stalled]) as server:
        for _ in range(2):
            _, final = await asyncio.wait_for(collect(model(server.url), fast()), timeout=10)
            assert final["stopReason"] == "stop"
            assert final["content"][0]["text"] == "Hello"
    assert len(server.requests) == 2
    assert server.connections == 2, "an unfinished body cannot be reused: its connection is closed"
