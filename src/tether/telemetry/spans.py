"""The spans and metrics of an instrumented run (imported only once a run is instrumented).

``RunTrace`` is one run: it opens ``invoke_agent {agent}`` (INTERNAL) and makes it the current
span for the run's task, so whatever the run's hooks, listeners and tools record nests under it.
The loop hands it three things:

- the stream function, which ``traced`` wraps: each model call gets a ``chat {model}`` span
  (CLIENT) from the request to its final message, with usage, cost, time to first chunk and one
  ``tether.retry`` event per repeated attempt (through ``StreamOptions.on_retry``);
- the run's events (``observe``): ``execute_tool {tool}`` spans (INTERNAL) open at
  ``tool_execution_start`` and end at ``tool_execution_end``; turns are counted; messages
  delivered mid-run (steering, follow-ups) become ``tether.message`` events;
- each tool's execution (``tool_running``), during which the tool's span is current and an
  exception it raises is recorded.

A session's model calls outside the loop (compaction and branch summaries) get the same ``chat``
spans through ``traced_calls``, labelled ``tether.purpose`` and parented on the current span.

Failures follow the conventions: the span's status is ERROR with the error text, ``error.type``
is the HTTP status, the exception's class name or one of tether's values (``semconv``). The text
is cut at ``MAX_ERROR_CHARS``, and a tool's is content (a failed command's output, the lines of a
file), recorded only with ``capture_content`` as its results are.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import time
from collections.abc import AsyncIterator, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from opentelemetry import context as otel_context, metrics, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from tether._version import __version__
from tether.ai.event_stream import AssistantMessageEventStream
from tether.ai.types import Context, Retry, SimpleStreamOptions, StreamFn
from tether.telemetry import content, semconv as sc
from tether.wire import AgentMessage, AssistantMessage, AssistantMessageEvent, ModelInfo

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider
    from opentelemetry.util.types import AttributeValue

Attributes = dict[str, "AttributeValue"]

MAX_ERROR_CHARS = 1024
"""Of an error's text on a span (its status, an exception's message): a tool's error can be
megabytes (a failed command's output, a message a program built), which went three times over
(status, message, stack) to every exporter, and a backend cuts or refuses such a span."""
MAX_STACK_CHARS = 8192
"""Of an exception's stack (its innermost frames kept)."""
TOOL_TEXT_NOT_CAPTURED = "tool error (its text is content: not captured)"
"""A failed tool span's status without ``capture_content``: the text is the tool's output."""

_NOT_CHUNKS = frozenset({"start", "done", "error"})
"""Stream events that carry no content: the first other event is the first chunk."""


class Recorder:
    """The tracer, meter and instruments of one ``Instrumentation`` (from its settings), made once."""

    def __init__(
        self,
        tracer_provider: TracerProvider | None,
        meter_provider: MeterProvider | None,
        capture_content: bool,
        agent_name: str,
    ) -> None:
        self.capture_content = capture_content
        self.agent_name = agent_name
        self.tracer = trace.get_tracer("tether", __version__, tracer_provider)
        meter = metrics.get_meter("tether", __version__, meter_provider)
        self.token_usage = meter.create_histogram(
            sc.TOKEN_USAGE_METRIC,
            "{token}",
            "Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=sc.TOKEN_BUCKETS,
        )
        self.duration = meter.create_histogram(
            sc.OPERATION_DURATION_METRIC,
            "s",
            "GenAI operation duration.",
            explicit_bucket_boundaries_advisory=sc.SECONDS_BUCKETS,
        )
        self.time_to_first_chunk = meter.create_histogram(
            sc.TIME_TO_FIRST_CHUNK_METRIC,
            "s",
            "Time from issuing the request to the first chunk of the response stream.",
            explicit_bucket_boundaries_advisory=sc.SECONDS_BUCKETS,
        )
        self.cost = meter.create_counter(
            sc.COST_METRIC, "{USD}", "What model calls cost in US dollars, at the model's list prices."
        )


class RunTrace:
    """The ``invoke_agent`` span of one run and everything recorded under it."""

    def __init__(
        self, recorder: Recorder, model: ModelInfo, options: SimpleStreamOptions, tools: Mapping[str, str]
    ) -> None:
        self.recorder = recorder
        self.tools = tools
        self.model_attributes = _model_attributes(model)
        """What every model call of the run (span and metrics) is labelled with."""
        self.turn = 0
        self.model_calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost = 0.0
        self.failure: BaseException | None = None
        self.cancelled = False
        """The caller's task was cancelled (``cancel``), though the run then ended (aborted)."""
        self._tool_spans: dict[str, _ToolSpan] = {}
        name = recorder.agent_name
        attributes: Attributes = {
            sc.OPERATION_NAME: sc.INVOKE_AGENT,
            sc.AGENT_NAME: name,
            sc.PROVIDER_NAME: self.model_attributes[sc.PROVIDER_NAME],
            sc.REQUEST_MODEL: model["id"],
        }
        if options.session_id:
            attributes[sc.CONVERSATION_ID] = options.session_id
        self.span = recorder.tracer.start_span(
            f"{sc.INVOKE_AGENT} {name}", kind=SpanKind.INTERNAL, attributes=attributes
        )
        self.context = trace.set_span_in_context(self.span)
        self._token = otel_context.attach(self.context)

    # -- model calls -----------------------------------------------------------------------------

    def traced(self, stream_fn: StreamFn) -> StreamFn:
        """``stream_fn`` with a ``chat`` span around each call, ended by its final message."""
        return _traced(self.recorder, stream_fn, self, None)

    # -- events --------------------------------------------------------------------------------

    def observe(self, event: Mapping[str, Any]) -> None:
        """One event of the run: tool spans open and close, turns are counted."""
        kind = event["type"]
        if kind == "tool_execution_start":
            call_id = event["toolCallId"]
            self._tool_spans[call_id] = _ToolSpan(self, call_id, event["toolName"], event["args"])
        elif kind == "tool_execution_end":
            tool_span = self._tool_spans.pop(event["toolCallId"], None)
            if tool_span is not None:
                tool_span.end(event["result"].content, event["isError"])
        elif kind == "turn_start":
            self.turn += 1
        elif kind == "message_end" and self.model_calls:  # the prompts came before any call
            role = event["message"]["role"]
            if role != "assistant" and role != "toolResult":
                self.span.add_event(sc.MESSAGE_EVENT, {sc.MESSAGE_ROLE: role, sc.TURN: self.turn})

    @contextlib.contextmanager
    def tool_running(self, call_id: str) -> Generator[None]:
        """While a tool executes: its span is current, and an exception it raises is recorded."""
        tool_span = self._tool_spans.get(call_id)
        if tool_span is None:
            yield
            return
        token = otel_context.attach(trace.set_span_in_context(tool_span.span))
        try:
            yield
        except Exception as exc:
            tool_span.raised(exc)
            raise
        finally:
            otel_context.detach(token)

    def tool_raised(self, call_id: str, exc: Exception) -> None:
        """A tool's call failed with ``exc`` outside ``tool_running``: the batch left it behind
        after the abort grace (``ToolAbandonedError``) once it had stopped driving it."""
        tool_span = self._tool_spans.get(call_id)
        if tool_span is not None:
            tool_span.raised(exc)

    # -- the end ---------------------------------------------------------------------------------

    def failed(self, cause: BaseException) -> None:
        """A hook, the stream function or a listener raised: the run ends with this error."""
        self.failure = cause

    def cancel(self) -> None:
        """The caller's task was cancelled: the tool spans open end as cancelled (not as the
        failed results the run's aborted ending then gives their calls), and so will the run's."""
        self.cancelled = True
        self._cancel_tool_spans()

    def _cancel_tool_spans(self) -> None:
        for tool_span in self._tool_spans.values():
            tool_span.end([], True, sc.CANCELLED)
        self._tool_spans.clear()

    def end(self, messages: Sequence[AgentMessage], ended: bool) -> None:
        """Close the run's span (and any tool span left open); ``ended``: ``agent_end`` was emitted,
        else the caller's task was cancelled mid-run."""
        self._cancel_tool_spans()
        span = self.span
        span.set_attributes(
            {
                sc.USAGE_INPUT_TOKENS: self.input_tokens,
                sc.USAGE_OUTPUT_TOKENS: self.output_tokens,
                sc.USAGE_COST: self.cost,
            }
        )
        last = _last_answer(messages)
        if self.failure is not None:
            _record_exception(span, self.failure)
            _set_error(span, type(self.failure).__qualname__, last.get("errorMessage") if last else None)
        elif not ended or self.cancelled:
            _set_error(span, sc.CANCELLED, "The run was cancelled")
        elif last is not None and (error := error_type(last)) is not None:
            _set_error(span, error, last.get("errorMessage"))
        otel_context.detach(self._token)
        span.end()


def traced_calls(recorder: Recorder, stream_fn: StreamFn, purpose: str) -> StreamFn:
    """``stream_fn`` with a ``chat`` span around each call made outside a run's loop (a
    compaction's or a branch summary's), labelled ``tether.purpose``. Its parent is the span
    current where the call is made: the run's ``invoke_agent`` when a run compacts before a
    model call, none when the user compacts between runs."""
    return _traced(recorder, stream_fn, None, purpose)


def _traced(recorder: Recorder, stream_fn: StreamFn, run: RunTrace | None, purpose: str | None) -> StreamFn:
    async def call(
        model: ModelInfo, context: Context, options: SimpleStreamOptions | None
    ) -> AssistantMessageEventStream:
        given = options if options is not None else SimpleStreamOptions()
        model_call = _ModelCall(recorder, model, context, given, run, purpose)
        try:
            # The caller's options, telling this call about retries (and the caller, if it asked):
            # not kept by the call, which they point at (a cycle only a collection freed).
            opened = stream_fn(model, context, dataclasses.replace(given, on_retry=model_call.retried))
            stream = await opened if inspect.isawaitable(opened) else opened
        except BaseException as exc:
            model_call.raised(exc)
            raise
        return AssistantMessageEventStream(model, model_call.observe(stream))

    return call


class _ModelCall:
    """One model call: its ``chat`` span from the request to the final message, and its metrics.

    ``run``: the run whose loop makes the call (its turn, its totals, its span as the parent);
    ``None`` for a call of its own (``purpose`` says which), parented on the current span."""

    __slots__ = (
        "_first_chunk",
        "_labels",
        "_on_retry",
        "_recorder",
        "_retries",
        "_run",
        "_started",
        "span",
    )

    def __init__(
        self,
        recorder: Recorder,
        model: ModelInfo,
        context: Context,
        given: SimpleStreamOptions,
        run: RunTrace | None,
        purpose: str | None,
    ) -> None:
        self._recorder = recorder
        self._run = run
        self._labels = run.model_attributes if run is not None else _model_attributes(model)
        """What the span and the metrics are labelled with: the model called."""
        self._on_retry = given.on_retry
        attributes: Attributes = {sc.OPERATION_NAME: sc.CHAT, **self._labels, sc.REQUEST_STREAM: True}
        if run is not None:
            run.model_calls += 1
            attributes[sc.TURN] = run.turn
        if purpose is not None:
            attributes[sc.PURPOSE] = purpose
        if given.session_id:
            attributes[sc.CONVERSATION_ID] = given.session_id
        if given.temperature is not None:
            attributes[sc.REQUEST_TEMPERATURE] = given.temperature
        if given.max_tokens is not None:
            attributes[sc.REQUEST_MAX_TOKENS] = given.max_tokens
        if given.reasoning is not None:
            attributes[sc.REQUEST_THINKING] = given.reasoning
        if recorder.capture_content:
            system_prompt = context.get("systemPrompt")
            if system_prompt:
                attributes[sc.SYSTEM_INSTRUCTIONS] = content.system_instructions(system_prompt)
            attributes[sc.INPUT_MESSAGES] = content.input_messages(context["messages"])
            tools = context.get("tools")
            if tools:
                attributes[sc.TOOL_DEFINITIONS] = content.tool_definitions(tools)
        self.span = recorder.tracer.start_span(
            f"{sc.CHAT} {model['id']}", run.context if run is not None else None, SpanKind.CLIENT, attributes
        )
        self._started = time.perf_counter()
        self._first_chunk: float | None = None
        self._retries = 0

    def retried(self, retry: Retry) -> None:
        self._retries += 1
        self.span.add_event(
            sc.RETRY_EVENT,
            {
                sc.RETRY_ATTEMPT: retry.attempt,
                sc.RETRY_DELAY: retry.delay,
                sc.RETRY_REASON: retry.reason,
                sc.ERROR_TYPE: str(retry.status) if retry.status is not None else sc.OTHER,
            },
        )
        if self._on_retry is not None:
            self._on_retry(retry)

    async def observe(self, stream: AssistantMessageEventStream) -> AsyncIterator[AssistantMessageEvent]:
        """The events of ``stream``, unchanged; the span ends with its final message (also when
        the consumer stops early: the stream then ends as aborted)."""
        final: AssistantMessage | None = None
        try:
            async for event in stream:
                if self._first_chunk is None and event["type"] not in _NOT_CHUNKS:
                    self._first_chunk = time.perf_counter()
                yield event
            final = await stream.result()
        finally:
            if final is None:
                await stream.aclose()
                final = await stream.result()
            self._end(final)

    def raised(self, exc: BaseException) -> None:
        """The stream function raised instead of returning a stream."""
        _record_exception(self.span, exc)
        _set_error(self.span, type(exc).__qualname__, str(exc) or None)
        self.span.end()
        self._recorder.duration.record(
            time.perf_counter() - self._started,
            {sc.OPERATION_NAME: sc.CHAT, **self._labels, sc.ERROR_TYPE: type(exc).__qualname__},
        )

    def _end(self, final: AssistantMessage) -> None:
        run, span, recorder = self._run, self.span, self._recorder
        usage = final["usage"]
        input_tokens = usage["input"] + usage["cacheRead"] + usage["cacheWrite"]
        output_tokens = usage["output"]
        cost = float(usage["cost"]["total"])
        # the model the server says answered (a dated snapshot, an alias resolved), else the one asked
        answered = cast("dict[str, Any]", final).get("responseModel")
        response_model = final.get("upstreamModel") or answered or final["model"]
        attributes: Attributes = {
            sc.RESPONSE_MODEL: response_model,
            sc.RESPONSE_FINISH_REASONS: [content.finish_reason(final)],
            sc.USAGE_INPUT_TOKENS: input_tokens,
            sc.USAGE_OUTPUT_TOKENS: output_tokens,
            sc.USAGE_COST: cost,
        }
        response_id = final.get("responseId")
        if response_id:
            attributes[sc.RESPONSE_ID] = response_id
        if usage["cacheRead"]:
            attributes[sc.USAGE_CACHE_READ_INPUT_TOKENS] = usage["cacheRead"]
        if usage["cacheWrite"]:
            attributes[sc.USAGE_CACHE_CREATION_INPUT_TOKENS] = usage["cacheWrite"]
        reasoning_tokens = usage.get("reasoningTokens")
        if reasoning_tokens:
            attributes[sc.USAGE_REASONING_OUTPUT_TOKENS] = reasoning_tokens
        if self._first_chunk is not None:
            attributes[sc.RESPONSE_TIME_TO_FIRST_CHUNK] = self._first_chunk - self._started
        if self._retries:
            attributes[sc.RETRIES] = self._retries
        if recorder.capture_content:
            attributes[sc.OUTPUT_MESSAGES] = content.output_messages(final)
        error = error_type(final)
        if error is not None:
            attributes[sc.ERROR_TYPE] = error
            span.set_status(Status(StatusCode.ERROR, final.get("errorMessage")))
        span.set_attributes(attributes)
        span.end()

        labels: Attributes = {sc.OPERATION_NAME: sc.CHAT, **self._labels, sc.RESPONSE_MODEL: response_model}
        recorder.duration.record(
            time.perf_counter() - self._started, labels if error is None else {**labels, sc.ERROR_TYPE: error}
        )
        if self._first_chunk is not None:
            recorder.time_to_first_chunk.record(self._first_chunk - self._started, labels)
        if input_tokens or output_tokens:  # a call that reported no usage is not counted as zero
            recorder.token_usage.record(input_tokens, {**labels, sc.TOKEN_TYPE: "input"})
            recorder.token_usage.record(output_tokens, {**labels, sc.TOKEN_TYPE: "output"})
        if cost:
            recorder.cost.add(cost, labels)
        if run is not None:  # a compaction's call is not one of the run's own
            run.input_tokens += input_tokens
            run.output_tokens += output_tokens
            run.cost += cost


class _ToolSpan:
    """The ``execute_tool`` span of one tool call."""

    __slots__ = ("_capture", "_raised", "span")

    def __init__(self, run: RunTrace, call_id: str, name: str, args: Any) -> None:
        attributes: Attributes = {
            sc.OPERATION_NAME: sc.EXECUTE_TOOL,
            sc.TOOL_NAME: name,
            sc.TOOL_CALL_ID: call_id,
            sc.TOOL_TYPE: "function",
        }
        description = run.tools.get(name)
        if description:
            attributes[sc.TOOL_DESCRIPTION] = description
        self._capture = run.recorder.capture_content
        if self._capture:
            attributes[sc.TOOL_CALL_ARGUMENTS] = content.to_json(args)
        self._raised: str | None = None
        self.span = run.recorder.tracer.start_span(
            f"{sc.EXECUTE_TOOL} {name}", run.context, SpanKind.INTERNAL, attributes
        )

    def raised(self, exc: Exception) -> None:
        self._raised = type(exc).__qualname__
        _record_exception(self.span, exc, None if self._capture else TOOL_TEXT_NOT_CAPTURED)

    def end(self, result: Sequence[Any], is_error: bool, error: str | None = None) -> None:
        """``error``: the ``error.type`` when it is not the tool's own (a cancelled run)."""
        if is_error:
            text = next((block["text"] for block in result if block.get("type") == "text"), None)
            if text and not self._capture:
                text = TOOL_TEXT_NOT_CAPTURED
            _set_error(
                self.span, error or self._raised or sc.TOOL_ERROR, text or "The tool call was not completed"
            )
        elif self._capture:
            self.span.set_attribute(sc.TOOL_CALL_RESULT, content.tool_result(result))
        self.span.end()


def error_type(message: AssistantMessage) -> str | None:
    """The ``error.type`` of a final assistant message, ``None`` when it did not fail."""
    reason = message["stopReason"]
    if reason == "aborted":
        return sc.ABORTED
    if reason == "error":
        status = message.get("errorStatus")
        return str(status) if status is not None else sc.OTHER
    return None


def _last_answer(messages: Sequence[AgentMessage]) -> AssistantMessage | None:
    for message in reversed(messages):
        if message["role"] == "assistant":
            return message
    return None


def _set_error(span: trace.Span, error: str, description: str | None) -> None:
    span.set_attribute(sc.ERROR_TYPE, error)
    span.set_status(Status(StatusCode.ERROR, None if description is None else _bounded(description)))


def _record_exception(span: trace.Span, exc: BaseException, message: str | None = None) -> None:
    """The SDK's ``exception`` event, its message cut (or ``message`` instead: a tool's text
    without ``capture_content``) and its stack too (the SDK's repeats the message, and every
    exception it was raised from)."""
    import traceback

    text = _bounded(str(exc)) if message is None else message
    frames = "".join(traceback.format_tb(exc.__traceback__))[-MAX_STACK_CHARS:]
    name = type(exc).__qualname__
    span.record_exception(
        exc,
        {
            "exception.message": text,
            "exception.stacktrace": f"Traceback (most recent call last):\n{frames}{name}: {text}",
        },
    )


def _bounded(text: str) -> str:
    if len(text) <= MAX_ERROR_CHARS:
        return text
    return f"{text[:MAX_ERROR_CHARS]}… ({len(text) - MAX_ERROR_CHARS:,} more characters)"


def _model_attributes(model: ModelInfo) -> Attributes:
    provider = model["provider"]
    attributes: Attributes = {
        sc.PROVIDER_NAME: sc.PROVIDER_NAMES.get(provider, provider),
        sc.REQUEST_MODEL: model["id"],
        sc.API: model["api"],
    }
    url = urlsplit(model["baseUrl"]) if model["baseUrl"] else None
    if url is not None and url.hostname:
        attributes[sc.SERVER_ADDRESS] = url.hostname
        attributes[sc.SERVER_PORT] = url.port or (443 if url.scheme == "https" else 80)
    return attributes
