"""Fault injection for openai-completions and anthropic-messages on a loopback server, beyond
the faults every API shares (test_stream_faults.py): retry details, the end of a completions
stream, Anthropic's in-stream errors and keys, aborts and cancellation. Every failure is one
terminal event, never a raise."""

from __future__ import annotations

import asyncio
import json

import pytest
from faultkit import ANTHROPIC, CONTEXT, LONG, TEXT, a_event, chunk, collect, event_ends, fast, model
from hypothesis import HealthCheck, given, settings, strategies as st

from narrowing import as_tool_call, error_text
from tether.ai import AbortController, complete, stream
from tether.ai.types import Context
from tether.testing.loopback import LoopbackServer, Reply

TEXT_BODY = TEXT["openai-completions"].body


async def test_retry_after_ms_header_is_honoured() -> None:
    limited = Reply(b"slow down", 429, {"retry-after-ms": "5", "retry-after": "999"})
    async with LoopbackServer([limited, Reply(TEXT_BODY)]) as server:
        _, final = await collect(model(server.url), fast())
    assert final["stopReason"] == "stop"


async def test_requested_delay_above_max_retry_delay_fails_at_once() -> None:
    async with LoopbackServer([Reply(b"busy", 503, {"retry-after": "120"})]) as server:
        _, final = await collect(model(server.url), fast(max_retry_delay=10))
    assert len(server.requests) == 1
    assert "120 s" in error_text(final) and "max_retry_delay 10 s" in error_text(final)
    assert final.get("errorStatus") == 503


async def test_quota_errors_are_not_retried() -> None:
    body = b'{"error":{"message":"You exceeded your current quota","type":"insufficient_quota"}}'
    async with LoopbackServer([Reply(body, 429)]) as server:
        _, final = await collect(model(server.url), fast())
    assert len(server.requests) == 1
    assert error_text(final) == "429 You exceeded your current quota"


async def test_anthropic_overloaded_is_retried() -> None:
    overloaded = Reply(b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', 529)
    body = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"x","usage":{"input_tokens":1}}}\n\n'
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    async with LoopbackServer([overloaded, Reply(body)]) as server:
        _, final = await collect(model(server.url, ANTHROPIC), fast())
    assert final["stopReason"] == "stop"
    assert len(server.requests) == 2
    assert server.requests[1].headers["anthropic-version"] == "2023-06-01"


async def test_http_and_read_failures_share_one_retry_budget() -> None:
    async with LoopbackServer([Reply(b"oops", 500), Reply(TEXT_BODY, reset_after=0)]) as server:
        _, final = await collect(model(server.url), fast(max_retries=3))
    assert len(server.requests) == 4  # the first try and three retries, whatever failed
    assert final["stopReason"] == "error"


async def test_connection_reset_before_first_token_without_retries() -> None:
    async with LoopbackServer([Reply(TEXT_BODY, reset_after=0)]) as server:
        _, final = await collect(model(server.url), fast(max_retries=0))
    assert final["stopReason"] == "error"
    assert error_text(final).startswith(("Connection", "Connection lost"))


async def test_done_marker_without_finish_reason_is_fine() -> None:
    async with LoopbackServer([Reply(chunk({"content": "Hi"}) + b"data: [DONE]\n\n")]) as server:
        _, final = await collect(model(server.url), fast())
    assert final["stopReason"] == "stop"


async def test_missing_done_marker_is_fine() -> None:
    async with LoopbackServer([Reply(TEXT_BODY.replace(b"data: [DONE]\n\n", b""))]) as server:
        _, final = await collect(model(server.url), fast())
    assert final["stopReason"] == "stop"
    assert final["usage"]["input"] == 5


async def test_invalid_json_in_tool_arguments_still_ends_cleanly() -> None:
    call = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": '{"a": 1,, "b"'}}
    body = chunk({"tool_calls": [call]}) + chunk(finish="tool_calls")
    async with LoopbackServer([Reply(body)]) as server:
        events, final = await collect(model(server.url), fast())
    assert final["stopReason"] == "toolUse"
    assert isinstance(as_tool_call(final["content"][0])["arguments"], dict)
    end = next(e for e in events if e["type"] == "toolcall_end")
    assert end["toolCall"]["name"] == "f"


async def test_in_stream_error_event_anthropic() -> None:
    body = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"x","usage":{"input_tokens":1}}}\n\n'
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    )
    async with LoopbackServer([Reply(body)]) as server:
        _, final = await collect(model(server.url, ANTHROPIC), fast(max_retries=0))
    # Verbatim, as pi-ai reports it.
    assert error_text(final) == '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'


async def test_anthropic_overloaded_inside_the_stream_before_content_is_retried() -> None:
    overloaded = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"x","usage":{"input_tokens":1}}}\n\n'
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    )
    fine = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"y","usage":{"input_tokens":2}}}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    async with LoopbackServer([Reply(overloaded), Reply(fine)]) as server:
        events, final = await collect(model(server.url, ANTHROPIC), fast())
    assert len(server.requests) == 2
    assert final["stopReason"] == "stop" and final.get("responseId") == "y"
    assert final["usage"]["input"] == 2
    assert [e["type"] for e in events] == ["start", "done"]


async def test_anthropic_stream_cut_before_message_stop() -> None:
    body = b'event: message_start\ndata: {"type":"message_start","message":{"id":"x","usage":{}}}\n\n'
    async with LoopbackServer([Reply(body)]) as server:
        _, final = await collect(model(server.url, ANTHROPIC), fast())
    assert error_text(final) == "Anthropic stream ended before message_stop"


def _long_tool_call_unstopped(arguments: str) -> bytes:
    """An Anthropic body that starts a ``write`` call at index 0 and streams ``arguments`` into
    it seven characters a delta, its content_block_stop not said (yet)."""
    body = a_event("message_start", message={"id": "m", "usage": {"input_tokens": 1}})
    body += a_event(
        "content_block_start",
        index=0,
        content_block={"type": "tool_use", "id": "t", "name": "write", "input": {}},
    )
    for at in range(0, len(arguments), 7):
        delta = {"type": "input_json_delta", "partial_json": arguments[at : at + 7]}
        body += a_event("content_block_delta", index=0, delta=delta)
    return body


async def test_anthropic_tool_call_never_stopped_gets_its_whole_arguments() -> None:
    """A body that says message_stop without the tool block's content_block_stop (a proxy that
    drops it): the call's arguments were the last parse while streaming, which lags the text
    by up to 1/16 of it once long, so a ``write`` got its content cut short with no error."""
    arguments = json.dumps({"path": "a.txt", "content": "x" * 3000})
    body = _long_tool_call_unstopped(arguments)
    body += a_event("message_delta", delta={"stop_reason": "tool_use"}, usage={}) + a_event("message_stop")
    async with LoopbackServer([Reply(body)]) as server:
        events, final = await collect(model(server.url, ANTHROPIC), fast())
    assert final["stopReason"] == "toolUse"
    assert as_tool_call(final["content"][0])["arguments"] == json.loads(arguments)
    assert [e["type"] for e in events][-2:] == ["toolcall_end", "done"]


@pytest.mark.parametrize("second", ["text", "server_tool_use"])
async def test_anthropic_block_started_again_on_an_open_index_closes_the_first(second: str) -> None:
    """A second ``content_block_start`` on an index still open (a proxy that drops a
    content_block_stop and reuses the index): the first block is closed there, its end event
    said and a tool call's arguments parsed whole; it was left open, its arguments the last
    lagging parse and no ``toolcall_end`` for it. A block of a kind tether does not show (a
    server tool) closes it too: its input deltas went into the first call's arguments."""
    arguments = json.dumps({"path": "a.txt", "content": "x" * 3000})
    body = _long_tool_call_unstopped(arguments)
    if second == "text":
        body += a_event("content_block_start", index=0, content_block={"type": "text", "text": ""})
        body += a_event("content_block_delta", index=0, delta={"type": "text_delta", "text": "done"})
    else:
        block: dict[str, object] = {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}}
        body += a_event("content_block_start", index=0, content_block=block)
        delta = {"type": "input_json_delta", "partial_json": '{"query": "x"}'}
        body += a_event("content_block_delta", index=0, delta=delta)
    body += a_event("content_block_stop", index=0)
    body += a_event("message_delta", delta={"stop_reason": "tool_use"}, usage={}) + a_event("message_stop")
    async with LoopbackServer([Reply(body)]) as server:
        events, final = await collect(model(server.url, ANTHROPIC), fast())
    assert final["stopReason"] == "toolUse"
    assert as_tool_call(final["content"][0])["arguments"] == json.loads(arguments)
    kinds = [e["type"] for e in events if not e["type"].endswith("_delta")]
    assert "".join(e["delta"] for e in events if e["type"] == "toolcall_delta") == arguments
    text = ["text_start", "text_end"] if second == "text" else []
    assert kinds == ["start", "toolcall_start", "toolcall_end", *text, "done"]


async def test_anthropic_key_from_env_and_oauth_bearer(monkeypatch: pytest.MonkeyPatch) -> None:
    body = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"x","usage":{}}}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    monkeypatch.setenv("ANTHROPIC_OAUTH_TOKEN", "sk-ant-oat-secret")
    async with LoopbackServer([Reply(body)]) as server:
        final = await complete(model(server.url, ANTHROPIC), CONTEXT, fast(api_key=None))
    assert final["stopReason"] == "stop"
    headers = server.requests[0].headers
    assert headers["authorization"] == "Bearer sk-ant-oat-secret"
    assert "x-api-key" not in headers
    assert "oauth-2025-04-20" in headers["anthropic-beta"]


async def test_unknown_api_is_an_error_message() -> None:
    final = await complete(model("http://127.0.0.1:9", api="no-such-api"), CONTEXT)
    assert final["stopReason"] == "error"
    assert "no-such-api" in final.get("errorMessage", "")


LONG_BODY = LONG["openai-completions"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(after=st.integers(0, 45))
async def test_abort_after_any_number_of_events(after: int) -> None:
    """One SSE event per write: a tighter bound than the one every API meets (test_stream_faults)."""
    controller = AbortController()
    async with LoopbackServer([Reply(LONG_BODY, chunks=event_ends(LONG_BODY), delay=0.0005)]) as server:
        events, final = await collect(model(server.url), fast(signal=controller.signal), controller, after)
    if 0 < after < len(events):
        # Aborted before the terminal event: at most the rest of one SSE event's events
        # (text_start + text_delta here) still arrive, unless the closing batch was under way.
        later = [e["type"] for e in events[after:]]
        if final["stopReason"] == "aborted":
            assert len(later) <= 3
            assert error_text(final) == "Request was aborted"
        else:
            assert all(kind in ("text_end", "done") for kind in later), later
    if after == 0:
        assert [e["type"] for e in events] == ["error"]
        assert final["stopReason"] == "aborted"


async def test_cancelling_the_consumer_task() -> None:
    slow = Reply(LONG_BODY, chunks=[len(chunk({"content": "w0 "}))], delay=30)
    async with LoopbackServer([slow]) as server:
        events_stream = stream(model(server.url), CONTEXT, fast())
        task = asyncio.ensure_future(events_stream.result())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        final = await events_stream.result()
    assert final["stopReason"] == "aborted"


async def test_lone_surrogates_anywhere_in_the_body_are_still_sent() -> None:
    context: Context = {
        "messages": [
            {"role": "user", "content": "cut emoji \ud83d", "timestamp": 0},
        ]
    }
    async with LoopbackServer([Reply(TEXT_BODY)]) as server:
        final = await complete(model(server.url), context, fast(extra={"metadata": {"note": "x\udc4b"}}))
    assert final["stopReason"] == "stop"
    body = json.loads(server.requests[0].body)
    assert body["messages"][0]["content"] == "cut emoji "  # stripped by the builder
    assert body["metadata"] == {"note": "x?"}  # replaced by the transport's safety net


def test_an_error_body_nested_too_deeply_is_shown_as_text() -> None:
    """A server's error body deeper than the JSON parser recurses raised RecursionError out of
    the error's own reading; the body's start is the message, as for any body that is not JSON."""
    from tether.ai.transport import provider_error_text

    body = "[" * 100_000
    assert provider_error_text(body) == body[:300] + "…"
