"""How a provider is built: a request builder, a pure stream parser, and this shared driver.

Every HTTP provider follows the same pattern (``providers/openai_completions.py`` and
``providers/anthropic.py`` are the worked examples):

1. **Request builder**: a plain function ``(model, context, options, api_key) -> HttpRequest``
   that maps our transcript to the API's JSON body, URL and headers. Pure, unit-testable.
2. **Parser**: a ``StreamParser`` subclass, a small state machine over the partial
   ``AssistantMessage``. ``feed(event, data)`` receives each SSE event's name and its decoded
   JSON and returns the events it causes (``text_delta``, ``toolcall_end``, ...; or a terminal
   ``error`` for an in-stream error); ``end()`` runs when the body ends (or at ``[DONE]``) and
   returns the closing events plus exactly one terminal ``done``/``error``. Parsers never do I/O,
   never emit ``start`` and never raise on provider data they do not understand: they skip it.
3. **Driver** (``stream_http`` here): resolves the key, sends the request through ``transport``
   (retries, readable HTTP errors), emits ``start``, decodes SSE with ``sse.SSEDecoder``, feeds
   the parser, and stamps the timing fields (``ttft``, ``duration``, ``completedAt``). A
   connection failure before the parser emitted anything is retried like an HTTP 5xx; after
   that it ends the stream as ``error`` with the content so far. Abort is checked between reads.

A provider module then exposes ``stream_<api>(model, context, options)`` built on
``stream_http`` and registers it with ``registry.register_provider``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2

from tether.ai.abort import AbortSignal
from tether.ai.event_stream import (
    ABORTED_MESSAGE,
    AssistantMessageEventStream,
    error_event,
    new_assistant_message,
)
from tether.ai.keys import is_keyless, missing_key_message, resolve_api_key
from tether.ai.sse import SSEDecoder
from tether.ai.transport import HttpRequest, RequestFailed, open_stream, retry_delay
from tether.ai.types import StreamOptions
from tether.wire import AssistantMessage, AssistantMessageEvent, ModelInfo

DONE_MARKER = "[DONE]"

RequestBuilder = Callable[[str | None], HttpRequest]
"""Given the resolved API key (``None`` for keyless servers), build the request."""


class StreamParser:
    """Base of a provider's stream state machine over ``self.output``."""

    def __init__(self, model: ModelInfo, output: AssistantMessage) -> None:
        self.model = model
        self.output = output

    def feed(self, event: str, data: Any) -> list[AssistantMessageEvent]:
        """One SSE event (``event`` name, JSON-decoded ``data``) → the events it causes."""
        raise NotImplementedError

    def end(self) -> list[AssistantMessageEvent]:
        """The body ended: close open blocks; the last event returned is the terminal one."""
        raise NotImplementedError

    def fail(self, message: str, *, aborted: bool = False) -> list[AssistantMessageEvent]:
        """End as ``error`` keeping the content so far (open blocks stay open, as pi-ai does)."""
        return [error_event(self.output, message, aborted=aborted)]


ParserFactory = Callable[[ModelInfo, AssistantMessage], StreamParser]


def failed_stream(model: ModelInfo, message: str, status: int | None = None) -> AssistantMessageEventStream:
    """A stream that is only an ``error`` event (a request that never started)."""
    output = new_assistant_message(model)
    output["stopReason"] = "error"
    output["errorMessage"] = message
    if status is not None:
        output["errorStatus"] = status
    return AssistantMessageEventStream.of_message(model, output)


def stream_http(
    model: ModelInfo,
    options: StreamOptions,
    build_request: RequestBuilder,
    make_parser: ParserFactory,
) -> AssistantMessageEventStream:
    """Run one streamed HTTP request through ``make_parser``: the provider-independent part."""
    key = resolve_api_key(model, options.api_key)
    if key is None and not is_keyless(model):
        return failed_stream(model, missing_key_message(model))
    try:
        request = build_request(key.value if key else None)
    except (ValueError, TypeError, KeyError) as exc:
        return failed_stream(model, f"Could not build the request: {exc}")
    output = new_assistant_message(model)
    source = _drive(model, options, request, make_parser, output)
    return AssistantMessageEventStream(model, source, options.signal)


async def _drive(
    model: ModelInfo,
    options: StreamOptions,
    request: HttpRequest,
    make_parser: ParserFactory,
    output: AssistantMessage,
) -> AsyncIterator[AssistantMessageEvent]:
    signal = options.signal
    started = time.monotonic()
    clock = _Clock(output, started)
    attempt = 0
    sent_start = False
    while True:
        if signal is not None and signal.aborted:
            yield clock.stamp(error_event(output, ABORTED_MESSAGE, aborted=True))
            return
        response = await open_stream(request, options)
        if isinstance(response, RequestFailed):
            if response.status is not None:
                output["errorStatus"] = response.status
            yield clock.stamp(error_event(output, response.message))
            return
        if not sent_start:
            sent_start = True
            yield {"type": "start", "partial": output}
        parser = make_parser(model, output)
        try:
            async for event in _parse_body(response, parser, signal, clock):
                yield event
            return
        except _RetryableReadError as failure:
            delay = retry_delay(failure.failure, attempt, options)
            if isinstance(delay, RequestFailed):
                yield clock.stamp(error_event(output, delay.message))
                return
            attempt += 1
            await asyncio.sleep(delay)
        finally:
            await response.aclose()


class _RetryableReadError(Exception):
    def __init__(self, failure: RequestFailed) -> None:
        self.failure = failure


async def _parse_body(
    response: httpx2.Response, parser: StreamParser, signal: AbortSignal | None, clock: _Clock
) -> AsyncIterator[AssistantMessageEvent]:
    decoder = SSEDecoder()
    chunks = response.aiter_bytes()
    emitted = False
    finished = False
    while not finished:
        try:
            chunk = await anext(chunks)
        except StopAsyncIteration:
            batch = decoder.flush()
            finished = True
        except httpx2.HTTPError as exc:
            message = f"Connection lost while streaming: {exc or type(exc).__name__}"
            if not emitted:
                raise _RetryableReadError(RequestFailed(message, retryable=True)) from exc
            yield clock.stamp(parser.fail(message)[-1])
            return
        else:
            if signal is not None and signal.aborted:
                yield clock.stamp(parser.fail(ABORTED_MESSAGE, aborted=True)[-1])
                return
            batch = decoder.feed(chunk)
        for sse in batch:
            events = _handle(parser, sse.event, sse.data)
            if events is None:  # [DONE]: whatever follows is not part of the answer
                finished = True
                break
            for event in events:
                emitted = True
                if event["type"] == "done" or event["type"] == "error":
                    yield clock.stamp(event)
                    return
                yield clock.first(event)
    for event in parser.end():
        if event["type"] == "done" or event["type"] == "error":
            yield clock.stamp(event)
            return
        yield clock.first(event)


def _handle(parser: StreamParser, event: str, data: str) -> list[AssistantMessageEvent] | None:
    """Decode one SSE event for ``parser``; ``None`` means the ``[DONE]`` marker."""
    if not data:
        return []
    if data == DONE_MARKER:
        return None
    try:
        payload = json.loads(data)
    except ValueError:
        snippet = data if len(data) <= 200 else data[:200] + "…"
        return parser.fail(f"Invalid JSON in the {parser.model['api']} stream: {snippet}")
    return parser.feed(event, payload)


class _Clock:
    """Stamps ``ttft`` on the first content event and ``duration``/``completedAt`` at the end."""

    __slots__ = ("_output", "_seen", "_started")

    def __init__(self, output: AssistantMessage, started: float) -> None:
        self._output = output
        self._started = started
        self._seen = False

    def first(self, event: AssistantMessageEvent) -> AssistantMessageEvent:
        if not self._seen:
            self._seen = True
            self._output["ttft"] = round((time.monotonic() - self._started) * 1000)
        return event

    def stamp(self, event: AssistantMessageEvent) -> AssistantMessageEvent:
        message = event["message"] if event["type"] == "done" else event.get("error")
        if isinstance(message, dict):
            message["duration"] = round((time.monotonic() - self._started) * 1000)
            message["completedAt"] = int(time.time() * 1000)
        return event
