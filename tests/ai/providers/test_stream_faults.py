"""The faults every provider API meets the same way, injected on a loopback server for each of
the four: rate limits and server errors with retries, a 401, connection resets before and after
the first token, truncated and unfinished bodies, a malformed SSE line, no server, no key, and
aborts. Each ends in exactly one terminal event, never a raise (`faultkit.collect` checks the
stream contract on every run). Faults only some APIs have live in the per-API modules."""

from __future__ import annotations

import asyncio
import socket

import pytest
from faultkit import APIS, CONTEXT, GEMINI, LONG, TEXT, after_event, collect, event_ends, fast, model
from hypothesis import HealthCheck, given, settings, strategies as st

from narrowing import block_text, error_text
from tether.ai import AbortController, StreamOptions, stream
from tether.ai.transport import HttpRequest, RequestFailed, send
from tether.session.retry import is_transient_error
from tether.testing.loopback import LoopbackServer, Reply

each_api = pytest.mark.parametrize("api", APIS)


@each_api
async def test_429_with_retry_after_then_success(api: str) -> None:
    limited = Reply(b'{"error":{"message":"Rate limit"}}', 429, {"retry-after": "0.01"})
    async with LoopbackServer([limited, Reply(TEXT[api].body)]) as server:
        _, final = await collect(model(server.url, api), fast())
    assert final["stopReason"] == "stop"
    assert block_text(final["content"][0]) == "Hello"
    assert len(server.requests) == 2
    # Clock fields: time to first token, total duration (ms, incl. the retry wait), completion time.
    assert "ttft" in final and "duration" in final and "completedAt" in final, final
    assert 0 <= final["ttft"] <= final["duration"] and final["duration"] >= 10
    assert final["completedAt"] >= final["timestamp"]
    assert final.get("responseId") == TEXT[api].response_id


@each_api
async def test_500_four_times_exhausts_three_retries(api: str) -> None:
    failing = Reply(b'{"error":{"message":"upstream exploded"}}', 500, {"content-type": "application/json"})
    async with LoopbackServer([failing]) as server:
        events, final = await collect(model(server.url, api), fast())
    assert len(server.requests) == 4
    assert [e["type"] for e in events] == ["error"]
    assert (final["stopReason"], final.get("errorStatus")) == ("error", 500)
    assert error_text(final) == "500 upstream exploded"


@each_api
async def test_401_with_json_error_body(api: str) -> None:
    body, text = TEXT[api].unauthorized
    async with LoopbackServer([Reply(body, 401, {"content-type": "application/json"})]) as server:
        _, final = await collect(model(server.url, api), fast())
    assert len(server.requests) == 1
    assert (final["stopReason"], final.get("errorStatus"), error_text(final)) == ("error", 401, text)


@each_api
async def test_connection_reset_before_first_token_is_retried(api: str) -> None:
    body = TEXT[api].body
    async with LoopbackServer([Reply(body, reset_after=0), Reply(body)]) as server:
        _, final = await collect(model(server.url, api), fast())
    assert final["stopReason"] == "stop"
    assert len(server.requests) == 2


@each_api
async def test_connection_reset_after_first_token_keeps_the_partial_answer(api: str) -> None:
    body = TEXT[api].body
    cut = after_event(body, b'"Hel"')  # the first text delta has gone out
    async with LoopbackServer([Reply(body, reset_after=cut, chunks=[cut], delay=0.01)]) as server:
        events, final = await collect(model(server.url, api), fast())
    assert len(server.requests) == 1, "never retry after content has streamed"
    assert final["stopReason"] == "error"
    assert "Connection lost" in error_text(final)
    assert final["content"] == [{"type": "text", "text": "Hel"}]
    assert "text_end" not in [e["type"] for e in events]


@each_api
async def test_stall_before_the_first_token_is_retried(api: str) -> None:
    """Issue 14.8: headers, then silence. The idle timeout ends the attempt; nothing was shown, so
    the request is repeated and the second server answers."""
    body = TEXT[api].body
    async with LoopbackServer([Reply(body, stall_after=0), Reply(body)]) as server:
        _, final = await collect(model(server.url, api), fast(idle_timeout=0.2))
    assert final["stopReason"] == "stop"
    assert block_text(final["content"][0]) == "Hello"
    assert len(server.requests) == 2


@each_api
async def test_stall_after_the_first_token_is_a_transient_error(api: str) -> None:
    body = TEXT[api].body
    cut = after_event(body, b'"Hel"')
    async with LoopbackServer([Reply(body, stall_after=cut)]) as server:
        spec = model(server.url, api)
        _, final = await collect(spec, fast(idle_timeout=0.2))
    assert len(server.requests) == 1, "never retry after content has streamed"
    assert final["stopReason"] == "error"
    assert error_text(final) == f"No data from {spec['provider']} for 0.2 s (stream idle timeout)"
    assert final["content"] == [{"type": "text", "text": "Hel"}]
    assert is_transient_error(final), "the session must retry a stalled reply"


@each_api
@pytest.mark.parametrize("keep", ["half", "all but 30 bytes"])
async def test_truncated_body(api: str, keep: str) -> None:
    body = TEXT[api].body
    cut = len(body) // 2 if keep == "half" else len(body) - 30
    async with LoopbackServer([Reply(body, truncate_after=cut, chunks=[cut // 2], delay=0.01)]) as server:
        _, final = await collect(model(server.url, api), fast(max_retries=0))
    assert final["stopReason"] == "error"
    assert error_text(final)


@each_api
async def test_body_without_the_final_event_is_an_error(api: str) -> None:
    answer = TEXT[api]
    async with LoopbackServer([Reply(answer.body[: answer.final_at])]) as server:
        _, final = await collect(model(server.url, api), fast())
    assert final["stopReason"] == "error"
    assert error_text(final) == answer.unfinished


@each_api
async def test_a_body_that_cannot_be_decompressed_is_one_request_saying_so(api: str) -> None:
    """``content-encoding: gzip`` on a body that is not gzip: the error read "Connection lost while
    streaming" and the request was sent four times, though the server would send the same again."""
    headers = {"content-type": "text/event-stream", "content-encoding": "gzip"}
    async with LoopbackServer([Reply(TEXT[api].body, headers=headers)]) as server:
        _, final = await collect(model(server.url, api), fast())
    assert len(server.requests) == 1
    assert final["stopReason"] == "error"
    assert error_text(final).startswith("Could not decode the response body (HTTP 200, text/event-stream): ")
    assert "incorrect header check" in error_text(final)
    assert not is_transient_error(final), "the session must not retry it either"


@each_api
async def test_malformed_sse_line(api: str) -> None:
    answer = TEXT[api]
    broken = answer.body[: answer.final_at] + b"data: {this is not json\n\n" + answer.body[answer.final_at :]
    async with LoopbackServer([Reply(broken)]) as server:
        _, final = await collect(model(server.url, api), fast())
    assert final["stopReason"] == "error"
    assert error_text(final).startswith(f"Invalid JSON in the {api} stream: {{this is not json")
    # Everything before the bad line is kept (Gemini's last chunk, with "lo", comes after it).
    assert block_text(final["content"][0]) == ("Hel" if api == GEMINI else "Hello")


@each_api
async def test_an_html_page_with_status_200_says_what_arrived(api: str) -> None:
    """Issue 14.10: a proxy's or a wrong baseUrl's page is not "the stream ended early"."""
    page = b"\n<!DOCTYPE html>\n<html><head><title>Sign in to the network</title></head></html>\n"
    headers = {"content-type": "text/html; charset=utf-8"}
    async with LoopbackServer([Reply(page, headers=headers)]) as server:
        _, final = await collect(model(server.url, api), fast())
    assert final["stopReason"] == "error"
    assert error_text(final) == (
        "The response was not an event stream: HTTP 200, text/html; charset=utf-8, first line: <!DOCTYPE html>"
    )


@each_api
async def test_an_empty_200_body_says_so(api: str) -> None:
    async with LoopbackServer([Reply(b"")]) as server:
        _, final = await collect(model(server.url, api), fast())
    assert error_text(final) == "The response had no events: HTTP 200, text/event-stream, empty body"


def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def test_a_refused_connection_is_not_retried_and_names_the_url() -> None:
    """Nobody serves there: no retry (a server that is not running stays so for a while), and
    the message says where tether tried, so a wrong base URL or port shows."""
    url = f"http://127.0.0.1:{closed_port()}/v1/chat/completions"
    failure = await send(HttpRequest(url, {}, {"model": "m"}), fast())
    assert isinstance(failure, RequestFailed)
    assert failure.message == f"Cannot reach {url}: connection refused: is the server running?"
    assert not failure.retryable


@each_api
async def test_a_refused_connection_ends_the_stream_naming_the_server(api: str) -> None:
    base_url = f"http://127.0.0.1:{closed_port()}"
    events, final = await collect(model(base_url, api), fast(max_retries=3))
    assert final["stopReason"] == "error"
    message = error_text(final)
    assert message.startswith(f"Cannot reach {base_url}/")
    assert message.endswith("connection refused: is the server running?")
    # The session's retry does not take it for a passing fault either (the error event carries
    # the final message, typed).
    end = events[-1]
    assert end["type"] == "error"
    assert not is_transient_error(end["error"])


@each_api
async def test_missing_api_key_names_the_variable(api: str) -> None:
    _, final = await collect(model("https://example.invalid", api), StreamOptions(max_retries=0))
    assert final["stopReason"] == "error"
    assert TEXT[api].key_variable in error_text(final)
    assert "api_key" not in error_text(final)  # a shell user has no such parameter


@each_api
async def test_abort_while_blocked_on_the_network_is_prompt(api: str) -> None:
    controller = AbortController()
    body = LONG[api]
    first = after_event(body, b"w0 ")
    async with LoopbackServer([Reply(body, chunks=[first], delay=30)]) as server:
        events_stream = stream(model(server.url, api), CONTEXT, fast(signal=controller.signal))
        async for event in events_stream:
            if event["type"] == "text_delta":
                # The next read blocks for 30 s; the abort must cut it short.
                asyncio.get_running_loop().call_later(0.05, controller.abort)
        final = await asyncio.wait_for(events_stream.result(), timeout=10)
    assert final["stopReason"] == "aborted"
    assert final["content"] == [{"type": "text", "text": "w0 "}]


@each_api
async def test_abort_during_backoff_sleep(api: str) -> None:
    controller = AbortController()
    async with LoopbackServer([Reply(b"busy", 503)]) as server:
        events_stream = stream(
            model(server.url, api), CONTEXT, fast(signal=controller.signal, retry_base_delay=30)
        )
        asyncio.get_running_loop().call_later(0.05, controller.abort)
        final = await asyncio.wait_for(events_stream.result(), timeout=10)
    assert final["stopReason"] == "aborted"


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(after=st.integers(0, 45), stride=st.integers(1, 3))
@each_api
async def test_abort_after_any_number_of_events(api: str, after: int, stride: int) -> None:
    """The server writes ``stride`` SSE events at a time; the driver parses what one read brings,
    so after an abort at most the rest of that read is delivered, then ``error``/``aborted``."""
    controller = AbortController()
    body = LONG[api]
    cuts = event_ends(body)[stride - 1 :: stride]
    async with LoopbackServer([Reply(body, chunks=cuts, delay=0.0005)]) as server:
        options = fast(signal=controller.signal)
        events, final = await collect(model(server.url, api), options, controller, after)
    if after == 0:
        assert [e["type"] for e in events] == ["error"]
    if final["stopReason"] == "aborted":
        assert error_text(final) == "Request was aborted"
        # Each SSE event gives at most two events (block start + delta); a read may hold a
        # couple of writes when the client lags.
        assert len(events) - max(after, 1) <= 2 * 2 * stride + 1
    else:
        assert final["stopReason"] == "stop"
