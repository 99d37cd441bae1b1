"""Keep-alive: sequential requests to one server share one TCP connection on every API, counted by
the loopback server. A connection dropped after each answer costs a TCP (and, against a real
endpoint, a TLS) handshake per turn. The openai-completions body goes on after its ``[DONE]``
marker, so the driver reads the rest before releasing the connection, within a bound: a server
that never ends the body costs a new connection, never a hang.

Concurrent requests stay within the provider's connection limit (``set_connection_limit``) and
reuse connections once the limit is reached; without a limit set they do not wait for each
other. A stream aborted in the middle of its body closes its connection (it cannot be reused)
and gives its slot back: the next request works at once, on at most one new connection."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterator
from typing import TYPE_CHECKING, TypeVar

import pytest
from faultkit import APIS, COMPLETIONS, LONG, PROVIDERS, TEXT, collect, event_ends, fast, model

from narrowing import block_text
from tether.ai import AbortController
from tether.ai.connections import DEFAULT_MAX_CONNECTIONS, reset_connection_limits, set_connection_limit
from tether.testing.loopback import LoopbackServer, Reply

if TYPE_CHECKING:
    import httpx2

T = TypeVar("T")


@pytest.fixture(autouse=True)
def _default_limits() -> Iterator[None]:
    reset_connection_limits()
    yield
    reset_connection_limits()


async def within(*runs: Awaitable[T]) -> list[T]:
    """All of ``runs`` at once; a request stuck waiting for a slot fails the test in 10 s."""
    return await asyncio.wait_for(asyncio.gather(*runs), timeout=10)


def slow_text(api: str) -> Reply:
    """The "Hello" answer in two writes 20 ms apart: long enough for requests to overlap."""
    body = TEXT[api].body
    return Reply(body, chunks=[event_ends(body)[0]], delay=0.02)


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
            assert block_text(final["content"][0]) == "Hello"
    assert server.connections == 1


@pytest.mark.parametrize("idle", [300.0, 0.0], ids=["idle-timeout", "no-idle-timeout"])
async def test_completions_body_left_open_after_done_neither_hangs_nor_is_reused(idle: float) -> None:
    """The drain is bounded whether the request has an idle timeout or none (``idle_timeout=0``)."""
    body = TEXT[COMPLETIONS].body
    # Content-Length promises a comment line after [DONE] that never comes.
    stalled = Reply(body + b": keep-alive\n\n", stall_after=len(body))
    async with LoopbackServer([stalled]) as server:
        for _ in range(2):
            _, final = await asyncio.wait_for(collect(model(server.url), fast(idle_timeout=idle)), timeout=10)
            assert final["stopReason"] == "stop"
            assert block_text(final["content"][0]) == "Hello"
    assert len(server.requests) == 2
    assert server.connections == 2, "an unfinished body cannot be reused: its connection is closed"


@pytest.mark.parametrize("api", APIS)
async def test_concurrent_requests_use_at_most_the_limit_and_then_reuse(api: str) -> None:
    set_connection_limit(3, PROVIDERS[api])
    async with LoopbackServer([slow_text(api)]) as server:
        finals = await within(*(collect(model(server.url, api), fast()) for _ in range(8)))
    assert [final["stopReason"] for _, final in finals] == ["stop"] * 8
    assert len(server.requests) == 8
    assert server.most_open == 3, "three streams at once, no more"
    assert server.connections == 3, "the five waiting requests reuse the first three connections"


@pytest.mark.parametrize("api", APIS)
async def test_concurrent_requests_do_not_wait_for_each_other_by_default(api: str) -> None:
    assert DEFAULT_MAX_CONNECTIONS >= 1_000
    async with LoopbackServer([slow_text(api)]) as server:
        for _ in range(2):
            finals = await within(*(collect(model(server.url, api), fast()) for _ in range(8)))
            assert [final["stopReason"] for _, final in finals] == ["stop"] * 8
    assert server.most_open == 8
    assert server.connections == 8, "the second round reuses the first round's connections"


async def test_concurrent_sessions_each_keep_their_connection() -> None:
    """Each session's requests follow each other on its own lane, so they reuse its connection
    even while other sessions' requests run on theirs."""

    async def conversation(url: str, session_id: str) -> list[str]:
        stops: list[str] = []
        for _ in range(3):
            _, final = await collect(model(url), fast(session_id=session_id))
            stops.append(final["stopReason"])
        return stops

    async with LoopbackServer([slow_text(COMPLETIONS)]) as server:
        results = await within(*(conversation(server.url, f"session-{i}") for i in range(6)))
    assert results == [["stop"] * 3] * 6
    assert len(server.requests) == 18
    assert server.connections == 6


def aborted_midway(api: str) -> Reply:
    """Forty words, one SSE event per write, 5 ms apart: an abort lands in the middle."""
    body = LONG[api]
    return Reply(body, chunks=event_ends(body), delay=0.005)


@pytest.mark.parametrize("api", APIS)
async def test_abort_mid_stream_frees_its_slot_and_connection(api: str) -> None:
    set_connection_limit(1, PROVIDERS[api])  # a slot kept by the aborted stream would block the next
    async with LoopbackServer([aborted_midway(api), Reply(TEXT[api].body)]) as server:
        controller = AbortController()
        events, final = await collect(model(server.url, api), fast(signal=controller.signal), controller, 5)
        assert final["stopReason"] == "aborted"
        assert len(events) < 40, "aborted in the middle, not after the end"
        [(_, final)] = await within(collect(model(server.url, api), fast()))
        assert final["stopReason"] == "stop"
        assert block_text(final["content"][0]) == "Hello"
        await until_closed(server, 1)
    assert server.connections == 2, "an unfinished body is not reused: one new connection, no more"


@pytest.mark.parametrize("api", APIS)
async def test_many_aborted_streams_leave_the_pool_working(api: str) -> None:
    set_connection_limit(2, PROVIDERS[api])
    async with LoopbackServer([aborted_midway(api)] * 4 + [Reply(TEXT[api].body)]) as server:

        async def aborted() -> str:
            controller = AbortController()
            _, final = await collect(model(server.url, api), fast(signal=controller.signal), controller, 5)
            return final["stopReason"]

        assert await within(*(aborted() for _ in range(4))) == ["aborted"] * 4
        await until_closed(server, 0)
        finals = await within(*(collect(model(server.url, api), fast()) for _ in range(2)))
    assert [final["stopReason"] for _, final in finals] == ["stop", "stop"]
    assert server.connections == 6, "four aborted connections, then two new ones for two requests"


async def until_closed(server: LoopbackServer, still_open: int) -> None:
    """Wait until the server saw the client close all but ``still_open`` connections (it notices a
    hang-up at its next write, 5 ms at most); fail if that does not happen within a second."""
    for _ in range(100):
        if server.open_connections <= still_open:
            break
        await asyncio.sleep(0.01)
    assert server.open_connections == still_open, "an aborted stream's connection was kept open"


async def built_and_sent(headers: dict[str, str]) -> tuple[httpx2.Request, httpx2.Request]:
    """The request a lane's client makes of ``headers`` with ``build_request``, and the one
    ``ProviderPool.request`` makes of them for the same call (what a lane sends)."""
    from tether.ai.connections import provider_pool
    from tether.ai.transport import _timeout  # pyright: ignore[reportPrivateUsage]

    pool = provider_pool("lane-test")
    client = pool.client("s1")
    timeout = _timeout(600.0, 10.0)
    try:
        built = client.build_request(
            "POST", "http://127.0.0.1:9/v1/x", content=b"{}", headers=headers, timeout=timeout
        )
        return built, pool.request("http://127.0.0.1:9/v1/x", headers, b"{}", timeout)
    finally:
        await client.aclose()


async def test_a_lanes_request_is_the_one_its_clients_build_request_makes() -> None:
    """``ProviderPool.request`` skips ``build_request``'s merges for a lane's client: the same
    method, URL, body, timeouts and headers (a name given in another case replaces the default)."""
    built, direct = await built_and_sent(
        {"content-type": "application/json", "User-Agent": "tether", "Authorization": "Bearer k"}
    )
    assert (direct.method, direct.url, direct.content) == (built.method, built.url, built.content)
    assert direct.extensions == built.extensions
    assert [(k.lower(), v) for k, v in direct.headers.multi_items()] == [
        (k.lower(), v) for k, v in built.headers.multi_items()
    ]


async def test_a_host_of_the_callers_is_the_one_a_lanes_request_sends() -> None:
    """A ``Host`` (or ``Content-Length``) among the given headers (a models.json header for a
    tunnel or an IP address) replaces httpx2's, as with ``build_request``: two ``Host`` headers
    were sent, and servers refuse such a request."""
    built, direct = await built_and_sent(
        {"Host": "api.example.com", "content-length": "2", "Authorization": "Bearer k"}
    )
    assert direct.headers.get_list("host") == ["api.example.com"]
    assert direct.headers.get_list("content-length") == ["2"]
    assert sorted((k.lower(), v) for k, v in direct.headers.multi_items()) == sorted(
        (k.lower(), v) for k, v in built.headers.multi_items()
    )
