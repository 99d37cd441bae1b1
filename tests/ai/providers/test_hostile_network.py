"""A hostile server or network met by every API: what a server asks (a wait it cannot mean, a
redirect elsewhere), what it sends (a line that never ends, an error body without end) and what
it withholds (its headers). Each ends the stream in one terminal event, in bounded time, with no
secret sent elsewhere or shown."""

from __future__ import annotations

import asyncio

import pytest
from faultkit import APIS, TEXT, collect, fast, model

from tether.testing.loopback import LoopbackServer, Reply

each_api = pytest.mark.parametrize("api", APIS)
GUARD = 30.0
"""Seconds after which a run counts as hung (a hang guard, not a timing assert)."""


@pytest.mark.parametrize("header", ["retry-after", "retry-after-ms"])
async def test_a_retry_after_of_nan_is_no_request_to_wait(header: str) -> None:
    """``Retry-After: nan`` was read as a wait of nan seconds, and ``asyncio.sleep(nan)`` never
    returns: the run hung before its retry."""
    limited = Reply(b'{"error":{"message":"Rate limit"}}', 429, {header: "nan"})
    async with LoopbackServer([limited, Reply(TEXT[APIS[0]].body)]) as server:
        async with asyncio.timeout(GUARD):
            _, final = await collect(model(server.url), fast())
    assert final["stopReason"] == "stop"
    assert len(server.requests) == 2
