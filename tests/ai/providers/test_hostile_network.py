"""A hostile server or network met by every API: what a server asks (a wait it cannot mean, a
redirect elsewhere), what it sends (a line that never ends, an error body without end) and what
it withholds (its headers). Each ends the stream in one terminal event, in bounded time, with no
secret sent elsewhere or shown."""

from __future__ import annotations

import asyncio

import pytest
from faultkit import APIS, TEXT, collect, fast, model

from tether.ai import sse, transport
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


async def test_an_error_page_is_one_short_line() -> None:
    """A proxy's HTML 401 page became a 2,000-character error message, markup and all."""
    page = (
        b"<!DOCTYPE html>\n<html><head><title>401 Authorization\n Required</title><style>"
        + b"body{color:red}" * 200
        + b"</style></head><body><h1>Authorization Required</h1>"
        + b"<p>lorem ipsum</p>" * 300
        + b"</body></html>"
    )
    async with LoopbackServer([Reply(page, 401, {"content-type": "text/html"})]) as server:
        _, final = await collect(model(server.url), fast())
    assert final["errorMessage"] == "401 401 Authorization Required"
    untitled = b"<html><body><script>var x = 1;</script><h1>Bad gateway</h1>\n<p>" + b"try later " * 100
    async with LoopbackServer([Reply(untitled, 502, {"content-type": "text/html"})]) as server:
        _, final = await collect(model(server.url), fast(max_retries=0))
    assert final["errorMessage"].startswith("502 Bad gateway try later try later")
    assert len(final["errorMessage"]) == len("502 ") + 300 + len("…")


@each_api
async def test_a_key_echoed_by_the_server_is_not_in_the_error(api: str) -> None:
    """A gateway's 400 echoing the request's headers put the API key into the error message, and
    from there into the transcript, the logs and the screen."""
    echo = b'{"error":{"message":"bad request; headers: x-api-key: SECRET-KEY-123, Authorization: Bearer SECRET-KEY-123, x-goog-api-key: SECRET-KEY-123"}}'
    async with LoopbackServer([Reply(echo, 400, {"content-type": "application/json"})]) as server:
        _, final = await collect(model(server.url, api), fast(api_key="SECRET-KEY-123"))
    assert final["errorMessage"].startswith("400 bad request; headers: x-api-key: [redacted]")
    assert "SECRET" not in final["errorMessage"]


async def test_an_error_body_without_end_is_read_no_further_than_its_start() -> None:
    """A 503 whose body went on without end was read whole before the error was told (here it
    stalls after 70 kB: the run waited for the read timeout, 600 s a try, four tries)."""
    body = b'{"error":{"message":"overloaded"}}' + b" " * 200_000
    async with LoopbackServer([Reply(body, 503, stall_after=70_000)]) as server:
        async with asyncio.timeout(GUARD):
            _, final = await collect(model(server.url), fast(max_retries=1))
    assert len(server.requests) == 2
    assert (final["errorStatus"], final["errorMessage"]) == (503, "503 overloaded")


async def test_an_error_body_that_stalls_is_waited_for_a_bounded_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(transport, "ERROR_BODY_SECONDS", 0.2)
    body = b'{"error":{"message":"overloaded"}}' + b" " * 1000
    async with LoopbackServer([Reply(body, 503, stall_after=len(body) // 2)]) as server:
        async with asyncio.timeout(GUARD):
            _, final = await collect(model(server.url), fast(max_retries=1))
    assert len(server.requests) == 2
    assert final["errorMessage"] == "503 overloaded"
