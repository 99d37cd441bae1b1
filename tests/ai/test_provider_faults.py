"""Fault injection on a loopback server: every failure is one terminal event, never a raise."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamcheck import check_invariants

from tether.ai import AbortController, StreamOptions, complete, stream
from tether.ai.types import Context
from tether.testing.loopback import LoopbackServer, Reply
from tether.wire import AssistantMessageEvent, ModelInfo

CONTEXT: Context = {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]}


def model(url: str, api: str = "openai-completions", provider: str = "openai") -> ModelInfo:
    return {
        "id": "m",
        "name": "m",
        "api": api,
        "provider": provider,
        "baseUrl": url,
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 1000,
        "maxTokens": 100,
    }


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> bytes:
    body: dict[str, Any] = {
        "id": "r1",
        "model": "m",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }
    body.update(extra)
    return b"data: " + json.dumps(body).encode() + b"\n\n"


TEXT_BODY = (
    chunk({"role": "assistant", "content": "Hel"})
    + chunk({"content": "lo"})
    + chunk(finish="stop")
    + b'data: {"id":"r1","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}\n\n'
    + b"data: [DONE]\n\n"
)


def fast(**overrides: Any) -> StreamOptions:
    options = StreamOptions(api_key="k", retry_base_delay=0.001, max_retry_delay=5, timeout=10)
    for key, value in overrides.items():
        setattr(options, key, value)
    return options


async def collect(
    spec: ModelInfo, options: StreamOptions
) -> tuple[list[AssistantMessageEvent], dict[str, Any]]:
    events_stream = stream(spec, CONTEXT, options)
    events: list[AssistantMessageEvent] = []
    snapshots: list[Any] = []
    async for event in events_stream:
        events.append(event)
        snapshots.append(copy.deepcopy(cast("dict[str, Any]", event).get("partial")))
    final = cast("dict[str, Any]", await events_stream.result())
    check_invariants(events, snapshots, final)
    return events, final


async def test_429_with_retry_after_then_success() -> None:
    limited = Reply(b'{"error":{"message":"Rate limit"}}', 429, {"retry-after": "0.01"})
    async with LoopbackServer([limited, Reply(TEXT_BODY)]) as server:
        _, final = await collect(model(server.url), fast())
    assert final["stopReason"] == "stop"
    assert final["content"][0]["text"] == "Hello"
    assert len(server.requests) == 2
    # Clock fields: time to first token, total duration (ms, incl. the retry wait), completion time.
    assert 0 <= final["ttft"] <= final["duration"] and final["duration"] >= 10
    assert final["completedAt"] >= final["timestamp"]
    assert final["responseId"] == "r1"


async def test_retry_after_ms_header_is_honoured() -> None:
    limited = Reply(b"slow down", 429, {"retry-after-ms": "5", "retry-after": "999"})
    async with LoopbackServer([limited, Reply(TEXT_BODY)]) as server:
        _, final = await collect(model(server.url), fast())
    assert final["stopReason"] == "stop"


async def test_500_four_times_exhausts_three_retries() -> None:
    failing = Reply(b'{"error":{"message":"upstream exploded"}}', 500, {"content-type": "application/json"})
    async with LoopbackServer([failing]) as server:
        events, final = await collect(model(server.url), fast())
    assert len(server.requests) == 4
    assert [e["type"] for e in events] == ["error"]
    assert final["stopReason"] == "error"
    assert final["errorStatus"] == 500
    assert final["errorMessage"] == "500 upstream exploded"


async def test_requested_delay_above_max_retry_delay_fails_at_once() -> None:
    async with LoopbackServer([Reply(b"busy", 503, {"retry-after": "120"})]) as server:
        _, final = await collect(model(server.url), fast(max_retry_delay=10))
    assert len(server.requests) == 1
    assert "120 s" in final["errorMessage"] and "max_retry_delay 10 s" in final["errorMessage"]
    assert final["errorStatus"] == 503


async def test_quota_errors_are_not_retried() -> None:
    body = b'{"error":{"message":"You exceeded your current quota","type":"insufficient_quota"}}'
    async with LoopbackServer([Reply(body, 429)]) as server:
        _, final = await collect(model(server.url), fast())
    assert len(server.requests) == 1
    assert final["errorMessage"] == "429 You exceeded your current quota"


async def test_401_with_json_error_body() -> None:
    body = b'{"error":{"message":"Incorrect API key provided: k.","type":"invalid_request_error"}}'
    async with LoopbackServer([Reply(body, 401, {"content-type": "application/json"})]) as server:
        _, final = await collect(model(server.url), fast())
    assert len(server.requests) == 1
    assert final["stopReason"] == "error"
    assert final["errorStatus"] == 401
    assert final["errorMessage"] == "401 Incorrect API key provided: k."


async def test_anthropic_overloaded_is_retried() -> None:
    overloaded = Reply(b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', 529)
    body = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"x","usage":{"input_tokens":1}}}\n\n'
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    async with LoopbackServer([overloaded, Reply(body)]) as server:
        _, final = await collect(model(server.url, "anthropic-messages", "anthropic"), fast())
    assert final["stopReason"] == "stop"
    assert len(server.requests) == 2
    assert server.requests[1].headers["anthropic-version"] == "2023-06-01"


async def test_connection_reset_before_first_token_is_retried() -> None:
    async with LoopbackServer([Reply(TEXT_BODY, reset_after=0), Reply(TEXT_BODY)]) as server:
        _, final = await collect(model(server.url), fast())
    assert final["stopReason"] == "stop"
    assert len(server.requests) == 2


async def test_http_and_read_failures_share_one_retry_budget() -> None:
    async with LoopbackServer([Reply(b"oops", 500), Reply(TEXT_BODY, reset_after=0)]) as server:
        _, final = await collect(model(server.url), fast(max_retries=3))
    assert len(server.requests) == 4  # the first try and three retries, whatever failed
    assert final["stopReason"] == "error"


async def test_connection_reset_before_first_token_without_retries() -> None:
    async with LoopbackServer([Reply(TEXT_BODY, reset_after=0)]) as server:
        _, final = await collect(model(server.url), fast(max_retries=0))
    assert final["stopReason"] == "error"
    assert final["errorMessage"].startswith(("Connection", "Connection lost"))


async def test_connection_reset_after_first_token_keeps_the_partial_answer() -> None:
    cut = len(chunk({"role": "assistant", "content": "Hel"}))
    async with LoopbackServer([Reply(TEXT_BODY, reset_after=cut, chunks=[cut], delay=0.01)]) as server:
        events, final = await collect(model(server.url), fast())
    assert len(server.requests) == 1, "never retry after content has streamed"
    assert final["stopReason"] == "error"
    assert final["content"] == [{"type": "text", "text": "Hel"}]
    assert "Connection lost" in final["errorMessage"]
    assert "text_end" not in [e["type"] for e in events]


async def test_truncated_body() -> None:
    cut = len(TEXT_BODY) // 2
    async with LoopbackServer(
        [Reply(TEXT_BODY, truncate_after=cut, chunks=[cut // 2], delay=0.01)]
    ) as server:
        _, final = await collect(model(server.url), fast(max_retries=0))
    assert final["stopReason"] == "error"
    assert final["errorMessage"]


async def test_body_ending_without_finish_reason_is_an_error() -> None:
    async with LoopbackServer([Reply(chunk({"content": "Hel"}))]) as server:
        _, final = await collect(model(server.url), fast())
    assert final["stopReason"] == "error"
    assert final["errorMessage"] == "The stream ended before the response was complete"


async def test_done_marker_without_finish_reason_is_fine() -> None:
    async with LoopbackServer([Reply(chunk({"content": "Hi"}) + b"data: [DONE]\n\n")]) as server:
        _, final = await collect(model(server.url), fast())
    assert final["stopReason"] == "stop"


async def test_missing_done_marker_is_fine() -> None:
    async with LoopbackServer([Reply(TEXT_BODY.replace(b"data: [DONE]\n\n", b""))]) as server:
        _, final = await collect(model(server.url), fast())
    assert final["stopReason"] == "stop"
    assert final["usage"]["input"] == 5


async def test_malformed_sse_line() -> None:
    body = chunk({"content": "ok"}) + b"data: {this is not json\n\n" + chunk(finish="stop")
    async with LoopbackServer([Reply(body)]) as server:
        _, final = await collect(model(server.url), fast())
    assert final["stopReason"] == "error"
    assert final["errorMessage"].startswith(
        "Invalid JSON in the openai-completions stream: {this is not json"
    )
    assert final["content"][0]["text"] == "ok"


async def test_invalid_json_in_tool_arguments_still_ends_cleanly() -> None:
    call = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": '{"a": 1,, "b"'}}
    body = chunk({"tool_calls": [call]}) + chunk(finish="tool_calls")
    async with LoopbackServer([Reply(body)]) as server:
        events, final = await collect(model(server.url), fast())
    assert final["stopReason"] == "toolUse"
    assert isinstance(final["content"][0]["arguments"], dict)
    end = next(e for e in events if e["type"] == "toolcall_end")
    assert cast("dict[str, Any]", end)["toolCall"]["name"] == "f"


async def test_in_stream_error_event_anthropic() -> None:
    body = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"x","usage":{"input_tokens":1}}}\n\n'
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    )
    async with LoopbackServer([Reply(body)]) as server:
        _, final = await collect(model(server.url, "anthropic-messages", "anthropic"), fast(max_retries=0))
    # Verbatim, as pi-ai reports it.
    assert (
        final["errorMessage"] == '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    )


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
        events, final = await collect(model(server.url, "anthropic-messages", "anthropic"), fast())
    assert len(server.requests) == 2
    assert final["stopReason"] == "stop" and final["responseId"] == "y"
    assert final["usage"]["input"] == 2
    assert [e["type"] for e in events] == ["start", "done"]


async def test_anthropic_stream_cut_before_message_stop() -> None:
    body = b'event: message_start\ndata: {"type":"message_start","message":{"id":"x","usage":{}}}\n\n'
    async with LoopbackServer([Reply(body)]) as server:
        _, final = await collect(model(server.url, "anthropic-messages", "anthropic"), fast())
    assert final["errorMessage"] == "Anthropic stream ended before message_stop"


async def test_missing_api_key_names_the_variable() -> None:
    final = await complete(model("https://api.openai.com/v1"), CONTEXT, StreamOptions(max_retries=0))
    assert final["stopReason"] == "error"
    assert "OPENAI_API_KEY" in final.get("errorMessage", "")


async def test_anthropic_key_from_env_and_oauth_bearer(monkeypatch: pytest.MonkeyPatch) -> None:
    body = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"x","usage":{}}}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    monkeypatch.setenv("ANTHROPIC_OAUTH_TOKEN", "sk-ant-oat-secret")
    async with LoopbackServer([Reply(body)]) as server:
        final = await complete(
            model(server.url, "anthropic-messages", "anthropic"), CONTEXT, fast(api_key=None)
        )
    assert final["stopReason"] == "stop"
    headers = server.requests[0].headers
    assert headers["authorization"] == "Bearer sk-ant-oat-secret"
    assert "x-api-key" not in headers
    assert "oauth-2025-04-20" in headers["anthropic-beta"]


async def test_unknown_api_is_an_error_message() -> None:
    final = await complete(model("http://127.0.0.1:9", api="no-such-api"), CONTEXT)
    assert final["stopReason"] == "error"
    assert "no-such-api" in final.get("errorMessage", "")


async def test_unreachable_server() -> None:
    _, final = await collect(model("http://127.0.0.1:9"), fast(max_retries=1))
    assert final["stopReason"] == "error"
    assert final["errorMessage"].startswith("Connection error")


LONG_BODY = (
    b"".join(chunk({"content": f"w{i} "}) for i in range(40)) + chunk(finish="stop") + b"data: [DONE]\n\n"
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(after=st.integers(0, 45))
async def test_abort_after_any_number_of_events(after: int) -> None:
    controller = AbortController()
    piece = len(chunk({"content": "w0 "}))
    async with LoopbackServer(
        [Reply(LONG_BODY, chunks=range(piece, len(LONG_BODY), piece), delay=0.0005)]
    ) as server:
        events_stream = stream(model(server.url), CONTEXT, fast(signal=controller.signal))
        events: list[AssistantMessageEvent] = []
        snapshots: list[Any] = []
        if after == 0:
            controller.abort()
        async for event in events_stream:
            events.append(event)
            snapshots.append(copy.deepcopy(cast("dict[str, Any]", event).get("partial")))
            if len(events) == after:
                controller.abort()
        final = cast("dict[str, Any]", await events_stream.result())
    check_invariants(events, snapshots, final)
    if 0 < after < len(events):
        # Aborted before the terminal event: at most the rest of one SSE event's events
        # (text_start + text_delta here) still arrive, unless the closing batch was under way.
        later = [e["type"] for e in events[after:]]
        if final["stopReason"] == "aborted":
            assert len(later) <= 3
            assert final["errorMessage"] == "Request was aborted"
        else:
            assert all(kind in ("text_end", "done") for kind in later), later
    if after == 0:
        assert [e["type"] for e in events] == ["error"]
        assert final["stopReason"] == "aborted"


async def test_abort_while_blocked_on_the_network_is_prompt() -> None:
    controller = AbortController()
    slow = Reply(LONG_BODY, chunks=[len(chunk({"content": "w0 "}))], delay=30)
    async with LoopbackServer([slow]) as server:
        events_stream = stream(model(server.url), CONTEXT, fast(signal=controller.signal))
        async for event in events_stream:
            if event["type"] == "text_delta":
                # The next read blocks for 30 s; the abort must cut it short.
                asyncio.get_running_loop().call_later(0.05, controller.abort)
        final = await asyncio.wait_for(events_stream.result(), timeout=10)
    assert final["stopReason"] == "aborted"
    assert final["content"] == [{"type": "text", "text": "w0 "}]


async def test_abort_during_backoff_sleep() -> None:
    controller = AbortController()
    async with LoopbackServer([Reply(b"busy", 503)]) as server:
        events_stream = stream(
            model(server.url), CONTEXT, fast(signal=controller.signal, retry_base_delay=30)
        )
        asyncio.get_running_loop().call_later(0.05, controller.abort)
        final = await asyncio.wait_for(events_stream.result(), timeout=10)
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
