"""HTTP for providers: a streaming POST, when to retry it, readable failures.

``send`` posts a JSON body and returns the streaming response once the status is 2xx, or a
``RequestFailed`` describing why not (failures are data here, never exceptions); the client is
the caller's when ``StreamOptions.http_client`` names one, else the provider's pool
(``connections``). What is worth retrying, and when, is the one retry policy's
(``tether.ai.retry``); a refused connection, an unreachable host or an unknown host name is
never retried (nobody serves there, so that fails at once, naming the URL). The retry loop itself
is the provider driver's (``provider._drive``).

Waits are plain ``await``s, so an abort (which cancels the consumer's pending ``await``, see
``event_stream``) interrupts a backoff sleep, a wait for a connection slot or a connect at once.
Which connection a request takes, and how many run at once, is ``connections``' business.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import json
import re
import socket
import urllib.request
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx2

from tether.ai.connections import ProviderPool, provider_pool
from tether.ai.idle_watch import IdleWatch
from tether.ai.jsonish import as_dict, as_list, as_str
from tether.ai.retry import RequestFailed, retry_after, status_retryable
from tether.ai.shown_url import secrets_of, shown_url
from tether.ai.types import ProviderRequest, StreamOptions
from tether.wire.json_line import finite

USER_AGENT = "tether"
_HEADERS = {"content-type": "application/json", "accept": "text/event-stream", "user-agent": USER_AGENT}


@dataclass(slots=True)
class HttpRequest:
    """What a provider's request builder produces."""

    url: str
    headers: dict[str, str] = field(repr=False)  # the API key's: no repr shows it
    body: dict[str, Any]


@dataclass(frozen=True, slots=True)
class EncodedRequest:
    """An ``HttpRequest`` whose body is encoded once, for a request that stays open a while.

    A streaming reply keeps its request for retries as long as it streams; as bytes, the body
    holds nothing for the garbage collector to walk (as a dict it was one or more objects per
    message of the conversation, alive for the whole reply), and a retry sends the same bytes.
    """

    url: str
    headers: dict[str, str] = field(repr=False)
    content: bytes


_BODY = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False, allow_nan=False)
"""The encoder of every request body, built once: ``json.dumps`` with these settings builds a new
``JSONEncoder`` for each call (a Python ``__init__`` of nine settings per model call). Without the
circular-reference check: it notes every list and dict of the body in a dict and takes it out
again, 15% of the encoding (P6: 730k -> 621k instructions a session), for bodies our builders
make fresh and never circular. A body that does hold a cycle (in ``options.extra``, a hook's
payload) recurses to the limit instead and is encoded again by ``_CHECKED``, which says what
it said before. ``NaN`` and the infinities, which are no JSON, raise (``finite``)."""
_CHECKED = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def encode_request(request: HttpRequest) -> EncodedRequest:
    """``request`` with its body as the bytes ``send`` posts (``TypeError``: not JSON).

    The standard library's encoder, not pydantic-core's (``tether.wire.dumpb``, 5x faster on a
    body): importing pydantic-core costs a process ~350M instructions (~80 ms), more than a
    thousand requests' encoding saves, and ``tether -p`` would pay it on every run.
    """
    # Builders strip lone surrogates from text; "replace" is the safety net for any other field
    # (tool arguments, extra body fields), which could not be sent as UTF-8 otherwise.
    try:
        text = _encoded(_BODY, request.body)
    except RecursionError:  # a cycle, or nesting past the limit: the checking encoder's error
        text = _CHECKED.encode(request.body)
    content = text.encode("utf-8", "replace")
    return EncodedRequest(request.url, request.headers, content)


def arguments_text(arguments: Any) -> str:
    """A replayed tool call's arguments as the string of JSON text Chat Completions and Responses
    carry them in (``json.dumps(..., ensure_ascii=False)``'s), ``NaN`` and the infinities as
    ``null`` (``finite``): servers that parse the string for a chat template (vLLM, llama.cpp,
    Ollama) refused every later request of the conversation. The encoder is built once, not
    for each call of every request."""
    return _encoded(_ARGUMENTS, arguments)


_ARGUMENTS = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


def _encoded(encoder: json.JSONEncoder, value: Any) -> str:
    """``value`` as ``encoder`` (``allow_nan=False``) writes it, ``NaN`` and the infinities as
    ``null`` (``finite``): the cheap try first, the copy only for a value that holds one."""
    try:
        return encoder.encode(value)
    except ValueError:  # NaN or an infinity
        return encoder.encode(finite(value))


async def send(
    request: HttpRequest | EncodedRequest,
    options: StreamOptions,
    client: httpx2.AsyncClient | None = None,
    provider: str = "",
    watch: IdleWatch | None = None,
    connect: float | None = None,
) -> httpx2.Response | RequestFailed:
    """One attempt: the open 2xx response, or why not (see ``retry_delay`` for what to do next).

    The client is ``client``, else the options' ``http_client`` (the socket: a caller's own
    client or transport, a ``tether.testing.MockProvider``), used as they are; else the request
    takes its session's lane of ``provider``'s pool, once one of the provider's connection slots
    is free. ``watch`` (the request's idle timeout) bounds the wait for the response's headers
    once connected, as it bounds the body's silences: a server that accepted and never answered
    held the run for the whole ``timeout``, each try. ``connect`` (seconds) bounds setting up the connection, when the
    provider sets its own (``models.json``); else the options' ``connect_timeout`` does."""
    pool = None
    if client is None:
        client = options.http_client
    if client is None:
        pool = provider_pool(provider)
        client = pool.client(options.session_id)
    if isinstance(request, HttpRequest):
        request = encode_request(request)
    headers = {**_HEADERS, **request.headers}
    if options.headers:
        headers.update(options.headers)
    if options.on_request is not None:
        request, headers = await _hooked(request, headers, options.on_request)
    timeout = _timeout(options.timeout, connect if connect is not None else options.connect_timeout)
    try:
        if pool is not None and not client.cookies:
            http_request = pool.request(request.url, headers, request.content, timeout)
        else:
            http_request = client.build_request(
                "POST", request.url, content=request.content, headers=headers, timeout=timeout
            )
        response = await _send_once(client, pool, http_request, watch)
        for _ in range(MAX_REDIRECTS):
            redirect = response.next_request  # set for a 3xx with a Location, none followed yet
            if redirect is None:
                break
            await response.aclose()
            if not _same_server(http_request.url, redirect.url):
                failure = RequestFailed(
                    _elsewhere(request.url, response.status_code, redirect.url), response.status_code
                )
                return _without_secrets(failure, headers, request.url)
            http_request = redirect
            response = await _send_once(client, pool, http_request, watch)
    except TimeoutError as exc:  # the watch's when its time passed without the headers
        failure = RequestFailed(
            f"No response from {provider or shown_url(request.url)} for {watch.idle:g} s (stream idle timeout)"
            if watch is not None
            else f"Request to {shown_url(request.url)} timed out: {_text(exc)}",
            retryable=True,
        )
    except httpx2.TimeoutException as exc:
        failure = RequestFailed(
            f"Request to {shown_url(request.url)} timed out: {_text(exc)}", retryable=True
        )
    except httpx2.LocalProtocolError as exc:  # ours, not the network's: the same request fails again
        failure = RequestFailed(f"Could not send the request to {shown_url(request.url)}: {_text(exc)}")
    except httpx2.TransportError as exc:
        failure = connect_failure(request.url, exc)
    except (httpx2.HTTPError, ValueError) as exc:  # bad URL, unsupported scheme, ...
        failure = RequestFailed(f"Request failed: {_text(exc)}")
    else:
        if options.on_response is not None:
            await options.on_response(response.status_code, dict(response.headers))
        if response.status_code < 300:
            return response
        failure = await status_failure(response)
    return _without_secrets(failure, headers, request.url)


def _without_secrets(failure: RequestFailed, headers: Mapping[str, str], url: str) -> RequestFailed:
    """``failure`` with the request's credentials blanked out of its message (``without_secrets``)."""
    failure.message = without_secrets(failure.message, headers, url)
    return failure


def without_secrets(message: str, headers: Mapping[str, str], url: str) -> str:
    """``message`` with the credentials of a request (to ``url`` with ``headers``) blanked out: a
    server may echo the headers it got (a debugging proxy, a gateway's 400 page, an echo service
    at a wrong ``baseUrl`` answering 200) or the URL it was asked for (with a password or a
    ``?key=``), in an error body or in the stream itself, and the message goes to the transcript,
    the logs and the user's screen."""
    if url in message:
        message = message.replace(url, shown_url(url))
    secrets = [
        secret
        for name, value in headers.items()
        if _SECRET_HEADER.search(name)
        for secret in (value, *_APART.split(value))  # "Bearer KEY": the key alone too
    ]
    for secret in [*secrets, *secrets_of(url)]:
        if len(secret) >= 8:
            if secret in message:
                message = message.replace(secret, "[redacted]")
            message = _without_cut_secret(message, secret)
    return message


def _without_cut_secret(message: str, secret: str) -> str:
    """``message`` without a first part of ``secret`` (4 characters or more) at its end, before
    an ellipsis if it has one: a text cut to a length before it reached us (a body's first 512
    bytes, an in-stream error's message cut by its parser) may end inside the key."""
    body, ellipsis = (message[:-1], "…") if message.endswith("…") else (message, "")
    for length in range(min(len(secret) - 1, len(body)), 3, -1):
        if body.endswith(secret[:length]):
            return f"{body[:-length]}[redacted]{ellipsis}"
    return message


def sent_without_secrets(text: str, response: httpx2.Response) -> str:
    """``text`` without the credentials of the request ``response`` answers, as it was sent:
    after the ``on_request`` hook (a token it added) and the redirects followed (their URL). The
    text may quote what the server sent (an error body, an in-stream error, a body that was no
    event stream, an event that was no JSON): a server may echo the key it got in a 200 too."""
    sent = response.request
    return without_secrets(text, sent.headers, str(sent.url))


_APART = re.compile(r"[\x00-\x20\x7f]+")
"""What a credential's value is looked for without: a message may show the value escaped, as
httpx's "Illegal header value b'Bearer KEY\\n'" for a key read from a file with its line break."""
_SECRET_HEADER = re.compile(r"auth|key|token|secret|cookie", re.IGNORECASE)
"""Names of the request headers whose values are credentials (``authorization``, ``x-api-key``,
``x-goog-api-key``, ``api-key``, a ``models.json`` header such as ``x-auth-token``)."""


MAX_REDIRECTS = 5
"""Redirects followed for one attempt, within the server the request was sent to."""


async def _send_once(
    client: httpx2.AsyncClient, pool: ProviderPool | None, request: httpx2.Request, watch: IdleWatch | None
) -> httpx2.Response:
    """Send ``request`` without following a redirect (a pool's clients never do); ``TimeoutError``
    when its headers take longer than ``watch`` allows (a wait for a connection slot does not
    count)."""
    if pool is not None:
        return await pool.send(client, request, watch)
    sent = client.send(request, stream=True, follow_redirects=False)
    return await (sent if watch is None else watch.wait(sent))


def _same_server(sent: httpx2.URL, target: httpx2.URL) -> bool:
    """Whether a redirect stays with the server ``sent`` went to (or only moves it to HTTPS)."""
    if target.origin == sent.origin:
        return True
    return (
        target.host == sent.host
        and sent.scheme == "http"
        and target.scheme == "https"
        and target.port in (None, 443)
    )


def _elsewhere(url: str, status: int, target: httpx2.URL) -> str:
    """Why a redirect to another server is not followed: every header goes with a followed
    request (httpx drops only ``Authorization``; ``x-api-key``, ``x-goog-api-key`` and a
    ``models.json`` header went along), so the key would reach a server nobody configured."""
    origin = f"{target.scheme}://{target.host}" + (f":{target.port}" if target.port else "")
    return (
        f"{status} {shown_url(url)} redirects to another server ({origin}): not followed, the request carries "
        "the API key; set that server as the model's baseUrl if it is the right one"
    )


@functools.lru_cache(maxsize=16)
def _timeout(seconds: float | None, connect: float | None) -> httpx2.Timeout:
    """The timeouts of a request (``connect`` at most ``seconds``; ``None`` or 0: as ``seconds``),
    built once per pair of values."""
    if not connect or (seconds is not None and seconds < connect):
        connect = seconds
    return httpx2.Timeout(seconds, connect=connect)


async def _hooked(
    request: EncodedRequest, headers: dict[str, str], hook: Callable[[ProviderRequest], Awaitable[None]]
) -> tuple[EncodedRequest, dict[str, str]]:
    """``request`` and ``headers`` as ``hook`` left them (the body re-encoded only if it changed)."""
    seen = ProviderRequest(request.url, dict[str, str | None](headers), json.loads(request.content))
    original = json.loads(request.content)
    await hook(seen)
    kept = {k: v for k, v in seen.headers.items() if v is not None}
    if seen.payload != original:
        request = encode_request(HttpRequest(request.url, request.headers, seen.payload))
    return request, kept


async def status_failure(response: httpx2.Response) -> RequestFailed:
    """Read an error response and describe it: status plus the provider's own error text, taken
    from a body cleaned of the credentials first (a key the cut to a message's length split
    would keep its first part)."""
    body = sent_without_secrets(await _error_body(response), response)
    status = response.status_code
    detail = provider_error_text(body) or response.reason_phrase or "HTTP error"
    retryable = status_retryable(status, body)
    return RequestFailed(f"{status} {detail}", status, retryable, retry_after(response.headers))


ERROR_BODY_BYTES = 64 * 1024
"""The most of an error response's body read: its message is at the start, and a body without
end (a proxy's, a gzip bomb's) must not fill the memory."""
ERROR_BODY_SECONDS = 10.0
"""The longest wait for an error body: one stalled after the status was a 600 s wait a try."""


async def _error_body(response: httpx2.Response) -> str:
    """The start of an error response's body, as far as it came in ``ERROR_BODY_SECONDS``."""
    pieces: list[bytes] = []
    size = 0
    chunks = response.aiter_bytes()
    try:
        async with asyncio.timeout(ERROR_BODY_SECONDS):
            async for chunk in chunks:
                pieces.append(chunk)
                size += len(chunk)
                if size >= ERROR_BODY_BYTES:
                    break
    except (TimeoutError, httpx2.HTTPError):
        pass  # what did arrive says what it can
    finally:
        await chunks.aclose()
        await response.aclose()
    return b"".join(pieces)[:ERROR_BODY_BYTES].decode("utf-8", "replace")


def provider_error_text(body: str) -> str:
    """The human part of an error body: ``error.message`` (OpenAI, Anthropic, Gemini), else the body."""
    text = body.strip()
    if not text:
        return ""
    try:
        data: Any = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: a body nested too deeply
        return _one_line(text)
    items = as_list(data)
    if items:
        data = items[0]  # Gemini wraps errors in a one-element array
    body_object = as_dict(data)
    if body_object is not None:
        error: Any = body_object.get("error", body_object)
        error_object = as_dict(error)
        if error_object is not None:
            message = as_str(error_object.get("message")) or as_str(error_object.get("detail"))
            if message:
                return message[:_MESSAGE_CHARS]
        elif isinstance(error, str) and error:
            return error[:_MESSAGE_CHARS]
        detail = as_str(body_object.get("detail")) or as_str(body_object.get("message"))
        if detail:
            return detail[:_MESSAGE_CHARS]
    return _one_line(text)


_MESSAGE_CHARS = 2000
"""The longest error message a provider's JSON error gives."""
_LINE_CHARS = 300
"""The longest error text taken from a body that is not JSON (an HTML page, a proxy's text)."""


_PAGE_CHARS = 8192
"""How much of an HTML error page is searched for its title or text."""


def _one_line(text: str) -> str:
    """A body that is not a JSON error as one short line: an HTML page by its title (else its
    text without markup), any text with its white space collapsed, cut at ``_LINE_CHARS``."""
    if text.startswith("<"):
        text = text[:_PAGE_CHARS]  # the patterns below are slow on a page of nothing but "<script"
        title = re.search(r"<title[^>]*>(.*?)</title", text, re.IGNORECASE | re.DOTALL)
        if title is not None and title.group(1).strip():
            text = title.group(1)
        else:
            text = re.sub(r"<(script|style)\b.*?</\1\s*>|<[^>]*>", " ", text, flags=re.IGNORECASE | re.DOTALL)
    line = " ".join(text.split())
    return line if len(line) <= _LINE_CHARS else line[:_LINE_CHARS] + "…"


def connect_failure(url: str, exc: httpx2.TransportError) -> RequestFailed:
    """A connection error naming ``url``: retried, unless the address itself is wrong (refused,
    unreachable, a host name that does not exist), which fails at once instead of after every
    retry's back-off; the message then does not read as transient to the session's retry."""
    cause: BaseException | None = exc
    url = shown_url(url)
    while cause is not None:
        if isinstance(cause, socket.gaierror) and cause.errno == socket.EAI_NONAME:
            host = urlsplit(url).hostname
            return RequestFailed(f"Cannot reach {url}: unknown host {host!r}")
        if isinstance(cause, OSError) and cause.errno in _NOBODY_THERE:
            proxy = _proxy_of(url)
            if proxy is not None:  # the proxy is who did not answer, not the provider
                return RequestFailed(
                    f"Cannot reach the proxy {proxy} for {url}: {_NOBODY_THERE[cause.errno]}"
                )
            return RequestFailed(f"Cannot reach {url}: {_NOBODY_THERE[cause.errno]}")
        cause = cause.__cause__ or cause.__context__
    return RequestFailed(f"Connection error ({url}): {_text(exc)}", retryable=True)


def _proxy_of(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``HTTP_PROXY``,
    ``ALL_PROXY``, unless ``NO_PROXY`` exempts its host), as ``scheme://host:port``: without the
    user and password it may carry, which must not reach a message."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    where = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    port = f":{where.port}" if where.port else ""
    return f"{where.scheme}://{where.hostname}{port}"


def _text(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


_NOBODY_THERE = {
    errno.ECONNREFUSED: "connection refused: is the server running?",
    errno.EHOSTUNREACH: "host unreachable",
    errno.ENETUNREACH: "network unreachable",
}
"""Connect errors that say nobody serves at that address: another attempt a few seconds later
meets the same (a server that is not running, a wrong port, a host that is down)."""
