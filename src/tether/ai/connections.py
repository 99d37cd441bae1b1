"""Connections to providers: a limit per provider on requests in flight, and small pools.

Every provider has its own limit (``set_connection_limit``; default ``DEFAULT_MAX_CONNECTIONS``
requests streaming at once, each on its own HTTP/1.1 connection). A request over the limit waits
for a slot, first come first served, before it is sent.

Why not simply httpx's ``max_connections``: httpcore's pool re-examines every connection and
every queued request it holds each time a request starts or ends, so one pool serving N
concurrent streams costs O(N) per request, O(N²) in all. Measured on loopback, 3,000 requests
from 1,000 concurrent streams cost 12.7 s of client CPU through one pool without a limit, 3.6 s
through one capped at 100 (which serialises 1,000 sessions behind 100 streams), and 2.5 s when
only ~30 run at a time. So each provider's requests are spread over ``LANES`` pools (one httpx
client each, created on first use, all sharing one TLS context), and the limit is an
``asyncio.Semaphore`` whose waiters cost nothing per pool change. A request takes the lane of
its session (``StreamOptions.session_id``): the requests of one conversation follow each other on
one lane and keep reusing its connection. Requests without a session id share lane 0.

A provider has one lane per ``LANE_SIZE`` slots of its limit (``LANES`` without a limit), so a
limit below ``LANE_SIZE`` is one pool: a slot freed is the connection the next request reuses,
and no more than ``limit`` connections are ever open. With several lanes, a lane keeps its idle
connections (for ``keepalive_expiry``, 5 s) while another lane opens one.

Pools belong to an event loop (their sockets do), so each running loop has its own.
"""

from __future__ import annotations

import asyncio
import ssl
import weakref
from collections.abc import AsyncIterator, Mapping

import httpx2

from tether.ai.idle_watch import IdleWatch
from tether.ai.types import DEFAULT_CONNECT_TIMEOUT

DEFAULT_MAX_CONNECTIONS = 1_000
"""Requests in flight per provider when nothing else is set: enough that 1,000 sessions each
streaming at once never wait for each other, few enough to stay far below a process's usual
file-descriptor limit."""
LANES = 256
"""Pools per provider at most. At 10,000 concurrent sessions without a limit a lane holds about
40 connections, so a pool change examines 40, not 10,000."""
LANE_SIZE = 4
"""Slots of a provider's limit per lane. Small, because each pool change also probes the idle
connections of its pool (a system call each): at 1,000 sessions, lanes of ~31 connections cost
the whole run about 25% more CPU than lanes of ~4 (``bench/p6_concurrency.py``)."""

_limits: dict[str | None, int | None] = {}
"""Provider name → its limit (``None``: no limit); the key ``None`` is every other provider's."""
_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, ProviderPool]] = (
    weakref.WeakKeyDictionary()
)
_tls: ssl.SSLContext | None = None


def set_connection_limit(limit: int | None, provider: str | None = None) -> None:
    """Allow at most ``limit`` requests in flight to ``provider`` at once (``None``: no limit).

    Args:
        limit: Requests streaming at once; the next one waits for a slot. ``None``: no limit
            (each concurrent request then holds a connection, and a file descriptor).
        provider: The provider's name as in the model catalog (``openai``, ``anthropic``, ...);
            ``None`` sets the default of every provider without a limit of its own.

    Takes effect for the pools opened afterwards: set limits before the first request of an
    event loop (the CLI applies the ``maxConnections`` setting at start-up).
    """
    if limit is not None and limit < 1:
        raise ValueError(f"connection limit must be at least 1 or None, got {limit}")
    _limits[provider] = limit


def connection_limit(provider: str) -> int | None:
    """The limit of ``provider``: its own, else the default one."""
    if provider in _limits:
        return _limits[provider]
    return _limits.get(None, DEFAULT_MAX_CONNECTIONS)


def reset_connection_limits() -> None:
    """Forget every limit set (back to ``DEFAULT_MAX_CONNECTIONS``); for tests and embedders."""
    _limits.clear()


def provider_pool(provider: str) -> ProviderPool:
    """The running event loop's pool for ``provider``."""
    loop = asyncio.get_running_loop()
    pools = _pools.get(loop)
    if pools is None:
        for ended in [other for other in _pools if other.is_closed()]:
            # Their sockets refer to their loop, so the weak key alone never let one go: every
            # ``asyncio.run`` that called a provider kept its loop and a connection for good.
            del _pools[ended]
        pools = _pools[loop] = {}
    pool = pools.get(provider)
    if pool is None:
        pool = pools[provider] = ProviderPool(connection_limit(provider))
    return pool


async def close_connections() -> None:
    """Close the running event loop's connections to every provider, for whoever ends that loop
    (``run_sync``, its own): the pools outlive the sessions that used them."""
    for pool in _pools.pop(asyncio.get_running_loop(), {}).values():
        await pool.aclose()


class ProviderPool:
    """One provider's lanes and its limit, on one event loop."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self._slots = asyncio.Semaphore(limit) if limit is not None else None
        self._lane_count = LANES if limit is None else min(LANES, -(-limit // LANE_SIZE))
        self._lanes: dict[int, httpx2.AsyncClient] = {}
        self._defaults: dict[str, str] | None = None
        """The default headers of the lanes' clients (all alike), lower-case names."""
        self._hosts: dict[str, str] = {}
        """A request URL's ``Host`` header, as ``httpx2.Request`` derives it."""

    async def aclose(self) -> None:
        for client in self._lanes.values():
            await client.aclose()

    def client(self, session_id: str | None = None) -> httpx2.AsyncClient:
        """The client of ``session_id``'s lane (lane 0 without one)."""
        lane = hash(session_id) % self._lane_count if session_id else 0
        client = self._lanes.get(lane)
        if client is None or client.is_closed:
            client = self._lanes[lane] = new_client()
        return client

    def request(
        self, url: str, headers: Mapping[str, str], content: bytes, timeout: httpx2.Timeout
    ) -> httpx2.Request:
        """A POST of ``content`` to ``url`` for a lane's client without cookies, as its
        ``build_request`` makes it: a lane's client has no base URL and no query parameters, and
        its default headers are read once here, so a request copies no ``Headers`` object and
        parses its URL once (half of ``build_request``'s time, once per model call). Header names
        are sent in lower case, as HTTP/2 requires and HTTP/1.1 ignores, but for ``Host`` and
        ``Content-Length``, which httpx2 adds as it would to a request with ``content=``."""
        defaults = self._defaults
        if defaults is None:
            defaults = self._defaults = dict(self.client().headers.items())
        given = {name.lower(): value for name, value in headers.items()}
        # A Host or Content-Length of the caller's (a models.json header) is the one sent, as
        # ``build_request`` keeps it: not a second one beside httpx2's (refused by servers).
        host = given.pop("host", None) or self._hosts.get(url)
        if host is None:
            host = self._hosts[url] = httpx2.Request("POST", url).headers["Host"]
        length = given.pop("content-length", None) or str(len(content))
        merged = {name: value for name, value in defaults.items() if name not in given}
        merged.update(given)  # in the order ``Headers.update`` leaves them: the given ones last
        # The headers ``content=`` would add (Host first, Content-Length last) given whole, with
        # the body as its stream: ``Request`` then builds its ``Headers`` once instead of three
        # times (given, merged with the content's, again with Host).
        request = httpx2.Request(
            "POST",
            url,
            headers=[("Host", host), *merged.items(), ("Content-Length", length)],
            stream=httpx2.ByteStream(content),
            extensions={"timeout": timeout.as_dict()},
        )
        request.read()  # ``content`` readable, as with ``content=``
        return request

    async def send(
        self, client: httpx2.AsyncClient, request: httpx2.Request, watch: IdleWatch | None = None
    ) -> httpx2.Response:
        """Send ``request`` (streamed) once a slot is free; the slot is freed when the response
        is closed, or at once if sending fails or is cancelled. ``TimeoutError`` when the
        response's headers take longer than ``watch`` allows from the slot on."""
        slots = self._slots
        if slots is None:
            sent = client.send(request, stream=True)
            return await (sent if watch is None else watch.wait(sent))
        await slots.acquire()
        try:
            sent = client.send(request, stream=True)
            response = await (sent if watch is None else watch.wait(sent))
        except BaseException:
            slots.release()
            raise
        body = response.stream
        assert isinstance(body, httpx2.AsyncByteStream)  # an AsyncClient's responses stream async
        response.stream = _SlotStream(body, slots)
        return response


class _SlotStream(httpx2.AsyncByteStream):
    """A response body that gives its request's slot back when it is closed (once)."""

    def __init__(self, inner: httpx2.AsyncByteStream, slots: asyncio.Semaphore) -> None:
        self._inner = inner
        self._slots: asyncio.Semaphore | None = slots

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._inner.__aiter__()  # the body's own iterator: no extra hop per chunk

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            if self._slots is not None:
                self._slots.release()
                self._slots = None


def new_client() -> httpx2.AsyncClient:
    """A client as providers need it: long read timeout, no connection cap (the provider's limit
    applies before a request reaches it), the shared TLS context. Redirects are not followed
    here: ``transport.send`` follows those that stay with the same server."""
    global _tls
    if _tls is None:
        _tls = httpx2.create_ssl_context()
    return httpx2.AsyncClient(
        verify=_tls,
        timeout=httpx2.Timeout(600.0, connect=DEFAULT_CONNECT_TIMEOUT),  # each request sets its own
        limits=httpx2.Limits(max_connections=None, max_keepalive_connections=None),
        follow_redirects=False,
    )
