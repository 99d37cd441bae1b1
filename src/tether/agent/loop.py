"""The agent loop: prompt → model → tools → model ... until nothing is left to do.

A *run* starts from prompts (``run_agent_loop``) or from the transcript as it is
(``run_agent_loop_continue``) and reports everything through an awaited ``emit``:

    agent_start
    turn_start                     (one per assistant response)
      message_start/end            prompts, then steering or follow-up messages
      message_start/update*/end    the assistant response as it streams
      tool_execution_*             its tool calls (see ``tool_execution``)
      message_start/end            one tool-result message per call
    turn_end
    ...
    agent_end                      carries every message the run added

Steering is polled before the first turn and after each turn; follow-ups, then continuation
messages, when the agent would stop. An assistant message that ends with ``error`` or ``aborted``
ends the run (``turn_end``, ``agent_end``). An abort does not end the run by itself: tools see the
signal, and the next model call reports the abort.

The run never raises for a failing hook, stream function or listener: it ends with an assistant
error message naming what failed (``message_start``/``message_end``, ``turn_end``, ``agent_end``),
after giving every started tool call a result. Only cancellation of the caller's task escapes,
once the run has ended as an aborted one the same way (within ``ABORT_GRACE``).

An instrumented run (``tether.telemetry``) is recorded as it goes: an ``invoke_agent`` span for
the run, a ``chat`` span per model call (the stream function is wrapped), an ``execute_tool``
span per tool call (from its start event to its end event). Without instrumentation the run
pays one ``None`` check per step and OpenTelemetry is never imported.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from tether.agent.event_stream import AgentEventStream
from tether.agent.listener_grace import hook_within_grace
from tether.agent.llm_filter import LlmFilter
from tether.agent.tool import tool_schema
from tether.agent.types import (
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    Emit,
    MessagePoll,
    default_convert_to_llm,
)
from tether.ai.abort import AbortSignal
from tether.ai.event_stream import ABORTED_MESSAGE, AssistantMessageEventStream, fail, new_assistant_message
from tether.ai.types import Context, StreamFn, with_signal
from tether.errors import TetherError
from tether.telemetry import instrumentation_for
from tether.wire import AgentMessage, AssistantMessage, AssistantStreamingEvent, ToolCall, ToolResultMessage

if TYPE_CHECKING:
    from tether.agent.hooks import TurnContext
    from tether.agent.tool_execution import ToolRunner
    from tether.telemetry.spans import RunTrace

NO_MESSAGES = "Cannot continue: no messages in context"
FROM_ASSISTANT = "Cannot continue from message role: assistant"


class StepFailed(TetherError):
    """A hook, the stream function or a listener raised; the run ends with this as its error."""

    def __init__(self, step: str, cause: BaseException) -> None:
        detail = str(cause)
        super().__init__(f"{step} failed: {type(cause).__name__}{f': {detail}' if detail else ''}")
        self.step = step
        self.cause = cause


def _messages(step: str, value: object, *, none: bool = True) -> list[Any]:
    """A hook's list of messages (a tuple too; ``None`` is none where ``none``); anything else
    fails the run naming the hook and what it gave. Taken as it came, a dict became its keys and
    a string its letters, and the run failed further on blaming another step ("agent loop failed",
    "stream function failed: TypeError"), or the hook that got it (``convert_to_llm``)."""
    if isinstance(value, list):
        return cast(list[Any], value)
    if isinstance(value, tuple) or (value is None and none):
        return list(cast(tuple[Any, ...], value or ()))
    raise StepFailed(step, TypeError(f"it returned {type(value).__name__}, not a list of messages"))


def check_can_continue(context: AgentContext) -> None:
    """Raise ``ValueError`` when ``context`` cannot be continued (the reference's two messages)."""
    if not context.messages:
        raise ValueError(NO_MESSAGES)
    if context.messages[-1]["role"] == "assistant":
        raise ValueError(FROM_ASSISTANT)


async def run_agent_loop(
    prompts: Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    emit: Emit,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
) -> list[AgentMessage]:
    """Run from ``prompts`` appended to ``context``; returns the messages the run added."""
    return await _Run(context, config, emit, signal, stream_fn).run(list(prompts))


async def run_agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    emit: Emit,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
) -> list[AgentMessage]:
    """Run from ``context`` as it is (a retry, or answering tool results already there)."""
    check_can_continue(context)
    return await _Run(context, config, emit, signal, stream_fn).run(None)


def agent_loop(
    prompts: Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
) -> AgentEventStream:
    """``run_agent_loop`` as an event stream (needs a running event loop)."""
    return AgentEventStream(lambda emit: run_agent_loop(prompts, context, config, emit, signal, stream_fn))


def agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
) -> AgentEventStream:
    """``run_agent_loop_continue`` as an event stream; the preconditions raise here, at once."""
    check_can_continue(context)
    return AgentEventStream(lambda emit: run_agent_loop_continue(context, config, emit, signal, stream_fn))


def default_stream_fn() -> StreamFn:
    """``tether.ai.api.stream_simple`` (the providers' registry), imported on first use: a loop
    given its own stream function never loads the registry."""
    from tether.ai.api import stream_simple

    return stream_simple


async def _call(step: str, function: Callable[..., Any], *args: Any, signal: AbortSignal | None) -> Any:
    """Call a hook that may be sync or async; whatever it raises becomes ``StepFailed(step)``. An
    async one is cut ``ABORT_GRACE`` after the run's abort (``hook_within_grace``)."""
    try:
        value = function(*args)
        if inspect.isawaitable(value):
            value = await (value if signal is None else hook_within_grace(step, value, signal))
        return value
    except Exception as exc:
        raise StepFailed(step, exc) from exc


_execution: ModuleType | None = None


def _tool_execution() -> ModuleType:
    """``tether.agent.tool_execution``, loaded with the first tool call: a run that only answers
    never needs it (nor argument validation, nor the hook payloads: ~5% of `tether -p`'s
    start-up). Kept here once loaded: an ``import`` statement per turn cost 1% of P2."""
    global _execution
    if _execution is None:
        import tether.agent.tool_execution as execution

        _execution = execution
    return _execution


class _Run:
    """One run of the loop and what its failure handling needs to know about where it is."""

    __slots__ = (
        "config",
        "context",
        "ended",
        "in_turn",
        "llm_filter",
        "new_messages",
        "open_calls",
        "open_message",
        "options",
        "runner",
        "signal",
        "sink",
        "stream_fn",
        "streaming",
        "trace",
        "unannounced",
        "user_sink",
    )

    def __init__(
        self,
        context: AgentContext,
        config: AgentLoopConfig,
        sink: Emit,
        signal: AbortSignal | None,
        stream_fn: StreamFn | None,
    ) -> None:
        # Built directly, not with ``dataclasses.replace`` (a field walk and a keyword call): every
        # run (a prompt) copies its context and options. A subclass of the caller's keeps its
        # class (and fields) through ``replace``.
        if type(context) is AgentContext:
            self.context = AgentContext(
                context.system_prompt, list(context.messages), context.tools, context.volatile_context
            )
        else:
            self.context = dataclasses.replace(context, messages=list(context.messages))
        self.config = config
        self.user_sink = sink
        self.sink = sink
        """Where events go: ``user_sink``, or ``_traced_sink`` in an instrumented run."""
        self.signal = signal
        self.stream_fn = stream_fn
        self.options = with_signal(config.options, signal)
        """The stream options of every call: the config's, with the run's signal."""
        self.new_messages: list[AgentMessage] = []
        self.llm_filter = LlmFilter(
            private=config.transform_context is None
            and config.should_stop_after_turn is None
            and config.get_continuation_messages is None
            and config.before_tool_call is None
            and config.after_tool_call is None
        )
        """The default ``convert_to_llm``, remembering what it filtered in earlier calls. Private
        (no prefix check) when no hook is handed the transcript: the list is this run's own copy,
        and the loop only appends to it or replaces what it appended since the last call."""
        self.in_turn = False
        """``turn_start`` was emitted and its ``turn_end`` was not."""
        self.streaming: AssistantMessage | None = None
        """The assistant message whose ``message_start`` was emitted and ``message_end`` was not."""
        self.open_message: AgentMessage | None = None
        """The message whose ``message_start`` was emitted and ``message_end`` was not."""
        self.unannounced: list[AgentMessage] = []
        """The run's prompts not announced yet: in its transcript from the start, before
        ``agent_start`` (as pi's ``agentLoop`` puts them), and announced before the error reply
        when a listener fails first (``_end_failed``), so they are never lost with the run."""
        self.open_calls: tuple[AssistantMessage, list[ToolCall]] | None = None
        """A completed assistant message whose tool calls do not all have results yet."""
        self.runner: ToolRunner | None = None
        """What runs the tool calls (and knows what a batch reported so far), made with the
        run's first tool call."""
        self.ended = False
        self.trace: RunTrace | None = None
        """The run's spans, when it is instrumented (``tether.telemetry``)."""

    # -- events ----------------------------------------------------------------------------------
    # Events go straight to the sink: the hot ones (several per turn) are awaited where they
    # happen, with what a failure needs to know (``in_turn``, ``open_message``, the tool batch's
    # records) written just before, and a listener's exception turned into ``StepFailed`` there.
    # A wrapper coroutine per event cost 5% of a run's instructions (P2).

    async def _emit(self, event: AgentEvent) -> None:
        """A once-per-run event (``agent_start``, ``agent_end``)."""
        try:
            await self.sink(event)
        except Exception as exc:
            raise StepFailed("event listener", exc) from exc

    async def _announce(self, message: AgentMessage) -> None:
        """``message_start`` and ``message_end`` of a prompt, steering or follow-up message."""
        try:
            self.open_message = message
            await self.sink({"type": "message_start", "message": message})
            self.open_message = None
            await self.sink({"type": "message_end", "message": message})
        except Exception as exc:
            raise StepFailed("event listener", exc) from exc

    async def run(self, prompts: list[AgentMessage] | None) -> list[AgentMessage]:
        """The run, its turns written out here: while a response streams, each pass through the
        event loop resumes every coroutine between the task and the stream's reader, and each
        one costs ~0.4% of P2's bytecodes (the response is read here too)."""
        instrumentation = instrumentation_for(self.config.instrumentation)
        if instrumentation is not None:
            tools = {t.name: t.description for t in self.context.tools}
            self.trace = instrumentation.start_run(self.config.model, self.options, tools)
            self.sink = _traced_sink(self.trace, self.user_sink)
        if prompts:
            self.context.messages.extend(prompts)
            self.new_messages.extend(prompts)
            self.unannounced = prompts
        try:
            await self._emit({"type": "agent_start"})
            self.in_turn = True
            await self._emit({"type": "turn_start"})
            while self.unannounced:
                await self._announce(self.unannounced.pop(0))
            config = self.config
            sink = self.sink
            pending = await self._poll("get_steering_messages", config.get_steering_messages)
            last_turn: TurnContext | None = None
            first = True
            while True:
                more_tool_calls = True
                while more_tool_calls or pending:
                    if first:
                        first = False
                    else:
                        self.in_turn = True
                        try:
                            await sink({"type": "turn_start"})
                        except Exception as exc:
                            raise StepFailed("event listener", exc) from exc
                    for message in pending:
                        await self._announce(message)
                        self.context.messages.append(message)
                        self.new_messages.append(message)
                    pending = []

                    # The response is read here, in the run's own frame: each pass through the event
                    # loop while it streams resumes every frame between the task and the stream's
                    # reader (a frame costs 0.4% of P2's bytecodes).
                    response = await self._open_stream()
                    try:
                        if type(response) is AssistantMessageEventStream:
                            # The wrapper keeps the stream contract: what escapes ``pump`` is the sink's.
                            final = await response.pump(self._on_event)
                        else:  # a stream function's own stream object: anything it raises is its failure
                            final = await self._consume_other(response)
                    except BaseException as exc:
                        with contextlib.suppress(Exception):
                            await response.aclose()
                        if isinstance(exc, Exception) and not isinstance(exc, StepFailed):
                            raise StepFailed("event listener", exc) from exc
                        raise
                    message = await self._consumed(final)
                    tool_results: list[ToolResultMessage] = []
                    more_tool_calls = False
                    failed = message["stopReason"] == "error" or message["stopReason"] == "aborted"
                    if self.open_calls is not None:  # never after a failed response
                        tool_results, terminate = await self._run_tools()
                        more_tool_calls = not terminate
                    self.in_turn = False
                    try:
                        await sink({"type": "turn_end", "message": message, "toolResults": tool_results})
                    except Exception as exc:
                        raise StepFailed("event listener", exc) from exc
                    if failed:
                        await self._agent_end()
                        return self.new_messages

                    if (
                        config.should_stop_after_turn is not None
                        or config.get_continuation_messages is not None
                    ):
                        from tether.agent.hooks import TurnContext  # loads only where a turn hook is set

                        last_turn = TurnContext(message, tool_results, self.context, self.new_messages)
                    if (
                        last_turn is not None
                        and config.should_stop_after_turn is not None
                        and await _call(
                            "should_stop_after_turn",
                            config.should_stop_after_turn,
                            last_turn,
                            signal=self.signal,
                        )
                    ):
                        await self._agent_end()
                        return self.new_messages
                    if config.should_stop_before_turn is not None and await _call(
                        "should_stop_before_turn", config.should_stop_before_turn, signal=self.signal
                    ):
                        await self._agent_end()
                        return self.new_messages
                    pending = await self._poll("get_steering_messages", config.get_steering_messages)

                pending = await self._poll("get_follow_up_messages", config.get_follow_up_messages)
                if pending:
                    continue
                if config.get_continuation_messages is not None and last_turn is not None:
                    pending = _messages(
                        "get_continuation_messages",
                        await _call(
                            "get_continuation_messages",
                            config.get_continuation_messages,
                            last_turn,
                            self.signal,
                            signal=self.signal,
                        ),
                    )
                    if pending:
                        continue
                break
            await self._agent_end()
        except StepFailed as failure:
            await self._fail(failure)
        except asyncio.CancelledError:
            await self._cancelled()
            raise
        except Exception as exc:  # a bug in the loop itself still ends the run properly
            await self._fail(StepFailed("agent loop", exc))
        finally:
            if self.trace is not None:
                self.trace.end(self.new_messages, self.ended)
        return self.new_messages

    async def _poll(self, step: str, poll: MessagePoll | None) -> list[AgentMessage]:
        """``_call`` for a queue, inline: polled after every turn, one coroutine fewer each time."""
        if poll is None:
            return []
        try:
            value: Any = poll()
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            raise StepFailed(step, exc) from exc
        return _messages(step, value)

    async def _agent_end(self) -> None:
        self.ended = True
        await self._emit({"type": "agent_end", "messages": self.new_messages})

    # -- one model call ----------------------------------------------------------------------

    async def _open_stream(self) -> AssistantMessageEventStream:
        """Build the request (hooks, transcript filter, tools) and call the stream function."""
        config = self.config
        context = self.context
        messages = context.messages
        if config.transform_context is not None:
            transformed = await _call(
                "transform_context", config.transform_context, messages, self.signal, signal=self.signal
            )
            messages = _messages("transform_context", transformed, none=False)
        system_prompt = (
            await _call("get_system_prompt", config.get_system_prompt, signal=self.signal)
            if config.get_system_prompt is not None
            else context.system_prompt
        )
        if config.convert_to_llm is default_convert_to_llm:  # synchronous: no ``_call`` needed
            try:
                llm_messages = self.llm_filter(messages)
            except Exception as exc:
                raise StepFailed("convert_to_llm", exc) from exc
        else:
            converted = await _call("convert_to_llm", config.convert_to_llm, messages, signal=self.signal)
            llm_messages = _messages("convert_to_llm", converted, none=False)
        if config.get_tools is not None:
            try:
                context.tools = config.get_tools()
            except Exception as exc:
                raise StepFailed("get_tools", exc) from exc
        llm_context: Context = {
            "systemPrompt": system_prompt,
            "messages": llm_messages,
            "tools": list(map(tool_schema, context.tools)),  # no comprehension: a frame per call
        }
        volatile = (
            await _call("get_volatile_context", config.get_volatile_context, signal=self.signal)
            if config.get_volatile_context is not None
            else context.volatile_context
        )
        if volatile is not None:
            llm_context["volatileContext"] = volatile
        options = self.options
        if config.get_api_key is not None:
            api_key = await _call(
                "get_api_key", config.get_api_key, config.model["provider"], signal=self.signal
            )
            if api_key and api_key != options.api_key:
                options = dataclasses.replace(options, api_key=api_key)
        try:
            stream_fn = self.stream_fn or default_stream_fn()
            if self.trace is not None:
                stream_fn = self.trace.traced(stream_fn)
            opened = stream_fn(config.model, llm_context, options)
            # The common answer first: ``isawaitable`` on anything but a coroutine is an ABC check.
            response: AssistantMessageEventStream = (
                opened
                if isinstance(opened, AssistantMessageEventStream) or not inspect.isawaitable(opened)
                else await opened
            )
        except Exception as exc:
            raise StepFailed("stream function", exc) from exc
        return response

    def _on_event(self, event: AssistantStreamingEvent, partial: AssistantMessage) -> Awaitable[None] | None:
        """One streamed event as ``message_start``/``message_update``: the sink's awaitable.

        Called by the stream's ``forward`` for every event but the terminal one, with its
        ``partial`` (read by the stream, which needs it too: each event is read once on its way
        to the sink). Events before ``start`` are not reported (the reference's loop ignores
        them too). As the reference does, the transcript's last message is the stream's latest
        partial, and every event carries a shallow copy of it (a listener that keeps one sees it
        as it was). Most events carry the partial already in place: then only the event is
        built, its type unread. A ``start`` always brings a partial not in place (the message
        before it has ended): a second ``start`` of the same message is an update."""
        if partial is not self.streaming:
            if event["type"] == "start":
                self.context.messages.append(partial)
                self.streaming = partial
                return self.sink({"type": "message_start", "message": partial.copy()})
            if self.streaming is None:
                return None
            self.context.messages[-1] = partial
            self.streaming = partial
        return self.sink(
            {"type": "message_update", "assistantMessageEvent": event, "message": partial.copy()}
        )

    async def _consumed(self, final: AssistantMessage) -> AssistantMessage:
        """The response read (``final``): in the transcript in place of its partial, its tool
        calls open, its ``message_end`` reported (after a ``message_start`` if it had none)."""
        messages = self.context.messages
        sink = self.sink
        partial = self.streaming
        if partial is None:
            messages.append(final)
            self.streaming = final
            started: AgentEvent = {"type": "message_start", "message": final.copy()}
            try:
                await sink(started)
            except Exception as exc:
                raise StepFailed("event listener", exc) from exc
        else:
            messages[-1] = final
        self.streaming = None
        self.new_messages.append(final)
        if final["stopReason"] != "error" and final["stopReason"] != "aborted":
            calls = [block for block in final["content"] if block["type"] == "toolCall"]
            if calls:
                self.open_calls = (final, calls)
        try:
            await sink({"type": "message_end", "message": final})
        except Exception as exc:
            raise StepFailed("event listener", exc) from exc
        return final

    async def _consume_other(self, response: AssistantMessageEventStream) -> AssistantMessage:
        """The reading of a stream object that is not the wrapper (duck-typed)."""
        try:
            async for event in response:
                if event["type"] == "done" or event["type"] == "error":
                    break
                try:
                    pending = self._on_event(event, event["partial"])
                    if pending is not None:
                        await pending
                except Exception as exc:
                    raise StepFailed("event listener", exc) from exc
            return await response.result()
        except StepFailed:
            raise
        except Exception as exc:
            raise StepFailed("model stream", exc) from exc

    # -- tools ---------------------------------------------------------------------------------

    def _tool_runner(self) -> ToolRunner:
        """The run's ``ToolRunner``, made at its first tool call."""
        runner = self.runner
        if runner is None:
            runner = self.runner = _tool_execution().ToolRunner(
                self.context, self.config, self.signal, self.sink, self.trace
            )
        return runner

    async def _run_tools(self) -> tuple[list[ToolResultMessage], bool]:
        """The open calls run and reported (``ToolRunner.run``): their result messages, and
        whether they all asked to stop the run."""
        assert self.open_calls is not None
        try:
            runner = self.runner or self._tool_runner()
            results = await runner.run(*self.open_calls)
        except _tool_execution().ListenerError as failure:
            raise StepFailed("event listener", failure.cause) from failure.cause
        self.open_calls = None
        self.context.messages.extend(results)
        self.new_messages.extend(results)
        return results, runner.terminate

    # -- failure ---------------------------------------------------------------------------------

    async def _quiet(self, event: AgentEvent) -> None:
        """Emit while ending a failed run: a listener that fails again cannot stop the ending."""
        with contextlib.suppress(Exception):
            await self.sink(event)

    async def _fail(self, failure: StepFailed) -> None:
        if self.ended:
            return
        if self.trace is not None:
            self.trace.failed(failure.cause)
        await self._end_failed(str(failure))

    async def _cancelled(self) -> None:
        """The caller's task was cancelled: end the run as an aborted one (each started tool call
        its result, the reply ``aborted``, ``turn_end``, ``agent_end``), as an abort ends it, so
        the transcript never keeps a call without its result (pi's abort mid-tool records one:
        ``abort-during-tool``'s trace). Within ``ABORT_GRACE`` altogether: a listener still
        running then is cut, and the ending with it; the cancellation goes on up either way."""
        if self.ended:
            return
        if self.trace is not None:
            self.trace.cancel()
        from tether.agent.abort_grace import ABORT_GRACE

        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(ABORT_GRACE):
                await self._end_failed(ABORTED_MESSAGE, aborted=True)

    async def _end_failed(self, text: str, *, aborted: bool = False) -> None:
        """End the run with a reply that failed (``error``, or ``aborted``) saying ``text``, after
        giving every open message its end and every started call its result."""
        open_message = self.open_message
        if open_message is None and self.runner is not None:  # a result message, mid-batch
            open_message = self.runner.open_result
        if self.streaming is None and open_message is not None:
            await self._quiet({"type": "message_end", "message": open_message})
        self.open_message = None
        if self.open_calls is not None:
            await self._close_open_calls(text)
        if self.streaming is not None:
            error = fail(self.streaming.copy(), text, aborted=aborted)
            _replace_or_append(self.context.messages, self.streaming, error)
            _replace_or_append(self.new_messages, self.streaming, error)
            self.streaming = None
            await self._quiet({"type": "message_end", "message": error})
        else:
            error = fail(new_assistant_message(self.config.model), text, aborted=aborted)
            if not self.in_turn:
                self.in_turn = True
                await self._quiet({"type": "turn_start"})
            prompts, self.unannounced = self.unannounced, []
            for prompt in prompts:  # a listener failed before they were announced
                await self._quiet({"type": "message_start", "message": prompt})
                await self._quiet({"type": "message_end", "message": prompt})
            self.context.messages.append(error)
            self.new_messages.append(error)
            await self._quiet({"type": "message_start", "message": error.copy()})
            await self._quiet({"type": "message_end", "message": error})
        self.in_turn = False
        await self._quiet({"type": "turn_end", "message": error, "toolResults": []})
        self.ended = True
        await self._quiet({"type": "agent_end", "messages": self.new_messages})

    async def _close_open_calls(self, text: str) -> None:
        """Give every call of the interrupted batch its result (``ToolRunner.close``) and end its
        turn, so the transcript never holds a call without exactly one result."""
        assert self.open_calls is not None
        message, calls = self.open_calls
        self.open_calls = None
        runner = self._tool_runner()
        await runner.close(message, calls, text, self._quiet)
        delivered = runner.delivered
        self.context.messages.extend(delivered)
        self.new_messages.extend(delivered)
        if self.in_turn:
            self.in_turn = False
            await self._quiet({"type": "turn_end", "message": message, "toolResults": list(delivered)})


def _traced_sink(trace: RunTrace, user_sink: Emit) -> Emit:
    """The sink of an instrumented run: the trace sees every event first. A function of its own,
    not a method of the run: the run would hold itself through it (its ``sink``, and its tool
    runner's), a cycle that kept every instrumented run until a garbage collection."""

    async def sink(event: AgentEvent) -> None:
        trace.observe(event)
        await user_sink(event)

    return sink


def _replace_or_append(messages: list[AgentMessage], old: AgentMessage, new: AgentMessage) -> None:
    if messages and messages[-1] is old:
        messages[-1] = new
    else:
        messages.append(new)
