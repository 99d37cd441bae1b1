"""How a provider is built: a request builder, a pure stream parser, and this shared driver.

Every HTTP provider follows the same pattern (``providers/openai_completions.py`` and
``providers/anthropic.py`` are the worked examples):

1. **Request builder**: a plain function ``(model, context, options, api_key) -> HttpRequest``
   that maps our transcript to the API's JSON body, URL and headers. Pure, unit-testable.
   Outgoing text goes through ``sanitize.strip_surrogates``.
2. **Parser**: a ``StreamParser`` subclass, a mapping from the API's stream events to the calls
   of its ``self.parts`` (a ``message_builder.MessageBuilder``, which opens, grows and closes
   the content blocks of the partial ``AssistantMessage`` and makes their events), plus the
   message's own fields (ids, usage, stop reason). ``feed(event, data)`` receives each SSE
   event's name and its decoded JSON and returns the events it causes (``text_delta``,
   ``toolcall_end``, ...; or a terminal ``error`` for an in-stream error, via ``fail``);
   ``end()`` runs when the body ends (or at ``[DONE]``) and returns the closing events plus
   exactly one terminal ``done``/``error``. Parsers never do I/O, never emit ``start`` and never
   raise on provider data they do not understand: they skip it (``jsonish.as_dict`` and
   friends read a field of the wrong shape as absent). Price usage with
   ``usage.set_usage``/``calculate_cost`` (in ``settle()``, once per network read, when the
   API repeats usage on every chunk).
3. **Driver** (``stream_http`` here): resolves the key, sends the request through ``transport``
   (retries, readable HTTP errors), emits ``start``, decodes SSE with ``sse.SSEDecoder``, feeds
   the parser, and stamps the timing fields (``ttft``, ``duration``, ``completedAt``). A
   connection failure, or an in-stream error the parser marks ``retryable``, before the parser
   emitted anything is retried like an HTTP 5xx; after that it ends the stream as ``error``
   with the content so far. Events go to the consumer in one batch per network read (see
   ``event_stream``); abort is checked between reads and interrupts a wait for one.

A provider module then exposes ``stream_<api>`` and ``stream_simple_<api>`` built on
``stream_http``, wraps them in ``PROVIDER = api_provider.ApiProvider(...)`` (with ``max_tools``
when the API documents how many tools a request may declare), and is listed in
``providers.BUILTIN``. Its fixtures replay through ``python -m tether.testing.replay`` once
``testing.replay.ENDPOINTS`` knows the path it appends to ``baseUrl``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any, cast

import httpx2
import jiter

from tether.ai.abort import AbortSignal
from tether.ai.event_stream import (
    ABORTED_MESSAGE,
    AssistantMessageEventStream,
    error_event,
    new_assistant_message,
)
from tether.ai.idle_watch import IdleWatch
from tether.ai.keys import is_keyless, missing_key_message, resolve_api_key
from tether.ai.message_builder import MessageBuilder
from tether.ai.retry import RequestFailed, retry_delay
from tether.ai.sse import EventTooLarge, SSEDecoder
from tether.ai.transport import (
    EncodedRequest,
    HttpRequest,
    encode_request,
    provider_error_text,
    send,
    sent_without_secrets,
)
from tether.ai.types import Retry, StreamOptions
from tether.wire import AssistantMessage, AssistantMessageEvent, ModelInfo

DONE_MARKER = "[DONE]"
# How long and how much ``_finish_body`` reads after ``[DONE]`` to keep the connection alive.
_DRAIN_SECONDS = 0.25
_DRAIN_BYTES = 64 * 1024

RequestBuilder = Callable[[str | None], HttpRequest]
"""Given the resolved API key (``None`` for keyless servers), build the request."""


class StreamParser:
    """Base of a provider's stream state machine over ``self.output``."""

    def __init__(self, model: ModelInfo, output: AssistantMessage) -> None:
        self.model = model
        self.output = output
        self.parts = MessageBuilder(output)
        """Opens, grows and closes the content blocks, and makes their events."""
        self.retryable = False
        """Set with an in-stream error that waiting may fix (overloaded, rate limit, server error)."""
        self.done_marker = False
        """Set by the driver before ``end()`` when the body said ``[DONE]`` (a complete answer)."""

    def feed(self, event: str, data: Any) -> list[AssistantMessageEvent]:
        """One SSE event (``event`` name, JSON-decoded ``data``) → the events it causes."""
        raise NotImplementedError

    def end(self) -> list[AssistantMessageEvent]:
        """The body ended: close open blocks; the last event returned is the terminal one."""
        raise NotImplementedError

    def settle(self) -> None:
        """Bring fields derived from the chunks so far up to date; the default has none.

        The driver calls it once per network read, after that read's events (and before they
        reach the consumer), the terminal ones included. The consumer only sees the partial
        message between reads, so work deferred to here (e.g. pricing usage that changes on
        every chunk) is invisible to it, and is done once per read instead of once per chunk.
        """

    def feed_text(self, event: str, data: str) -> list[AssistantMessageEvent] | None:
        """An SSE event before its data is decoded as JSON; ``None`` (the default) lets ``feed``
        have it. For events the reference reports verbatim, such as Anthropic's ``error``."""
        return None

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
        request = encode_request(build_request(key.value if key else None))
    except (ValueError, TypeError, KeyError) as exc:
        return failed_stream(model, f"Could not build the request: {exc}")
    output = new_assistant_message(model)
    source = _drive(model, options, request, make_parser, output)
    return AssistantMessageEventStream(model, source, options.signal)


async def _drive(
    model: ModelInfo,
    options: StreamOptions,
    request: EncodedRequest,
    make_parser: ParserFactory,
    output: AssistantMessage,
) -> AsyncIterator[AssistantMessageEvent | list[AssistantMessageEvent]]:
    signal = options.signal
    clock = _Clock(output, time.monotonic())
    attempt = 0
    sent_start = False
    idle, connect = _timeouts(model, options)
    watch = None if idle is None else IdleWatch(asyncio.get_running_loop(), idle)
    while True:
        if signal is not None and signal.aborted:
            yield clock.stamp(error_event(output, ABORTED_MESSAGE, aborted=True))
            return
        try:
            response = await send(request, options, provider=model["provider"], watch=watch, connect=connect)
        except BaseException:  # cancelled: the timer must not outlive the request
            if watch is not None:
                watch.close()
            raise
        if isinstance(response, RequestFailed):
            if watch is not None:
                watch.close()  # a retry's wait sets it again
            delay = retry_delay(response, attempt, options)
            if isinstance(delay, RequestFailed):
                if delay.status is not None:
                    output["errorStatus"] = delay.status
                yield clock.stamp(error_event(output, delay.message))
                return
            attempt += 1
            _tell_retry(options, attempt, delay, response)
            if not await _wait_to_retry(delay, options):
                yield clock.stamp(error_event(output, response.message))
                return
            continue
        if not sent_start:
            sent_start = True
            yield {"type": "start", "partial": output}
        parser = make_parser(model, output)
        chunks = response.aiter_bytes()
        batches = _event_batches(chunks, parser, signal, watch, response)
        final_batch: list[AssistantMessageEvent] | None = None
        retry: RequestFailed | None = None
        after_done = False
        try:
            async for batch in batches:
                if not batch:
                    continue
                clock.first()
                parser.settle()
                last = batch[-1]["type"]
                if last == "done" or last == "error":
                    final_batch = batch
                    after_done = parser.done_marker
                    break
                yield batch
        except _RetryableReadError as failure:
            retry = failure.failure
            retry.message = sent_without_secrets(retry.message, response)
        finally:
            # Close explicitly, innermost first: a suspended generator left to the garbage
            # collector would be finalized later, outside this task.
            await batches.aclose()
            if not after_done:
                await chunks.aclose()
                await response.aclose()
        if final_batch is not None:
            if final_batch[-1]["type"] == "error" and "errorMessage" in output:
                output["errorMessage"] = sent_without_secrets(output["errorMessage"], response)
            clock.stamp(final_batch[-1])
            if not after_done:
                yield final_batch
                return
            try:
                yield final_batch
            finally:  # runs when the consumer closes us on the terminal event
                await _finish_body(chunks, response)
            return
        if retry is None:  # pragma: no cover - _event_batches always ends with a terminal event
            yield clock.stamp(error_event(output, "The stream ended without a final event"))
            return
        delay = retry_delay(retry, attempt, options)  # one retry budget for both kinds of failure
        if isinstance(delay, RequestFailed):
            yield clock.stamp(error_event(output, delay.message))
            return
        attempt += 1
        _tell_retry(options, attempt, delay, retry)
        _reset(output, model)  # nothing was shown: start the attempt afresh, in the same object
        if not await _wait_to_retry(delay, options):
            yield clock.stamp(error_event(output, retry.message))
            return


async def _finish_body(chunks: AsyncGenerator[bytes, None], response: httpx2.Response) -> None:
    """Read what follows ``[DONE]`` (usually just the end of the body), then close.

    Only a response read to its end returns its connection to the pool; one closed early is
    dropped, and the next request pays a new TCP (and TLS) handshake. The read is bounded in
    time and bytes, so a server that keeps the body open costs a connection, not a hang. It
    runs after the terminal event is stamped, so it never counts in ``duration``.
    """
    try:
        async with asyncio.timeout(_DRAIN_SECONDS):
            drained = 0
            async for chunk in chunks:
                drained += len(chunk)
                if drained > _DRAIN_BYTES:
                    break
    except (TimeoutError, httpx2.HTTPError):
        pass  # the connection is dropped by the close below instead of reused
    finally:
        await chunks.aclose()
        await response.aclose()


async def _wait_to_retry(delay: float, options: StreamOptions) -> bool:
    """Sleep before a retry; ``False`` when ``options.retry_signal`` cancelled the retry."""
    cancel = options.retry_signal
    if cancel is None:
        await asyncio.sleep(delay)
        return True
    if cancel.aborted:
        return False
    try:
        await asyncio.wait_for(cancel.wait(), delay)
    except TimeoutError:
        return True
    return False


def _tell_retry(options: StreamOptions, attempt: int, delay: float, failure: RequestFailed) -> None:
    if options.on_retry is not None:
        options.on_retry(Retry(attempt, delay, failure.message, failure.status))


def _reset(output: AssistantMessage, model: ModelInfo) -> None:
    raw = cast("dict[str, Any]", output)  # TypedDicts have no clear(); the object must stay the same
    timestamp = raw["timestamp"]
    raw.clear()
    raw.update(new_assistant_message(model))
    raw["timestamp"] = timestamp


def _timeouts(model: ModelInfo, options: StreamOptions) -> tuple[float | None, float | None]:
    """The idle timeout (the provider's own ``streamIdleTimeoutMs`` in ``models.json`` over the
    options' value; ``None``: no limit) and the provider's own ``connectTimeoutMs`` (``None``:
    the options' ``connect_timeout``)."""
    from tether.ai.models import stream_timeouts_of  # the registry loads when a stream starts, as in keys

    configured, connect = stream_timeouts_of(model["provider"])
    idle = configured if configured is not None else options.idle_timeout
    return idle or None, connect  # idle 0: no limit


class _RetryableReadError(Exception):
    def __init__(self, failure: RequestFailed) -> None:
        self.failure = failure


async def _event_batches(
    chunks: AsyncIterator[bytes],
    parser: StreamParser,
    signal: AbortSignal | None,
    watch: IdleWatch | None,
    response: httpx2.Response,
) -> AsyncGenerator[list[AssistantMessageEvent], None]:
    """Body bytes → the parser's events, one list per network read; the last list ends terminal.

    Batching per read (not per event) keeps generator hops off the per-event cost. Abort is
    checked before SSE events reach the parser, and every event the parser produced is
    delivered: the content a consumer has seen is always the final message's content. So an
    abort takes effect at the next network read (at once while waiting for one: the event stream
    cancels that wait), after the rest of the current read's events.

    A read failure before the parser produced any event raises ``_RetryableReadError`` (nothing
    was shown, so the request can be repeated); after that it ends the stream as ``error``. So
    does a body that sends nothing for ``watch.idle`` seconds (a stalled server), with a message
    the session's retry recognises as transient (``watch``: the request's idle timeout, from the
    wait for its headers on; closed here). Only a read that gives the consumer events, or
    brings part of an event, counts: SSE comments (``: ping``) and events that carry nothing
    (Anthropic's ``ping``) do not, so a server stuck behind a proxy's keep-alive, or pinging while
    its backend stalls, ends too instead of holding the run forever. Part of an event counts
    only within ``TRICKLE_IDLES`` idle timeouts of the last events given (``IdleWatch.span``).
    A body without a single SSE event (an HTML page from a proxy or a wrong ``baseUrl``) ends
    with what did arrive: the ``response``'s status and content type and the body's first line.
    """
    decoder = SSEDecoder()
    # Asked once here, not for each event: whether the parser reads some events before decoding.
    verbatim = parser.feed_text if type(parser).feed_text is not StreamParser.feed_text else None
    emitted = False
    any_event = False
    head = b""
    if watch is not None:
        watch.restart()  # the headers came: the body's silences count from here
    try:
        while True:
            try:
                if watch is not None:
                    watch.reading()
                try:
                    chunk = await anext(chunks)
                finally:
                    if watch is not None:
                        watch.task = None
            except asyncio.CancelledError:
                if watch is None or not watch.expired():
                    raise
                provider = parser.model["provider"]
                if watch.trickled_out():
                    message = (
                        f"Nothing complete from {provider} for {watch.span:g} s, only part of an event "
                        "trickling in (stream idle timeout)"
                    )
                else:
                    message = f"No data from {provider} for {watch.idle:g} s (stream idle timeout)"
                if not emitted:
                    raise _RetryableReadError(RequestFailed(message, retryable=True)) from None
                yield parser.fail(message)
                return
            except StopAsyncIteration:
                sse_events = decoder.flush()
                ended = True
            except httpx2.DecodingError as exc:  # the same bytes would come again: not retried
                yield parser.fail(f"Could not decode the response body ({_arrived(response)}): {exc}")
                return
            except httpx2.HTTPError as exc:
                message = f"Connection lost while streaming: {str(exc) or type(exc).__name__}"
                if not emitted:
                    raise _RetryableReadError(RequestFailed(message, retryable=True)) from exc
                yield parser.fail(message)
                return
            else:
                if len(head) < _HEAD_BYTES:
                    head += chunk[: _HEAD_BYTES - len(head)]
                try:
                    sse_events = decoder.feed(chunk)
                except EventTooLarge as exc:  # a server sending one line without end
                    yield parser.fail(f"The {parser.model['api']} stream was cut off: {exc}")
                    return
                ended = False
            any_event = any_event or bool(sse_events)
            out: list[AssistantMessageEvent] = []
            for sse in sse_events:
                if signal is not None and signal.aborted:
                    out += parser.fail(ABORTED_MESSAGE, aborted=True)
                    yield out
                    return
                # Each event's decoding, written out: the per-chunk path of every provider.
                data = sse.data
                if not data:
                    continue
                if data == DONE_MARKER:  # whatever follows is not part of the answer
                    parser.done_marker = True
                    ended = True
                    break
                events = None if verbatim is None else verbatim(sse.event, data)
                if events is None:
                    try:
                        payload = jiter.from_json(data.encode())
                    except ValueError:
                        events = _lenient(parser, sse.event, data, response)
                    else:
                        events = parser.feed(sse.event, payload)
                if events:
                    last = events[-1]["type"]
                    if last == "error" and parser.retryable and not emitted and not out and len(events) == 1:
                        # e.g. Anthropic's overloaded_error before any content: like an HTTP 529.
                        message = events[0].get("error", {}).get("errorMessage") or "Provider error"
                        raise _RetryableReadError(RequestFailed(message, retryable=True))
                    out += events
                    if last == "done" or last == "error":
                        yield out
                        return
            if ended:
                if signal is not None and signal.aborted:
                    out += parser.fail(ABORTED_MESSAGE, aborted=True)
                elif not any_event:
                    out += parser.fail(_not_a_stream(response, head))
                else:
                    out += parser.end()
                yield out
                return
            if watch is not None:
                if out:
                    watch.restart()
                elif decoder.midway():  # bytes of an event still arriving
                    watch.trickled()
            if out:
                emitted = True
                yield out
    finally:
        if watch is not None:
            watch.close()


_HEAD_BYTES = 512
"""Body bytes kept to describe a reply that was not an event stream."""


def _arrived(response: httpx2.Response) -> str:
    """A response's status and content type, for a message saying what came instead of events
    (read only then: a lookup in httpx's headers decodes and compares every one of them)."""
    return f"HTTP {response.status_code}, {response.headers.get('content-type') or 'no content type'}"


def _not_a_stream(response: httpx2.Response, head: bytes) -> str:
    """What came instead of an event stream, e.g. an HTML error page served with status 200, or
    a JSON error (a gateway answering a stream request with its error object): its message. The
    body's start (``head``) is cleaned of the credentials before any cut: a key the cut split
    would keep its first part."""
    arrived = _arrived(response)
    text = sent_without_secrets(head.decode("utf-8", "replace"), response)
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if not first:
        return f"The response had no events: {arrived}, empty body"
    if first[0] in "{[" and len(head) < _HEAD_BYTES:
        return f"The response was not an event stream: {arrived}: {provider_error_text(text)}"
    shown = first if len(first) <= 120 else first[:120] + "…"
    return f"The response was not an event stream: {arrived}, first line: {shown}"


def _lenient(
    parser: StreamParser, event: str, data: str, response: httpx2.Response
) -> list[AssistantMessageEvent]:
    """An event's data that ``jiter`` rejected, for ``parser``: decoded by the ``json`` module,
    which accepts lone surrogates (``"\\ud83d"``), else the stream fails naming it (cleaned of
    the credentials before the cut, which could split a key)."""
    try:
        payload = json.loads(data)
    except ValueError:
        data = sent_without_secrets(data, response)
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

    def first(self) -> None:
        if not self._seen:
            self._seen = True
            self._output["ttft"] = round((time.monotonic() - self._started) * 1000)

    def stamp(self, event: AssistantMessageEvent) -> AssistantMessageEvent:
        message = event["message"] if event["type"] == "done" else event.get("error")
        if isinstance(message, dict):
            message["duration"] = round((time.monotonic() - self._started) * 1000)
            message["completedAt"] = int(time.time() * 1000)
        return event
