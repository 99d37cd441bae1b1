"""Fault injection for openai-responses and google-generative-ai on a loopback server: the
in-stream failures these two APIs have, beyond the faults every API shares
(test_stream_faults.py: 429 + Retry-After, 500 x4, 401, resets before/after the first token,
truncated body, malformed SSE, aborts at random points). Each ends in exactly one terminal
event, never a raise."""

from __future__ import annotations

import json
from typing import Any

import pytest
from faultkit import CONTEXT, GEMINI, RESPONSES, collect, fast, g_chunk, model, r_event, responses_text, sse

from narrowing import as_tool_call, block_text, error_text
from tether.ai import stream
from tether.testing.loopback import LoopbackServer, Reply

R_TEXT = responses_text(["Hel", "lo"])


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
    assert isinstance(as_tool_call(final["content"][0])["arguments"], dict)
    end = next(e for e in events if e["type"] == "toolcall_end")
    assert end["toolCall"]["id"] == "call_1|fc_1"


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
    assert as_tool_call(final["content"][0])["arguments"] == {"a": "right"}


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
    assert error_text(final) == "server_error: The model crashed"
    assert block_text(final["content"][0]) == "Hello"
    assert events[-1]["type"] == "error"


async def test_responses_error_event() -> None:
    body = R_TEXT[: R_TEXT.index(b"event: response.output_item.done")] + sse(
        {"type": "error", "code": "rate_limit_exceeded", "message": "Slow down"}, "error"
    )
    async with LoopbackServer([Reply(body)]) as server:
        _, final = await collect(model(server.url, RESPONSES), fast())
    assert error_text(final) == "Error Code rate_limit_exceeded: Slow down"  # pi-ai's wording
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
    assert (final["stopReason"], error_text(final)) == ("error", text)
    assert final["content"] == [{"type": "text", "text": "Hello"}]
    assert events[-1]["type"] == "error"


async def test_responses_incomplete_is_length() -> None:
    async with LoopbackServer([Reply(responses_text(["Hel", "lo"], status="incomplete"))]) as server:
        _, final = await collect(model(server.url, RESPONSES), fast())
    assert final["stopReason"] == "length"


@pytest.mark.parametrize(
    ("tier", "factor"), [("flex", 0.5), ("priority", 2.0), ("default", 1.0), ("auto", 1.0)]
)
async def test_responses_usage_and_service_tier_pricing(tier: str, factor: float) -> None:
    async with LoopbackServer([Reply(responses_text(["Hi"], tier=tier))]) as server:
        _, final = await collect(model(server.url, RESPONSES), fast(service_tier="flex"))
    usage = final["usage"]
    assert (usage["input"], usage["cacheRead"], usage["output"], usage["totalTokens"]) == (6, 4, 6, 16)
    assert usage.get("reasoningTokens") == 2
    assert usage["cost"]["input"] == pytest.approx(6 * 1e-6 * factor, abs=1e-15)
    assert usage["cost"]["output"] == pytest.approx(6 * 2e-6 * factor, abs=1e-15)
    assert usage["cost"]["total"] == pytest.approx(18e-6 * factor, abs=1e-15)
    # The tier we asked for went out; the one the response reports sets the price.
    assert json.loads(server.requests[0].body)["service_tier"] == "flex"


async def test_responses_refusal_is_text() -> None:
    message: dict[str, Any] = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    done = {**message, "content": [{"type": "refusal", "refusal": "I can't help with that."}]}
    body = (
        r_event("response.output_item.added", output_index=0, item=message)
        + r_event("response.refusal.delta", output_index=0, delta="I can't help with that.")
        + r_event("response.output_item.done", output_index=0, item=done)
        + r_event("response.completed", response={"id": "r", "status": "completed"})
    )
    async with LoopbackServer([Reply(body)]) as server:
        _, final = await collect(model(server.url, RESPONSES), fast())
    assert block_text(final["content"][0]) == "I can't help with that."
    assert final["stopReason"] == "stop"


# -- in-stream failures: gemini ------------------------------------------------------------------


async def test_gemini_safety_finish_is_an_error_naming_the_reason() -> None:
    body = g_chunk([{"text": "Sure, here"}]) + g_chunk([], "SAFETY")
    async with LoopbackServer([Reply(body)]) as server:
        _, final = await collect(model(server.url, GEMINI), fast())
    assert final["stopReason"] == "error"
    assert error_text(final) == "Gemini stopped the response: finishReason SAFETY"
    assert block_text(final["content"][0]) == "Sure, here"


async def test_gemini_max_tokens_is_length() -> None:
    async with LoopbackServer([Reply(g_chunk([{"text": "a"}], "MAX_TOKENS"))]) as server:
        _, final = await collect(model(server.url, GEMINI), fast())
    assert final["stopReason"] == "length"


async def test_gemini_blocked_prompt() -> None:
    body = b'data: {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "responseId": "g"}\r\n\r\n'
    async with LoopbackServer([Reply(body)]) as server:
        events, final = await collect(model(server.url, GEMINI), fast())
    assert [e["type"] for e in events] == ["start", "error"]
    assert error_text(final) == "Gemini blocked the prompt: PROHIBITED_CONTENT"


async def test_gemini_error_chunk() -> None:
    error = b'data: {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}\r\n\r\n'
    async with LoopbackServer([Reply(g_chunk([{"text": "Hel"}]) + error)]) as server:
        _, final = await collect(model(server.url, GEMINI), fast())
    assert error_text(final) == "UNAVAILABLE: The model is overloaded."
    assert final["content"] == [{"type": "text", "text": "Hel"}]


async def test_gemini_partial_usage_is_current_at_every_delivered_event() -> None:
    """Usage is priced once per network read rather than per chunk, before the read's events are
    delivered: a consumer sees the usage (and cost) of the chunk each event came from."""
    chunks = [
        g_chunk(
            [{"text": word}],
            "STOP" if n == 3 else None,
            usageMetadata={"promptTokenCount": 5, "candidatesTokenCount": n, "totalTokenCount": 5 + n},
        )
        for n, word in enumerate(["a", "b", "c"], 1)
    ]
    cuts = [sum(len(c) for c in chunks[: i + 1]) for i in range(len(chunks))]
    seen: list[tuple[str, int, float]] = []
    async with LoopbackServer([Reply(b"".join(chunks), chunks=cuts, delay=0.01)]) as server:
        async for event in stream(model(server.url, GEMINI), CONTEXT, fast()):
            if event["type"] == "text_delta":
                usage = event["partial"]["usage"]
                seen.append((event["delta"], usage["output"], usage["cost"]["output"]))
    assert seen == [("a", 1, 2e-6), ("b", 2, 4e-6), ("c", 3, 6e-6)]


async def test_gemini_duplicate_and_missing_call_ids_are_made_unique() -> None:
    call = {"functionCall": {"name": "f", "args": {"x": 1}, "id": "same"}}
    body = g_chunk([call, call, {"functionCall": {"name": "g", "args": {}}}], "STOP")
    async with LoopbackServer([Reply(body)]) as server:
        _, final = await collect(model(server.url, GEMINI), fast())
    ids = [as_tool_call(b)["id"] for b in final["content"]]
    assert ids[0] == "same" and len(set(ids)) == 3 and all(ids)
    assert final["stopReason"] == "toolUse"


async def test_responses_items_without_output_index_or_announcement() -> None:
    """A message streamed without output_index, and a call that only arrives as output_item.done."""
    message: dict[str, Any] = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
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
    assert block_text(final["content"][0]) == "Hi"
    call = as_tool_call(final["content"][1])
    assert call["id"] == "call_1|fc_1" and call["arguments"] == {"a": 1}
    assert final["stopReason"] == "toolUse"
