"""A hostile server or network met by every API: what a server asks (a wait it cannot mean, a
redirect elsewhere), what it sends (a line that never ends, an error body without end) and what
it withholds (its headers). Each ends the stream in one terminal event, in bounded time, with no
secret sent elsewhere or shown."""

from __future__ import annotations

import asyncio

import pytest
from faultkit import APIS, TEXT, collect, fast, model

from tether.ai import sse
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


@each_api
@pytest.mark.parametrize("status", [307, 302])
async def test_a_redirect_to_another_server_is_not_followed_with_the_key(api: str, status: int) -> None:
    """httpx drops only ``Authorization`` on a redirect to another server: Anthropic's
    ``x-api-key`` and Gemini's ``x-goog-api-key`` were sent to whatever host a server named."""
    async with LoopbackServer([Reply(TEXT[api].body)]) as other:
        port = other.url.rsplit(":", 1)[1]
        elsewhere = f"http://localhost:{port}/elsewhere"
        async with LoopbackServer([Reply(b"moved", status, {"location": elsewhere})]) as first:
            _, final = await collect(model(first.url, api), fast(api_key="SECRET-KEY"))
    assert other.requests == []
    assert len(first.requests) == 1, "the same redirect would come again: not retried"
    assert final["stopReason"] == "error"
    assert final["errorStatus"] == status
    assert f"redirects to another server (http://localhost:{port}): not followed" in final["errorMessage"]
    assert "SECRET" not in final["errorMessage"]


@each_api
async def test_a_redirect_within_the_server_is_followed_with_the_key(api: str) -> None:
    """A path that moved on the same server (``/v1`` → ``/v1/``, a renamed route) still works."""
    async with LoopbackServer([Reply(b"", 308, {"location": "/moved"}), Reply(TEXT[api].body)]) as server:
        _, final = await collect(model(server.url, api), fast(api_key="SECRET-KEY"))
    assert final["stopReason"] == "stop"
    first, moved = server.requests
    assert moved.path == "/moved" and moved.method == "POST" and moved.body == first.body
    assert [v for v in moved.headers.values() if "SECRET-KEY" in v]


@each_api
async def test_a_line_without_end_is_cut_off_at_the_limit(api: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server sending one line without a break (here 2 MB; a real one may never stop) was held
    in memory whole, however long it went on, and joined anew on every read."""
    monkeypatch.setattr(sse, "MAX_EVENT_BYTES", 100_000)
    answer = TEXT[api]
    endless = answer.body[: answer.final_at] + b'data: {"x":"' + b"a" * 2_000_000
    cuts = range(answer.final_at, len(endless), 16_384)
    async with LoopbackServer([Reply(endless, chunks=cuts)]) as server:
        async with asyncio.timeout(GUARD):
            _, final = await collect(model(server.url, api), fast())
    assert len(server.requests) == 1
    assert final["stopReason"] == "error"
    assert final["errorMessage"].startswith(
        f"The {api} stream was cut off: one event grew past 100,000 bytes without ending"
    )
    assert final["content"][0]["text"] == ("Hel" if api == "google-generative-ai" else "Hello")
