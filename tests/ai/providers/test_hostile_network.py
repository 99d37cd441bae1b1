"""A hostile server or network met by every API: what a server asks (a wait it cannot mean, a
redirect elsewhere), what it sends (a line that never ends, an error body without end) and what
it withholds (its headers). Each ends the stream in one terminal event, in bounded time, with no
secret sent elsewhere or shown."""

from __future__ import annotations

import asyncio
import json
import socket
from itertools import accumulate
from pathlib import Path

import pytest
from faultkit import ANTHROPIC, APIS, TEXT, a_event, after_event, chunk, collect, event_ends, fast, model

from narrowing import block_text, error_text
from tether.ai import models, sse, transport
from tether.ai.connections import reset_connection_limits, set_connection_limit
from tether.ai.types import ProviderRequest, StreamOptions
from tether.session.retry import is_transient_error
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
    assert final.get("errorStatus") == status
    assert f"redirects to another server (http://localhost:{port}): not followed" in error_text(final)
    assert "SECRET" not in error_text(final)


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
    assert error_text(final).startswith(
        f"The {api} stream was cut off: one event grew past 100,000 bytes without ending"
    )
    assert block_text(final["content"][0]) == ("Hel" if api == "google-generative-ai" else "Hello")


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
    assert error_text(final) == "401 401 Authorization Required"
    untitled = b"<html><body><script>var x = 1;</script><h1>Bad gateway</h1>\n<p>" + b"try later " * 100
    async with LoopbackServer([Reply(untitled, 502, {"content-type": "text/html"})]) as server:
        _, final = await collect(model(server.url), fast(max_retries=0))
    assert error_text(final).startswith("502 Bad gateway try later try later")
    assert len(error_text(final)) == len("502 ") + 300 + len("…")


@each_api
async def test_a_key_echoed_by_the_server_is_not_in_the_error(api: str) -> None:
    """A gateway's 400 echoing the request's headers put the API key into the error message, and
    from there into the transcript, the logs and the screen."""
    echo = b'{"error":{"message":"bad request; headers: x-api-key: SECRET-KEY-123, Authorization: Bearer SECRET-KEY-123, x-goog-api-key: SECRET-KEY-123"}}'
    async with LoopbackServer([Reply(echo, 400, {"content-type": "application/json"})]) as server:
        _, final = await collect(model(server.url, api), fast(api_key="SECRET-KEY-123"))
    assert error_text(final).startswith("400 bad request; headers: x-api-key: [redacted]")
    assert "SECRET" not in error_text(final)


ECHOED = {
    "a 200 that is no stream": Reply(
        b'{"error":{"message":"bad key SECRET-KEY-123 in x-api-key"}}',
        headers={"content-type": "application/json"},
    ),
    "an echo page": Reply(
        b"<p>Authorization: Bearer SECRET-KEY-123</p>", headers={"content-type": "text/html"}
    ),
    "an in-stream error": Reply(
        b'event: error\ndata: {"type":"error","error":{"message":"Incorrect API key provided: SECRET-KEY-123"}}\n\n'
    ),
    "an event that is no JSON": Reply(b"data: {headers: x-goog-api-key: SECRET-KEY-123\n\n"),
}


@each_api
@pytest.mark.parametrize("reply", ECHOED.values(), ids=list(ECHOED))
async def test_a_key_echoed_in_a_200_is_not_in_the_error(api: str, reply: Reply) -> None:
    """Only an error status's body was cleaned of the key: a 200 echoing the request (an echo
    service at a wrong ``baseUrl``, a debugging proxy) or an error event quoting the key carried
    it into the reply's ``errorMessage`` (docs/library.md: never part of an error message)."""
    async with LoopbackServer([reply]) as server:
        _, final = await collect(model(server.url, api), fast(api_key="SECRET-KEY-123"))
    assert final["stopReason"] == "error"
    assert "[redacted]" in error_text(final)
    assert "SECRET" not in error_text(final)


@each_api
async def test_a_token_the_request_hook_added_is_not_in_an_in_stream_error(api: str) -> None:
    """An error in a 200's stream was cleaned of the headers from before ``on_request``: a token
    the hook added was sent, echoed back by the server, and shown."""

    async def sign(request: ProviderRequest) -> None:
        request.headers["authorization"] = "Bearer HOOK-SECRET-1"

    echo = b'event: error\ndata: {"type":"error","error":{"message":"bad token Bearer HOOK-SECRET-1"}}\n\n'
    options = fast(api_key="SECRET-KEY-123")
    options.on_request = sign
    async with LoopbackServer([Reply(echo)]) as server:
        _, final = await collect(model(server.url, api), options)
    assert server.requests[0].headers["authorization"] == "Bearer HOOK-SECRET-1"
    assert "bad token [redacted]" in error_text(final)
    assert "HOOK" not in error_text(final)


CUT = {
    "a 200 that is no stream": Reply(b"x" * 100 + b" Bearer SECRET-KEY-1234567890"),
    "a 400 that is no JSON": Reply(b"x" * 280 + b" Bearer SECRET-KEY-1234567890", 400),
    "an event that is no JSON": Reply(b"data: {" + b"x" * 179 + b" Bearer SECRET-KEY-1234567890\n\n"),
    "a 200 body past its first 512 bytes": Reply(b"\n" * 400 + b"x" * 95 + b" Bearer SECRET-KEY-1234567890"),
    "an in-stream error cut by its parser": Reply(
        b'data: {"type":"error","error":{"type":"api_error","message":"'
        + b"x" * 1980
        + b' Bearer SECRET-KEY-1234567890"}}\n\n'
    ),
}


@each_api
@pytest.mark.parametrize("reply", CUT.values(), ids=list(CUT))
async def test_a_key_across_the_cut_of_an_error_is_not_partly_shown(api: str, reply: Reply) -> None:
    """The message was cut to its length (120, 200 or 300 characters) before the key was looked
    for: a key crossing the cut was no longer whole, so its first part stayed in the message; a
    body that is no stream is read to its first 512 bytes, a cut made before we see the text."""
    async with LoopbackServer([reply]) as server:
        _, final = await collect(model(server.url, api), fast(api_key="SECRET-KEY-1234567890", max_retries=0))
    assert final["stopReason"] == "error"
    assert "SECRET" not in error_text(final), error_text(final)[-80:]


@each_api
@pytest.mark.parametrize("key", ["SECRET-KEY-123\n", "SECRET-KEY-123\r\n", "SECRET-KEY-123\x00"])
async def test_a_key_with_a_line_break_is_not_shown_escaped(api: str, key: str) -> None:
    """A key read from a file with its line break (``api_key=path.read_text()``) is refused by
    httpx, whose error quotes the header escaped ("Illegal header value b'Bearer KEY\\n'"): the
    key as given was not in it, so nothing was blanked out and the key reached the message."""
    async with LoopbackServer([Reply(TEXT[api].body)]) as server:
        _, final = await collect(model(server.url, api), fast(api_key=key, max_retries=0))
    assert "[redacted]" in error_text(final)
    assert "SECRET" not in error_text(final)


async def test_a_request_httpx_refuses_to_send_is_not_retried() -> None:
    """httpx refusing our own request (a header value with a line break) said "Connection
    error", which is retried: four tries and their waits (14 s by default) for the same refusal."""
    async with LoopbackServer([Reply(TEXT[APIS[0]].body)]) as server:
        url = server.url
        _, final = await collect(model(url), fast(api_key="SECRET-KEY-123\n", max_retries=3))
    assert error_text(final).startswith(f"Could not send the request to {url}/chat/completions: ")
    assert not is_transient_error(final)


async def test_a_key_echoed_by_a_retried_in_stream_error_is_in_no_retry_notice() -> None:
    """An in-stream error worth retrying (Anthropic's overloaded_error) is told to ``on_retry``
    and, after the last try, is the reply's error: neither may quote the key."""
    overloaded = (
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
        b'"message":"Overloaded (x-api-key SECRET-KEY-123)"}}\n\n'
    )
    reasons: list[str] = []
    options = fast(api_key="SECRET-KEY-123", max_retries=1)
    options.on_retry = lambda retry: reasons.append(retry.reason)
    async with LoopbackServer([Reply(overloaded), Reply(overloaded)]) as server:
        _, final = await collect(model(server.url, ANTHROPIC), options)
    assert len(reasons) == 1 and "Overloaded (x-api-key [redacted])" in reasons[0]
    assert "Overloaded (x-api-key [redacted])" in error_text(final)
    assert "SECRET" not in reasons[0] + error_text(final)


async def test_an_error_body_without_end_is_read_no_further_than_its_start() -> None:
    """A 503 whose body went on without end was read whole before the error was told (here it
    stalls after 70 kB: the run waited for the read timeout, 600 s a try, four tries)."""
    body = b'{"error":{"message":"overloaded"}}' + b" " * 200_000
    async with LoopbackServer([Reply(body, 503, stall_after=70_000)]) as server:
        async with asyncio.timeout(GUARD):
            _, final = await collect(model(server.url), fast(max_retries=1))
    assert len(server.requests) == 2
    assert (final.get("errorStatus"), error_text(final)) == (503, "503 overloaded")


async def test_an_error_body_that_stalls_is_waited_for_a_bounded_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(transport, "ERROR_BODY_SECONDS", 0.2)
    body = b'{"error":{"message":"overloaded"}}' + b" " * 1000
    async with LoopbackServer([Reply(body, 503, stall_after=len(body) // 2)]) as server:
        async with asyncio.timeout(GUARD):
            _, final = await collect(model(server.url), fast(max_retries=1))
    assert len(server.requests) == 2
    assert error_text(final) == "503 overloaded"


class SilentServer:
    """Accepts connections and reads requests, and never answers: a server (or a proxy) that
    hung after accepting."""

    def __init__(self) -> None:
        self.connections = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        await reader.read()  # until the client hangs up
        writer.close()


@each_api
async def test_a_server_that_never_answers_is_a_stall_like_a_silent_body(api: str) -> None:
    """The idle timeout covered the body only: a server that accepted the request and never sent
    its headers held the run for the whole request timeout (600 s a try, four tries)."""
    silent = SilentServer()
    async with silent as url:
        spec = model(url, api)
        async with asyncio.timeout(GUARD):
            _, final = await collect(spec, fast(idle_timeout=0.2, timeout=None, max_retries=1))
    assert silent.connections == 2, "retried like a stalled body"
    assert final["stopReason"] == "error"
    assert error_text(final) == f"No response from {spec['provider']} for 0.2 s (stream idle timeout)"
    assert is_transient_error(final), "the session's retry knows it too"


class SwampedServer:
    """A listening socket that accepts nothing, its one queued connection taken: a connect to it
    waits for a handshake that never completes (the kernel drops the SYN of a full queue), as a
    connect to a server swamped by a start-up burst, or behind a black hole, does."""

    def __enter__(self) -> str:
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(0)
        port = self._listener.getsockname()[1]
        self._queued = socket.create_connection(("127.0.0.1", port))
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *_: object) -> None:
        self._queued.close()
        self._listener.close()


async def test_the_connect_timeout_is_an_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``CONNECT_TIMEOUT`` was a fixed 10 s: a burst of 1,000 sessions starting at once waits
    over a second for each connect, and nothing could give it more (or a failover less). The
    options' ``connect_timeout`` sets it; a provider's ``connectTimeoutMs`` in ``models.json``
    wins, as its ``streamIdleTimeoutMs`` does."""
    assert StreamOptions().connect_timeout == 10.0
    with SwampedServer() as url:
        spec = model(url)
        async with asyncio.timeout(GUARD):
            _, final = await collect(spec, fast(connect_timeout=0.2, max_retries=0))
        assert final["stopReason"] == "error"
        assert error_text(final).startswith(f"Request to {url}/chat/completions timed out")
        home = tmp_path / "home"
        (home / "config").mkdir(parents=True)
        (home / "config" / "models.json").write_text(
            json.dumps({"providers": {spec["provider"]: {"connectTimeoutMs": 200}}})
        )
        monkeypatch.setenv("TETHER_HOME", str(home))
        monkeypatch.setattr(models, "_registry", None)
        async with asyncio.timeout(GUARD):
            _, final = await collect(spec, fast(connect_timeout=GUARD * 2, max_retries=0))
        assert error_text(final).startswith(f"Request to {url}/chat/completions timed out")


async def test_a_wait_for_a_connection_slot_is_no_stall() -> None:
    """The headers' wait is bounded from the moment the request has a connection slot: a request
    queued behind the provider's limit, behind a reply streaming longer than the idle timeout,
    is not failed for it."""
    set_connection_limit(1, "slot-test")
    try:
        body = TEXT[APIS[0]].body
        slow = Reply(body, chunks=range(10, len(body), 40), delay=0.1)  # > 1 s, data every 0.1 s
        async with LoopbackServer([slow]) as server:
            spec = model(server.url, provider="slot-test")
            async with asyncio.timeout(GUARD):
                (_, first), (_, second) = await asyncio.gather(
                    collect(spec, fast(idle_timeout=0.5)),
                    collect(spec, fast(idle_timeout=0.5, max_retries=0)),
                )
        assert (first["stopReason"], second["stopReason"]) == ("stop", "stop")
        assert server.most_open == 1
    finally:
        reset_connection_limits()


PINGS = {
    "openai-completions": b'data: {"id":"r1","object":"chat.completion.chunk","choices":[]}\n\n',
    "anthropic-messages": b'event: ping\ndata: {"type": "ping"}\n\n',
    "openai-responses": b'event: response.in_progress\ndata: {"type":"response.in_progress","response":{"id":"resp_1","status":"in_progress"}}\n\n',
    "google-generative-ai": b'data: {"candidates":[],"responseId":"g1"}\r\n\r\n',
}
"""Per API an event a server may repeat while nothing happens (Anthropic's ``ping``)."""


@each_api
@pytest.mark.parametrize("ping", ["comment", "event"])
async def test_keep_alives_do_not_hold_a_stalled_stream_open(api: str, ping: str) -> None:
    """The backend stalls after "Hel" but a proxy keeps sending ``: ping`` comments, or the server
    events that carry nothing (Anthropic's ``ping``): each read reset the idle timeout, so the run
    waited as long as they went on."""
    body = TEXT[api].body
    cut = after_event(body, b'"Hel"')
    one = b": ping\n\n" if ping == "comment" else PINGS[api]
    pings = one * 400  # 20 s of them, one every 50 ms
    stalled = Reply(body[:cut] + pings, chunks=range(cut, cut + len(pings), len(one)), delay=0.05)
    async with LoopbackServer([stalled]) as server:
        spec = model(server.url, api)
        async with asyncio.timeout(GUARD):
            _, final = await collect(spec, fast(idle_timeout=0.3))
    assert len(server.requests) == 1
    assert final["stopReason"] == "error"
    assert error_text(final) == f"No data from {spec['provider']} for 0.3 s (stream idle timeout)"
    assert final["content"] == [{"type": "text", "text": "Hel"}]


@each_api
async def test_a_slow_event_arriving_in_pieces_is_no_stall(api: str) -> None:
    """Bytes of an event still arriving are progress, though it yields nothing until it ends: an
    event arriving over longer than the idle timeout (1.2 s here), within ``TRICKLE_IDLES`` of them."""
    answer = TEXT[api]
    body = answer.body
    start = after_event(body, b'"Hel"')
    end = next(e for e in event_ends(body) if e > start)
    pieces = Reply(body, chunks=range(start, end, max((end - start) // 12, 1)), delay=0.1)
    async with LoopbackServer([pieces]) as server:
        _, final = await collect(model(server.url, api), fast(idle_timeout=1.0))
    assert final["stopReason"] == "stop", final.get("errorMessage")


@each_api
async def test_an_event_trickling_in_a_byte_at_a_time_ends_the_stream(api: str) -> None:
    """Each byte of an unfinished event moved the idle timeout on: one arriving a byte at a time,
    each just inside the timeout, held the run until the 64 MB event cap (here: 30 s of bytes,
    past the hang guard). Part of an event is progress for ``TRICKLE_IDLES`` idle timeouts."""
    body = TEXT[api].body
    cut = after_event(body, b'"Hel"')
    trickle = b'data: {"x":"' + b"a" * 600
    start = cut + len(b'data: {"x":"')
    slow = Reply(body[:cut] + trickle, chunks=range(start, cut + len(trickle)), delay=0.05)
    async with LoopbackServer([slow]) as server:
        spec = model(server.url, api)
        async with asyncio.timeout(GUARD):
            _, final = await collect(spec, fast(idle_timeout=1.0))
    assert len(server.requests) == 1, "after content was shown: not retried"
    assert final["stopReason"] == "error"
    assert error_text(final) == (
        f"Nothing complete from {spec['provider']} for 2 s, only part of an event trickling in "
        "(stream idle timeout)"
    )
    assert is_transient_error(final), "the session's retry knows it"
    assert final["content"] == [{"type": "text", "text": "Hel"}]


async def test_a_long_answer_in_many_slow_events_goes_on() -> None:
    """The cap counts from the last event given, so an answer of many events goes on however
    long it streams (here each event comes in pieces, and all of them take five idle timeouts)."""
    events = [chunk({"role": "assistant", "content": f"w{i} "}) for i in range(25)]
    body = b"".join(events) + chunk(finish="stop") + b"data: [DONE]\n\n"
    cuts = [at + len(e) // 2 for at, e in zip(accumulate([0, *map(len, events)]), events, strict=False)]
    async with LoopbackServer(
        [Reply(body, chunks=sorted({*cuts, *accumulate(map(len, events))}), delay=0.05)]
    ) as server:
        async with asyncio.timeout(GUARD):
            _, final = await collect(model(server.url), fast(idle_timeout=0.5))
    assert final["stopReason"] == "stop", final.get("errorMessage")
    assert block_text(final["content"][0]) == "".join(f"w{i} " for i in range(25))


NONSENSE_COUNTS = ["NaN", "-5", "1e400", "99999999999999999999999", "true", '"12"']


@pytest.mark.parametrize("count", NONSENSE_COUNTS)
async def test_token_counts_no_server_means_read_as_zero(count: str) -> None:
    """``"prompt_tokens": NaN`` (the JSON fallback reads it) raised ``int(nan)`` inside the parser
    and lost the whole reply; a negative or absurd count was priced and summed as it came (2**70
    tokens overflowed the session's stored totals)."""
    usage = f'{{"prompt_tokens":{count},"completion_tokens":{count},"prompt_tokens_details":{{"cached_tokens":{count}}}}}'
    body = chunk({"role": "assistant", "content": "hi"}) + chunk(finish="stop")
    body += b'data: {"id":"r1","choices":[],"usage":' + usage.encode() + b"}\n\ndata: [DONE]\n\n"
    async with LoopbackServer([Reply(body)]) as server:
        _, final = await collect(model(server.url), fast())
    assert final["stopReason"] == "stop"
    assert final["content"] == [{"type": "text", "text": "hi"}]
    assert final["usage"]["totalTokens"] == 0 and final["usage"]["cost"]["total"] == 0
    json.dumps(final, allow_nan=False)


@pytest.mark.parametrize("count", NONSENSE_COUNTS)
async def test_token_counts_no_server_means_read_as_zero_everywhere(count: str) -> None:
    bodies = {
        "anthropic-messages": a_event("message_start", message={"id": "m", "usage": {}}).replace(
            b'"usage": {}',
            f'"usage": {{"input_tokens": {count}, "cache_read_input_tokens": {count}}}'.encode(),
        )
        + TEXT["anthropic-messages"].body.split(b"\n\n", 1)[1],
        "openai-responses": TEXT["openai-responses"].body.replace(
            b'"input_tokens": 10', f'"input_tokens": {count}'.encode()
        ),
        "google-generative-ai": TEXT["google-generative-ai"].body.replace(
            b'"promptTokenCount": 5', f'"promptTokenCount": {count}'.encode()
        ),
    }
    for api, body in bodies.items():
        assert count.encode() in body
        async with LoopbackServer([Reply(body)]) as server:
            _, final = await collect(model(server.url, api), fast())
        assert final["stopReason"] == "stop", (api, final.get("errorMessage"))
        assert block_text(final["content"][-1]) == "Hello"
        usage = final["usage"]
        assert all(
            0 <= usage[k] < 10**13 for k in ("input", "output", "cacheRead", "cacheWrite", "totalTokens")
        )
        json.dumps(final, allow_nan=False)


@each_api
async def test_a_body_starting_with_a_byte_order_mark_loses_nothing(api: str) -> None:
    """The first event was lost without a word: Chat Completions and Gemini answered "lo"."""
    async with LoopbackServer([Reply(b"\xef\xbb\xbf" + TEXT[api].body)]) as server:
        _, final = await collect(model(server.url, api), fast())
    assert final["stopReason"] == "stop"
    assert block_text(final["content"][-1]) == "Hello"
    assert final.get("responseId") == TEXT[api].response_id


@each_api
async def test_a_json_error_with_status_200_says_its_message(api: str) -> None:
    """A gateway answering the stream request with its JSON error object: the message showed the
    JSON's first 120 characters, cut before the part that says what was wrong."""
    error = b'{"error":{"type":"invalid_request_error","code":"model_not_found","message":"The model `m` does not exist or you do not have access to it."}}'
    async with LoopbackServer([Reply(error, headers={"content-type": "application/json"})]) as server:
        _, final = await collect(model(server.url, api), fast())
    assert len(server.requests) == 1
    assert error_text(final) == (
        "The response was not an event stream: HTTP 200, application/json: "
        "The model `m` does not exist or you do not have access to it."
    )


async def test_a_proxy_that_refuses_is_named_without_its_password(monkeypatch: pytest.MonkeyPatch) -> None:
    """A proxy from the environment that was not running read "Cannot reach <provider>: connection
    refused: is the server running?", blaming the provider; the proxy's password stays out."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("HTTP_PROXY", f"http://user:PROXY-SECRET@127.0.0.1:{port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    async with LoopbackServer([Reply(TEXT[APIS[0]].body)]) as server:
        url = server.url.replace("127.0.0.1", "localhost")
        _, final = await collect(model(url), fast())
        assert server.requests == []
    assert error_text(final) == (
        f"Cannot reach the proxy http://127.0.0.1:{port} for {url}/chat/completions: "
        "connection refused: is the server running?"
    )


@each_api
async def test_credentials_in_the_base_url_stay_out_of_the_error(api: str) -> None:
    """A baseUrl carrying a user and password or a ``?key=`` went whole into "Cannot reach ..."."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    spec = model(f"http://user:PASS-SECRET@127.0.0.1:{port}/v1?key=QUERY-SECRET", api)
    _, final = await collect(spec, fast())
    assert error_text(final).startswith(f"Cannot reach http://***@127.0.0.1:{port}/v1")
    assert "SECRET" not in error_text(final)


async def test_a_url_echoed_by_the_server_is_not_in_the_error() -> None:
    """An error body quoting the URL it was asked for carried the base URL's password into the
    message (docs/library.md: never part of an error message)."""
    async with LoopbackServer([Reply(b"")]) as server:  # its reply names the server's own URL
        url = server.url.replace("http://", "http://user:PASS-SECRET-1@") + "/v1"
        asked = f"{url}/chat/completions"
        echo = json.dumps({"error": {"message": f"no route for {asked} nor for pw PASS-SECRET-1"}})
        server.replies[:] = [Reply(echo.encode(), 400, {"content-type": "application/json"})]
        _, final = await collect(model(url), fast())
    shown = asked.replace("user:PASS-SECRET-1@", "***@")
    assert error_text(final) == f"400 no route for {shown} nor for pw [redacted]"


async def test_a_credential_of_the_url_echoed_as_written_or_decoded_is_not_in_the_error() -> None:
    """A server echoing the ``?key=`` value as the request wrote it (``%2F``) or the password
    decoded (``%40`` as ``@``): only the decoded value and the password as written were looked for."""
    async with LoopbackServer([Reply(b"")]) as server:
        url = server.url.replace("http://", "http://user:PASS%40SECRET-2@") + "/v1?key=KEY%2FSECRET-3"
        echo = json.dumps({"error": {"message": "no key KEY%2FSECRET-3/chat/completions for PASS@SECRET-2"}})
        server.replies[:] = [Reply(echo.encode(), 400, {"content-type": "application/json"})]
        _, final = await collect(model(url), fast())
    assert error_text(final) == "400 no key [redacted] for [redacted]"


async def test_a_timeout_of_a_callers_transport_without_an_idle_timeout_is_a_failure() -> None:
    """A ``TimeoutError`` from a caller's client while no idle timeout is set raised a
    ``TypeError`` out of the stream (the message formatted the missing timeout)."""
    import httpx2

    def stall(request: httpx2.Request) -> httpx2.Response:
        raise TimeoutError("the caller's transport gave up")

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(stall)) as client:
        _, final = await collect(model("http://127.0.0.1:9"), fast(http_client=client, idle_timeout=0))
    assert final["stopReason"] == "error"
    assert "timed out: the caller's transport gave up" in error_text(final)
