"""The fault-test harness shared by the provider tests: one small model per API, fast retry
options, a collector that checks the stream contract on every run, and per API one finished text
answer ("Hel" + "lo") in that API's own wire format, with the places the faults cut it."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any, cast

from streamcheck import APIS, check_invariants

from tether.ai import AbortController, StreamOptions, stream
from tether.ai.types import Context
from tether.testing.loopback import loopback_model
from tether.wire import AssistantMessage, AssistantMessageEvent, ModelInfo

CONTEXT: Context = {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]}
COMPLETIONS, ANTHROPIC, RESPONSES, GEMINI = APIS
PROVIDERS = {COMPLETIONS: "openai", ANTHROPIC: "anthropic", RESPONSES: "openai", GEMINI: "google"}


def model(url: str, api: str = COMPLETIONS, provider: str | None = None) -> ModelInfo:
    return loopback_model(
        url,
        api,
        provider=provider or PROVIDERS.get(api, "openai"),
        contextWindow=1000,
        cost={"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0},
    )


def fast(**overrides: Any) -> StreamOptions:
    """Real retry behaviour with millisecond back-off, so a test of four tries stays fast."""
    options = StreamOptions(api_key="k", retry_base_delay=0.001, max_retry_delay=5, timeout=10)
    for key, value in overrides.items():
        setattr(options, key, value)
    return options


async def collect(
    spec: ModelInfo, options: StreamOptions, abort: AbortController | None = None, after: int = 0
) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    """All events and the final message of one run, with the stream contract checked on it.

    With ``abort`` (whose signal ``options`` carries), the run is aborted before the first event
    (``after == 0``) or once ``after`` events have arrived."""
    events_stream = stream(spec, CONTEXT, options)
    events: list[AssistantMessageEvent] = []
    snapshots: list[Any] = []
    if abort is not None and after == 0:
        abort.abort()
    async for event in events_stream:
        events.append(event)
        # The partial is one object mutated in place; snapshot it to check it evolves sanely.
        snapshots.append(copy.deepcopy(cast("dict[str, Any]", event).get("partial")))
        if abort is not None and len(events) == after:
            abort.abort()
    final = await events_stream.result()
    check_invariants(events, snapshots, final)
    return events, final


# -- SSE bodies, one builder per wire format -------------------------------------------------------


def sse(payload: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + json.dumps(payload).encode() + b"\n\n"


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> bytes:
    """One openai-completions chunk."""
    body: dict[str, Any] = {
        "id": "r1",
        "model": "m",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }
    body.update(extra)
    return sse(body)


def a_event(kind: str, **fields: Any) -> bytes:
    """One anthropic-messages event."""
    return sse({"type": kind, **fields}, kind)


def r_event(kind: str, **fields: Any) -> bytes:
    """One openai-responses event."""
    return sse({"type": kind, **fields}, kind)


def g_chunk(parts: list[dict[str, Any]], finish: str | None = None, **extra: Any) -> bytes:
    """One google-generative-ai chunk (Gemini separates events with CRLF)."""
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


def completions_text(words: list[str]) -> bytes:
    first, *rest = words
    return (
        chunk({"role": "assistant", "content": first})
        + b"".join(chunk({"content": w}) for w in rest)
        + chunk(finish="stop")
        + b'data: {"id":"r1","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}\n\n'
        + b"data: [DONE]\n\n"
    )


def anthropic_text(words: list[str]) -> bytes:
    return (
        a_event("message_start", message={"id": "msg_1", "usage": {"input_tokens": 5}})
        + a_event("content_block_start", index=0, content_block={"type": "text", "text": ""})
        + b"".join(
            a_event("content_block_delta", index=0, delta={"type": "text_delta", "text": w}) for w in words
        )
        + a_event("content_block_stop", index=0)
        + a_event("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 2})
        + a_event("message_stop")
    )


def responses_text(words: list[str], status: str = "completed", tier: str = "default") -> bytes:
    message: dict[str, Any] = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    done_item = {**message, "content": [{"type": "output_text", "text": "".join(words)}]}
    response: dict[str, Any] = {
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


def gemini_text(words: list[str]) -> bytes:
    *head, last = words
    return b"".join(g_chunk([{"text": w}]) for w in head) + g_chunk([{"text": last}], "STOP")


@dataclass(frozen=True, slots=True)
class TextAnswer:
    """A complete "Hello" answer of one API and what its faults look like."""

    body: bytes
    response_id: str
    final_at: int
    """Offset of the ``data:`` line of the event that finishes the response."""
    unauthorized: tuple[bytes, str]
    """A 401 body as the service sends it, and the message it becomes."""
    key_variable: str
    unfinished: str = "The stream ended before the response was complete"
    """The error message when the body ends before the finishing event."""


def final_data_line(body: bytes, needle: bytes) -> int:
    """Offset of the ``data:`` line of the event that holds ``needle``."""
    return body.rindex(b"data:", 0, body.index(needle))


OPENAI_401 = (
    b'{"error":{"message":"Incorrect API key provided: k.","type":"invalid_request_error"}}',
    "401 Incorrect API key provided: k.",
)
ANTHROPIC_401 = (
    b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}',
    "401 invalid x-api-key",
)
GEMINI_401 = (
    b'[{"error":{"code":401,"message":"API key not valid. Please pass a valid API key.","status":"UNAUTHENTICATED"}}]',
    "401 API key not valid. Please pass a valid API key.",
)
_BODIES = {
    COMPLETIONS: completions_text(["Hel", "lo"]),
    ANTHROPIC: anthropic_text(["Hel", "lo"]),
    RESPONSES: responses_text(["Hel", "lo"]),
    GEMINI: gemini_text(["Hel", "lo"]),
}
TEXT = {
    COMPLETIONS: TextAnswer(
        _BODIES[COMPLETIONS],
        "r1",
        final_data_line(_BODIES[COMPLETIONS], b'"stop"'),
        OPENAI_401,
        "OPENAI_API_KEY",
    ),
    ANTHROPIC: TextAnswer(
        _BODIES[ANTHROPIC],
        "msg_1",
        final_data_line(_BODIES[ANTHROPIC], b'"message_stop"}'),
        ANTHROPIC_401,
        "ANTHROPIC_API_KEY",
        unfinished="Anthropic stream ended before message_stop",
    ),
    RESPONSES: TextAnswer(
        _BODIES[RESPONSES],
        "resp_1",
        final_data_line(_BODIES[RESPONSES], b'"response.completed"'),
        OPENAI_401,
        "OPENAI_API_KEY",
    ),
    GEMINI: TextAnswer(
        _BODIES[GEMINI], "g1", final_data_line(_BODIES[GEMINI], b'"STOP"'), GEMINI_401, "GEMINI_API_KEY"
    ),
}
# Forty one-word deltas: long enough to abort anywhere in the middle.
LONG = {
    COMPLETIONS: completions_text([f"w{i} " for i in range(40)]),
    ANTHROPIC: anthropic_text([f"w{i} " for i in range(40)]),
    RESPONSES: responses_text([f"w{i} " for i in range(40)]),
    GEMINI: b"".join(g_chunk([{"text": f"w{i} "}]) for i in range(40)) + g_chunk([], "STOP"),
}


def event_ends(body: bytes) -> list[int]:
    """Offsets just past each SSE event of ``body``."""
    ends: list[int] = []
    at = 0
    while True:
        found = [(i, sep) for sep in (b"\r\n\r\n", b"\n\n") if (i := body.find(sep, at)) >= 0]
        if not found:
            return ends
        i, sep = min(found)
        at = i + len(sep)
        ends.append(at)


def after_event(body: bytes, needle: bytes) -> int:
    """Offset just past the SSE event that contains ``needle``."""
    at = body.index(needle)
    return next(end for end in event_ends(body) if end > at)
