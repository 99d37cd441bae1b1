"""Fault injection for openai-responses and google-generative-ai on a loopback server: the set of
issue 4 (429 + Retry-After, 500 x4, resets before/after the first token, truncated body,
malformed SSE, invalid tool-argument JSON, 401 with a JSON body, aborts at random points) plus the
in-stream failures these two APIs have. Each ends in exactly one terminal event, never a raise."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamcheck import check_invariants

from tether.ai import AbortController, StreamOptions, stream
from tether.ai.types import Context
from tether.testing.loopback import LoopbackServer, Reply
from tether.wire import AssistantMessageEvent, ModelInfo

CONTEXT: Context = {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]}
RESPONSES = "openai-responses"
GEMINI = "google-generative-ai"


def model(url: str, api: str) -> ModelInfo:
    return {
        "id": "m",
        "name": "m",
        "api": api,
        "provider": "openai" if api == RESPONSES else "google",
        "baseUrl": url,
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 1000,
        "maxTokens": 100,
    }


def sse(payload: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + json.dumps(payload).encode() + b"\n\n"


# -- openai-responses bodies --------------------------------------------------------------------


def r_event(kind: str, **fields: Any) -> bytes:
    return sse({"type": kind, **fields}, kind)


def r_text_body(words: list[str], status: str = "completed", tier: str = "default") -> bytes:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    text = "".join(words)
    done_item = {**message, "content": [{"type": "output_text", "text": text}]}
    response = {
        "id": "resp_1",
        "status": status,
        "service_tier": tier,
        "usage": {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 4},
            "output_tokens": 6,
            "output_tokens_details": {"reasoning_tokens": 2},
            "total_tokens": 16,
        },
    }
    if status == "incomplete":
        response["incomplete_details"] = {"reason": "max_output_tokens"}
    return (
        r_event("response.created", response={"id": "resp_1", "status": "in_progress"})
        + r_event("response.output_item.added", output_index=0, item=message)
        + b"".join(r_event("response.output_text.delta", output_index=0, delta=w) for w in words)
        + r_event("response.output_item.done", output_index=0, item=done_item)
        + r_event(f"response.{status}", response=response)
    )


R_TEXT = r_text_body(["Hel", "lo"])


# -- gemini bodies ----------------------------------------------------------------------------


def g_chunk(parts: list[dict[str, Any]], finish: str | None = None, **extra: Any) -> bytes:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    body = {
        "candidates": [candidate],
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 2, "totalTokenCount": 7},
        "responseId": "g1",
        **extra,
    }
    return b"data: " + json.dumps(body).encode() + b"\r\n\r\n"


G_TEXT = g_chunk([{"text": "Hel"}]) + g_chunk([{"text": "lo"}], "STOP")

BODIES = {RESPONSES: R_TEXT, GEMINI: G_TEXT}


def after_event(body: bytes, needle: bytes) -> int:
    """Offset just past the SSE event that contains ``needle``."""
    at = body.index(needle)
    ends = [body.find(sep, at) + len(sep) for sep in (b"\r\n\r\n", b"\n\n") if body.find(sep, at) >= 0]
    return min(ends)


both = pytest.mark.parametrize("api", [RESPONSES, GEMINI])


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


# -- HTTP-level faults (both APIs) ---------------------------------------------------------------


@both
async def test_429_with_retry_after_then_success(api: str) -> None:
    limited = Reply(b'{"error":{"message":"Rate limit"}}', 429, {"retry-after": "0.01"})
    async with LoopbackServer([limited, Reply(BODIES[api])]) as server:
        _, final = await collect(model(server.url, api), fast())
    assert final["stopReason"] == "stop"
    assert final["content"][0]["text"] == "Hello"
    assert len(server.requests) == 2


@both
async def test_500_four_times_exhausts_three_retries(api: str) -> None:
    failing = Reply(b'{"error":{"message":"upstream exploded"}}', 500, {"content-type": "application/json"})
    async with LoopbackServer([failing]) as server:
        events, final = await collect(model(server.url, api), fast())
    assert len(server.requests) == 4
    assert [e["type"] for e in events] == ["error"]
    assert (final["stopReason"], final["errorStatus"]) == ("error", 500)
    assert final["errorMessage"] == "500 upstream exploded"


@both
async def test_401_with_json_error_body(api: str) -> None:
    if api == GEMINI:
        body = b'[{"error":{"code":401,"message":"API key not valid. Please pass a valid API key.","status":"UNAUTHENTICATED"}}]'
        text = "401 API key not valid. Please pass a valid API key."
    else:
        body = b'{"error":{"message":"Incorrect API key provided: k.","type":"invalid_request_error"}}'
        text = "401 Incorrect API key provided: k."
    async with LoopbackServer([Reply(body, 401, {"content-type": "application/json"})]) as server:
        _, final = await collect(model(server.url, api), fast())
    assert len(server.requests) == 1
    assert (final["stopReason"], final["errorStatus"], final["errorMessage"]) == ("error", 401, text)


@both
async def test_connection_reset_before_first_token_is_retried(api: str) -> None:
    async with LoopbackServer([Reply(BODIES[api], reset_after=0), Reply(BODIES[api])]) as server:
        _, final = await collect(model(server.url, api), fast())
    assert final["stopReason"] == "stop"
    assert len(server.requests) == 2


@both
async def test_connection_reset_after_first_token_keeps_the_partial_answer(api: str) -> None:
    body = BODIES[api]
    cut = after_event(body, b'"Hel"')  # the first text delta has gone out
    async with LoopbackServer([Reply(body, reset_after=cut, chunks=[cut], delay=0.01)]) as server:
        events, final = await collect(model(server.url, api), fast())
    assert len(server.requests) == 1, "never retry after content has streamed"
    assert final["stopReason"] == "error"
    assert "Connection lost" in final["errorMessage"]
    assert final["content"] == [{"type": "text", "text": "Hel"}]
    assert "text_end" not in [e["type"] for e in events]


@both
async def test_truncated_body(api: str) -> None:
    body = BODIES[api]
    cut = len(body) - 30
    async with LoopbackServer([Reply(body, truncate_after=cut, chunks=[cut // 2], delay=0.01)]) as server:
        _, final = await collect(model(server.url, api), fast(max_retries=0))
    assert final["stopReason"] == "error"
    assert final["errorMessage"]


@both
async def test_body_without_a_final_event_is_an_error(api: str) -> None:
    body = BODIES[api]
    cut = body.rindex(b"data:")
    async with LoopbackServer([Reply(body[:cut])]) as server:
        _, final = await collect(model(server.url, api), fast())
    assert final["stopReason"] == "error"
    assert final["errorMessage"] == "The stream ended before the response was complete"


@both
async def test_malformed_sse_line(api: str) -> None:
    body = BODIES[api]
    cut = body.rindex(b"data:")
    broken = body[:cut] + b"data: {this is not json\n\n" + body[cut:]
    async with LoopbackServer([Reply(broken)]) as server:
        _, final = await collect(model(server.url, api), fast())
    assert final["stopReason"] == "error"
    assert final["errorMessage"].startswith(f"Invalid JSON in the {api} stream: {{this is not json")
    # Everything before the bad line is kept (Gemini's last chunk, with "lo", comes after it).
    assert final["content"][0]["text"] == ("Hello" if api == RESPONSES else "Hel")


@both
async def test_unreachable_server(api: str) -> None:
    _, final = await collect(model("http://127.0.0.1:9", api), fast(max_retries=1))
    assert final["stopReason"] == "error"
    assert final["errorMessage"].startswith("Connection error")


@both
async def test_missing_api_key_names_the_variable(api: str) -> None:
    _, final = await collect(model("https://example.invalid", api), StreamOptions(max_retries=0))
    assert final["stopReason"] == "error"
    assert ("OPENAI_API_KEY" if api == RESPONSES else "GEMINI_API_KEY") in final["errorMessage"]


# -- in-stream failures: openai-responses --------------------------------------------------------


async def test_responses_invalid_json_in_tool_arguments_still_ends_cleanly() -> None:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": ""}
    body = (
        r_event("response.output_item.added", output_index=0, item=item)
        + r_event("response.function_call_arguments.delta", output_index=0, delta='{"a": 1,, "b"')
        + r_event("response.output_item.done", output_index=0, item={**item, "arguments": '{"a": 1,, "b"'})
        + r_event("response.completed", response={"id": "r", "status": "completed"})
    )
    async with LoopbackServer([Reply(body)]) as server:
        events, final = await collect(model(server.url, RESPONSES), fast())
    assert final["stopReason"] == "toolUse"
    assert isinstance(final["content"][0]["arguments"], dict)
    end = next(e for e in events if e["type"] == "toolcall_end")
    assert cast("dict[str, Any]", end)["toolCall"]["id"] == "call_1|fc_1"


async def test_responses_arguments_done_overrides_the_deltas() -> None:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": ""}
    body = (
        r_event("response.output_item.added", output_index=0, item=item)
        + r_event("response.function_call_arguments.delta", output_index=0, delta='{"a": "wro')
        + r_event("response.function_call_arguments.done", output_index=0, arguments='{"a": "right"}')
        + r_event("response.output_item.done", output_index=0, item={**item, "arguments": '{"a": "right"}'})
        + r_event("response.completed", response={"id": "r", "status": "completed"})
    )
    async with LoopbackServer([Reply(body)]) as server:
        _, final = await collect(model(server.url, RESPONSES), fast())
    assert final["content"][0]["arguments"] == {"a": "right"}


async def test_responses_failed_event() -> None:
    failed = {
        "id": "r",
        "status": "failed",
        "error": {"code": "server_error", "message": "The model crashed"},
    }
    body = R_TEXT[: R_TEXT.index(b"event: response.completed")] + r_event("response.failed", response=failed)
    async with LoopbackServer([Reply(body)]) as server:
        events, final = await collect(model(server.url, RESPONSES), fast())
    assert final["stopReason"] == "error"
    assert final["errorMessage"] == "server_error: The model crashed"
    assert final["content"][0]["text"] == "Hello"
    assert events[-1]["type"] == "error"


async def test_responses_error_event() -> None:
    body = R_TEXT[: R_TEXT.index(b"event: response.output_item.done")] + sse(
        {"type": "error", "code": "rate_limit_exceeded", "message": "Slow down"}, "error"
    )
    async with LoopbackServer([Reply(body)]) as server:
        _, final = await collect(model(server.url, RESPONSES), fast())
    assert final["errorMessage"] == "Error Code rate_limit_exceeded: Slow down"  # pi-ai's wording
    assert final["content"] == [{"type": "text", "text": "Hello"}]


@pytest.mark.parametrize(
    ("error", "text"),
    [
        ({"type": "server_error", "message": "Upstream gave up"}, "Upstream gave up"),
        ({"code": 502}, '{"code":502}'),
    ],
)
async def test_responses_payload_with_error_key_ends_the_stream(error: dict[str, object], text: str) -> None:
    """Any event whose data carries a truthy ``error`` ends the stream (the SDK raises on it)."""
    body = R_TEXT[: R_TEXT.index(b"event: response.output_item.done")] + sse(
        {"type": "response.output_text.delta", "error": error}, "response.output_text.delta"
    )
    async with LoopbackServer([Reply(body)]) as server:
        events, final = await collect(model(server.url, RESPONSES), fast())
    assert (final["stopReason"], final["errorMessage"]) == ("error", text)
    assert final["content"] == [{"type": "text", "text": "Hello"}]
    assert events[-1]["type"] == "error"


async def test_responses_incomplete_is_length() -> None:
    async with LoopbackServer([Reply(r_text_body(["Hel", "lo"], status="incomplete"))]) as server:
        _, final = await collect(model(server.url, RESPONSES), fast())
    assert final["stopReason"] == "length"


@pytest.mark.parametrize(
    ("tier", "factor"), [("flex", 0.5), ("priority", 2.0), ("default", 1.0), ("auto", 1.0)]
)
async def test_responses_usage_and_service_tier_pricing(tier: str, factor: float) -> None:
    async with LoopbackServer([Reply(r_text_body(["Hi"], tier=tier))]) as server:
        _, final = await collect(model(server.url, RESPONSES), fast(service_tier="flex"))
    usage = final["usage"]
    assert (usage["input"], usage["cacheRead"], usage["output"], usage["totalTokens"]) == (6, 4, 6, 16)
    assert usage["reasoningTokens"] == 2
    assert usage["cost"]["input"] == pytest.approx(6 * 1e-6 * factor, abs=1e-15)
    assert usage["cost"]["output"] == pytest.approx(6 * 2e-6 * factor, abs=1e-15)
    assert usage["cost"]["total"] == pytest.approx(18e-6 * factor, abs=1e-15)
    # The tier we asked for went out; the one the response reports sets the price.
    assert json.loads(server.requests[0].body)["service_tier"] == "flex"


async def test_responses_refusal_is_text() -> None:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    done = {**message, "content": [{"type": "refusal", "refusal": "I can't help with that."}]}
    body = (
        r_event("response.output_item.added", output_index=0, item=message)
        + r_event("response.refusal.delta", output_index=0, delta="I can't help with that.")
        + r_event("response.output_item.done", output_index=0, item=done)
        + r_event("response.completed", response={"id": "r", "status": "completed"})
    )
    async with LoopbackServer([Reply(body)]) as server:
        _, final = await collect(model(server.url, RESPONSES), fast())
    assert final["content"][0]["text"] == "I can't help with that."
    assert final["stopReason"] == "stop"


# -- in-stream failures: gemini ------------------------------------------------------------------


async def test_gemini_safety_finish_is_an_error_naming_the_reason() -> None:
    body = g_chunk([{"text": "Sure, here"}]) + g_chunk([], "SAFETY")
    async with LoopbackServer([Reply(body)]) as server:
        _, final = await collect(model(server.url, GEMINI), fast())
    assert final["stopReason"] == "error"
    assert final["errorMessage"] == "Gemini stopped the response: finishReason SAFETY"
    assert final["content"][0]["text"] == "Sure, here"


async def test_gemini_max_tokens_is_length() -> None:
    async with LoopbackServer([Reply(g_chunk([{"text": "a"}], "MAX_TOKENS"))]) as server:
        _, final = await collect(model(server.url, GEMINI), fast())
    assert final["stopReason"] == "length"


async def test_gemini_blocked_prompt() -> None:
    body = b'data: {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "responseId": "g"}\r\n\r\n'
    async with LoopbackServer([Reply(body)]) as server:
        events, final = await collect(model(server.url, GEMINI), fast())
    assert [e["type"] for e in events] == ["start", "error"]
    assert final["errorMessage"] == "Gemini blocked the prompt: PROHIBITED_CONTENT"


async def test_gemini_error_chunk() -> None:
    error = b'data: {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}\r\n\r\n'
    async with LoopbackServer([Reply(g_chunk([{"text": "Hel"}]) + error)]) as server:
        _, final = await collect(model(server.url, GEMINI), fast())
    assert final["errorMessage"] == "UNAVAILABLE: The model is overloaded."
    assert final["content"] == [{"type": "text", "text": "Hel"}]


async def test_gemini_duplicate_and_missing_call_ids_are_made_unique() -> None:
    call = {"functionCall": {"name": "f", "args": {"x": 1}, "id": "same"}}
    body = g_chunk([call, call, {"functionCall": {"name": "g", "args": {}}}], "STOP")
    async with LoopbackServer([Reply(body)]) as server:
        _, final = await collect(model(server.url, GEMINI), fast())
    ids = [b["id"] for b in final["content"]]
    assert ids[0] == "same" and len(set(ids)) == 3 and all(ids)
    assert final["stopReason"] == "toolUse"


# -- aborts (both APIs) ----------------------------------------------------------------------------

LONG = {
    RESPONSES: r_text_body([f"w{i} " for i in range(40)]),
    GEMINI: b"".join(g_chunk([{"text": f"w{i} "}]) for i in range(40)) + g_chunk([], "STOP"),
}


def event_ends(body: bytes) -> list[int]:
    """Offsets just past each SSE event of ``body``."""
    ends, at = [], 0
    while True:
        found = [(body.find(sep, at), sep) for sep in (b"\r\n\r\n", b"\n\n")]
        found = [(i, sep) for i, sep in found if i >= 0]
        if not found:
            return ends
        i, sep = min(found)
        at = i + len(sep)
        ends.append(at)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(api=st.sampled_from([RESPONSES, GEMINI]), after=st.integers(0, 45), stride=st.integers(1, 3))
async def test_abort_after_any_number_of_events(api: str, after: int, stride: int) -> None:
    """The server writes ``stride`` SSE events at a time; the driver parses what one read brings,
    so after an abort at most the rest of that read is delivered, then ``error``/``aborted``."""
    controller = AbortController()
    body = LONG[api]
    cuts = event_ends(body)[stride - 1 :: stride]
    async with LoopbackServer([Reply(body, chunks=cuts, delay=0.0005)]) as server:
        events_stream = stream(model(server.url, api), CONTEXT, fast(signal=controller.signal))
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
    if after == 0:
        assert [e["type"] for e in events] == ["error"]
    if final["stopReason"] == "aborted":
        assert final["errorMessage"] == "Request was aborted"
        # Each SSE event gives at most two events (block start + delta); a read may hold a
        # couple of writes when the client lags.
        assert len(events) - max(after, 1) <= 2 * 2 * stride + 1
    else:
        assert final["stopReason"] == "stop"


@both
async def test_abort_while_blocked_on_the_network_is_prompt(api: str) -> None:
    controller = AbortController()
    body = LONG[api]
    first = after_event(body, b"w0 ")
    async with LoopbackServer([Reply(body, chunks=[first], delay=30)]) as server:
        events_stream = stream(model(server.url, api), CONTEXT, fast(signal=controller.signal))
        async for event in events_stream:
            if event["type"] == "text_delta":
                asyncio.get_running_loop().call_later(0.05, controller.abort)
        final = await asyncio.wait_for(events_stream.result(), timeout=10)
    assert final["stopReason"] == "aborted"
    assert final["content"] == [{"type": "text", "text": "w0 "}]


async def test_responses_items_without_output_index_or_announcement() -> None:
    """A message streamed without output_index, and a call that only arrives as output_item.done."""
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": '{"a": 1}'}
    body = (
        r_event("response.output_item.added", item=message)
        + r_event("response.output_text.delta", delta="Hi")
        + r_event(
            "response.output_item.done", item={**message, "content": [{"type": "output_text", "text": "Hi"}]}
        )
        + r_event("response.output_item.done", output_index=1, item=call)
        + r_event("response.completed", response={"id": "r", "status": "completed"})
    )
    async with LoopbackServer([Reply(body)]) as server:
        events, final = await collect(model(server.url, RESPONSES), fast())
    assert [e["type"] for e in events] == [
        "start",
        "text_start",
        "text_delta",
        "text_end",
        "toolcall_start",
        "toolcall_end",
        "done",
    ]
    assert final["content"][0]["text"] == "Hi"
    assert final["content"][1]["id"] == "call_1|fc_1" and final["content"][1]["arguments"] == {"a": 1}
    assert final["stopReason"] == "toolUse"
