"""``Agent``: the agent loop with state: transcript, tools, queues and listeners (``AgentState``
of ``reference/seeds/001-agent-loop.txt``).

An ``Agent`` owns the transcript, runs one loop at a time, and turns each loop event into state
(``messages``, ``streaming_message``, ``pending_tool_calls``, ``error_message``) before it awaits
its recorder (``_record_to``), if one is bound, then its listeners, in subscription order. A
run is over, and the agent idle, only when the ``agent_end`` listeners have finished.

While a run is going, ``steer()`` queues messages for the next model call and ``follow_up()``
queues messages for when the agent would stop. Beyond the reference: a message drained from a
queue is only *taken* when it is delivered (its ``message_end``); if the run ends first (abort,
failure), it goes back to the front of its queue, and once the run is aborted the queues are no
longer drained at all. Nothing typed while the agent worked is lost.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import time
import types
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Container, Coroutine, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

from tether.agent.listener_grace import ListenerGrace
from tether.agent.loop import run_agent_loop, run_agent_loop_continue
from tether.agent.tool import AgentTool
from tether.agent.tool_list import ToolList
from tether.agent.types import AgentContext, AgentEvent, AgentLoopConfig, default_convert_to_llm
from tether.ai.abort import AbortController, AbortSignal
from tether.ai.types import ServiceTier, SimpleStreamOptions, StreamFn, ThinkingLevel
from tether.errors import ModelError, TetherError
from tether.telemetry import Instrumentation
from tether.wire import AgentMessage, ImageContent, Message, ModelInfo, TextContent, UserMessage

if TYPE_CHECKING:
    from tether.agent.hooks import (
        AfterToolCallContext,
        AfterToolCallResult,
        BeforeToolCallContext,
        BeforeToolCallResult,
        TurnContext,
    )

QueueMode = Literal["all", "one-at-a-time"]
"""``one-at-a-time``: each poll takes the oldest queued message; ``all``: it takes them all."""

Listener = (
    Callable[[AgentEvent, AbortSignal], Awaitable[None] | None]
    | Callable[[AgentEvent], Awaitable[None] | None]
)
"""Called with every event, and the run's abort signal if it takes a second parameter; awaited,
in subscription order. ``AgentSession.subscribe`` calls its listeners the same way."""

_Call = Callable[..., "Awaitable[None] | None"]
"""A listener as ``_process`` calls it, once its arity is known (typed once, at subscription:
building this alias costs ~0.4 µs, which per event and listener showed in profiles)."""

_Entry = tuple[_Call, bool, bool, Container[str]]
"""A subscription: the listener, whether it takes the signal, whether the grace bounds it, and
the event types it skips."""


def listener_wants_signal(listener: Callable[..., object]) -> bool:
    """Whether ``listener`` takes a second positional parameter (the run's abort signal).

    A plain function or method is read from its code object: ``inspect.signature`` cost about
    half of setting up an ``AgentSession`` (one subscription each; P6 sets up thousands), and
    says the same for these. Anything else (a partial, a decorated function, a callable
    object) goes through ``inspect``."""
    function = listener.__func__ if isinstance(listener, types.MethodType) else listener
    if (
        type(function) is types.FunctionType
        and not hasattr(function, "__wrapped__")
        and not hasattr(function, "__signature__")
    ):
        code = function.__code__
        if code.co_flags & inspect.CO_VARARGS:
            return True
        return code.co_argcount - (function is not listener) >= 2
    try:
        parameters = list(inspect.signature(listener).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: the one-argument form
        return False
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return True
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2


class AgentBusyError(TetherError, RuntimeError):
    """``prompt()`` or ``continue_()`` while a run is going."""


class _Queue:
    __slots__ = ("messages", "mode")

    def __init__(self, mode: QueueMode) -> None:
        self.mode: QueueMode = mode
        self.messages: deque[AgentMessage] = deque()

    def drain(self) -> list[AgentMessage]:
        if not self.messages:
            return []
        if self.mode == "all":
            drained = list(self.messages)
            self.messages.clear()
            return drained
        return [self.messages.popleft()]

    def put_back(self, messages: list[AgentMessage]) -> None:
        self.messages.extendleft(reversed(messages))


class _ActiveRun:
    __slots__ = ("__weakref__", "controller", "done", "grace", "idle", "in_flight")

    def __init__(self) -> None:
        self.controller = AbortController()
        self.grace = ListenerGrace()
        """Cuts a listener still running ``ABORT_GRACE`` after ``abort()``."""
        self.idle = asyncio.Event()
        self.in_flight: list[tuple[_Queue, AgentMessage]] = []
        """Messages drained from a queue and not delivered (``message_end``) yet."""
        self.done: asyncio.Future[None] | None = None
        """``_process``'s answer when no listener answers an awaitable: a finished future is
        awaited at once, without the coroutine (and frame) per event an ``async def`` costs (~120
        events a session of three prompts with a tool call each). Made at the first event: a run
        is made by the ``prompt()`` call, which may come before the event loop runs
        (``asyncio.run(agent.prompt(...))``)."""


class Agent:
    """A stateful agent: ``prompt()`` runs the loop on its transcript with its tools.

    Every parameter is also an attribute of the same name, read at each run (``messages`` as a
    copy), so changing one between runs changes the next run; ``tools``, like ``system_prompt``,
    is read before every model call, so a tool added during a run (an MCP tool the model found
    with ``search_mcp_tools``) is callable from the run's next model call on.

    Args:
        model: The model to call (``tether.find_model("provider/id")``); needed before ``prompt``.
        system_prompt: The system prompt, sent with every model call.
        volatile_context: Text sent after the last prompt-cache breakpoint (changes each turn
            without spoiling the cached prefix).
        tools: The tools the model may call (``@tether.tool`` functions, ``AgentTool`` objects);
            of two with one name the later takes the earlier's place, as in ``create_agent_session``,
            and so does a tool added later (``agent.tools.append(tool)``).
        messages: A transcript to start from.
        thinking_level: ``off`` to ``max``; mapped to each provider's reasoning setting.
        service_tier: The provider's service tier, where it has one.
        stream_fn: The model call (default: the registry's ``stream_simple`` for ``model``'s
            API); a ``ScriptedModel`` plays prepared replies instead.
        options: Other stream options (temperature, max tokens, timeouts, retries, headers, ...),
            passed on every model call.
        convert_to_llm: Turns the transcript into the messages the model sees (drop or lower
            messages of your own kinds here).
        transform_context: ``(messages, signal) -> messages`` before each call: trim or edit
            the context the model sees (the transcript itself is unchanged).
        get_api_key: ``provider -> key`` per call, instead of environment variables.
        before_tool_call: ``(context, signal) -> BeforeToolCallResult | None`` before a tool
            runs: block it (``block=True``, ``reason``) or let it run (``None``).
        after_tool_call: ``(context, signal) -> AfterToolCallResult | None`` after a tool ran:
            override its result field by field.
        should_stop_after_turn: ``(turn) -> bool``: end the run after a turn although tools ran.
        should_stop_before_turn: ``() -> bool``: end the run before the next model call.
        get_continuation_messages: ``(turn, signal) -> messages`` to continue with when the
            model would stop (an empty list stops).
        tool_execution: ``parallel`` (the tools of one reply run concurrently) or ``sequential``.
        steering_mode: How steered messages are taken: ``one-at-a-time`` or ``all``.
        follow_up_mode: The same for ``follow_up()``.
        instrumentation: OpenTelemetry spans and metrics of runs (``tether.telemetry``).
    """

    def __init__(
        self,
        *,
        model: ModelInfo | None = None,
        system_prompt: str = "",
        volatile_context: str | None = None,
        tools: Iterable[AgentTool] = (),
        messages: Iterable[AgentMessage] = (),
        thinking_level: ThinkingLevel = "off",
        service_tier: ServiceTier | None = None,
        stream_fn: StreamFn | None = None,
        options: SimpleStreamOptions | None = None,
        convert_to_llm: Callable[[list[AgentMessage]], list[Message] | Awaitable[list[Message]]] = (
            default_convert_to_llm
        ),
        transform_context: (
            Callable[
                [list[AgentMessage], AbortSignal | None], list[AgentMessage] | Awaitable[list[AgentMessage]]
            ]
            | None
        ) = None,
        get_api_key: Callable[[str], str | Awaitable[str | None] | None] | None = None,
        before_tool_call: (
            Callable[[BeforeToolCallContext, AbortSignal | None], Awaitable[BeforeToolCallResult | None]]
            | None
        ) = None,
        after_tool_call: (
            Callable[[AfterToolCallContext, AbortSignal | None], Awaitable[AfterToolCallResult | None]] | None
        ) = None,
        should_stop_after_turn: Callable[[TurnContext], bool | Awaitable[bool]] | None = None,
        should_stop_before_turn: Callable[[], bool] | None = None,
        get_continuation_messages: (
            Callable[[TurnContext, AbortSignal | None], Awaitable[list[AgentMessage]]] | None
        ) = None,
        tool_execution: Literal["sequential", "parallel"] = "parallel",
        steering_mode: QueueMode = "one-at-a-time",
        follow_up_mode: QueueMode = "one-at-a-time",
        instrumentation: Instrumentation | None = None,
    ) -> None:
        self.model = model
        self.system_prompt = system_prompt
        """Resolved before every model call, so a change applies from the next call on."""
        self.volatile_context = volatile_context
        """Resolved before every model call; kept out of every cached prefix."""
        self.thinking_level: ThinkingLevel = thinking_level
        self.service_tier: ServiceTier | None = service_tier
        self.options = options if options is not None else SimpleStreamOptions()
        """Other stream options (temperature, session id, ...), passed on every model call."""
        self.stream_fn = stream_fn
        self.convert_to_llm = convert_to_llm
        self.transform_context = transform_context
        self.get_api_key = get_api_key
        self.before_tool_call = before_tool_call
        self.after_tool_call = after_tool_call
        self.should_stop_after_turn = should_stop_after_turn
        self.should_stop_before_turn = should_stop_before_turn
        self.get_continuation_messages = get_continuation_messages
        self.tool_execution: Literal["sequential", "parallel"] = tool_execution
        self.instrumentation = instrumentation
        """Records each run as OpenTelemetry spans and metrics (``None``: the process-wide setting
        of ``tether.telemetry.instrument``, if any)."""
        self._tools = ToolList(tools)
        self._messages = list(messages)
        self._steering = _Queue(steering_mode)
        self._follow_ups = _Queue(follow_up_mode)
        self._recorder: Callable[[AgentEvent], Awaitable[None] | None] | None = None
        """What records this agent's events (``_record_to``), called before every listener."""
        self._recorder_skips: Container[str] = ()
        self._listeners: tuple[_Entry, ...] = ()
        """Replaced, never changed in place: an event goes to the listeners subscribed when it
        came, without a copy per event."""
        self._active: _ActiveRun | None = None
        self._asked: weakref.WeakSet[_ActiveRun] = weakref.WeakSet()
        """Runs made by ``prompt()``/``continue_()`` calls whose coroutine has not started yet
        (weak: a coroutine dropped unstarted takes its run with it)."""
        self._streaming_message: AgentMessage | None = None
        self._pending_tool_calls: frozenset[str] = frozenset()
        self._error_message: str | None = None

    # -- state ---------------------------------------------------------------------------------

    @property
    def tools(self) -> list[AgentTool]:
        """The tools, one per name: the list itself, as pi's ``agent.state.tools`` (changing it
        changes the next model call), keeping one tool per name through every change (``append``,
        ``insert``, ...: ``tether.agent.tool_list``). Assigning copies the list."""
        return self._tools

    @tools.setter
    def tools(self, tools: Iterable[AgentTool]) -> None:
        self._tools = ToolList(tools)

    @property
    def messages(self) -> list[AgentMessage]:
        """The transcript; assigning copies the list (later changes to yours do not leak in)."""
        return self._messages

    @messages.setter
    def messages(self, messages: Iterable[AgentMessage]) -> None:
        self._messages = list(messages)

    @property
    def is_streaming(self) -> bool:
        """True while a run is going, until its ``agent_end`` listeners have finished."""
        return self._active is not None

    @property
    def streaming_message(self) -> AgentMessage | None:
        """The message being streamed (between its ``message_start`` and ``message_end``)."""
        return self._streaming_message

    @property
    def pending_tool_calls(self) -> frozenset[str]:
        """Ids of the tool calls executing now."""
        return self._pending_tool_calls

    @property
    def error_message(self) -> str | None:
        """The error of the last failed or aborted assistant turn, if the last run had one."""
        return self._error_message

    @property
    def signal(self) -> AbortSignal | None:
        """The abort signal of the current run, if any."""
        return self._active.controller.signal if self._active is not None else None

    @property
    def steering_mode(self) -> QueueMode:
        return self._steering.mode

    @steering_mode.setter
    def steering_mode(self, mode: QueueMode) -> None:
        self._steering.mode = mode

    @property
    def follow_up_mode(self) -> QueueMode:
        return self._follow_ups.mode

    @follow_up_mode.setter
    def follow_up_mode(self, mode: QueueMode) -> None:
        self._follow_ups.mode = mode

    # -- listeners and queues ------------------------------------------------------------------

    def subscribe(
        self, listener: Listener, *, bounded: bool = True, skip: Container[str] = ()
    ) -> Callable[[], None]:
        """Call ``listener(event)`` for every event, or ``listener(event, signal)`` (the run's abort
        signal) when it takes two parameters; returns the unsubscribe function.

        Once the run is aborted, an awaitable the listener returned is cancelled if it is still
        running ``ABORT_GRACE`` later (``ListenerGrace``), unless ``bounded`` is false: an
        ``AgentSession`` bounds its own listeners and lets the store's writes take the store's
        own patience.

        ``skip``: event types the listener is not called with, read at each event, so a
        subscriber may change the set it passed: a second ``AgentSession`` bound to the agent
        (``_record_to``) skips the events it only passes on (``message_update``, ``turn_start``,
        ...) while nobody listens to it."""
        entry = (cast(_Call, listener), listener_wants_signal(listener), bounded, skip)
        self._listeners = (*self._listeners, entry)

        def unsubscribe() -> None:
            self._listeners = tuple(e for e in self._listeners if e is not entry)

        return unsubscribe

    def _record_to(
        self, recorder: Callable[[AgentEvent], Awaitable[None] | None], skip: Container[str]
    ) -> Callable[[], None]:
        """Call ``recorder(event)`` with every event but the types in ``skip`` (read at each
        event), before any listener; it answers ``None`` or an awaitable, awaited before the
        listeners are called, and is not bounded by the abort grace. Returns the function that
        unbinds it.

        For the ``AgentSession`` bound to this agent, which records each event (a finished
        message in its session) and passes it on to its own listeners: whoever listens to the
        agent, subscribed before the core or after, finds the event recorded. Not a
        subscription, because this call is every event's (~100 a P6 session): a subscription's
        generic call (its entry read, the grace checked, the signal or not) was most of what the
        core cost an event it skips or records. Private: a program listens with ``subscribe``.
        A second recorder (another core taking the agent over) is subscribed as a listener, as
        every core was, so the first one goes on recording until it is closed."""
        if self._recorder is not None:
            return self.subscribe(recorder, bounded=False, skip=skip)
        self._recorder, self._recorder_skips = recorder, skip

        def unbind() -> None:
            if self._recorder is recorder:
                self._recorder, self._recorder_skips = None, ()

        return unbind

    def steer(self, message: str | AgentMessage) -> None:
        """Queue a message (or a text, as a user message) for the next model call, after the
        current tool calls finish."""
        self._steering.messages.append(_as_message(message))

    def follow_up(self, message: str | AgentMessage) -> None:
        """Queue a message (or a text, as a user message) for when the agent would otherwise stop."""
        self._follow_ups.messages.append(_as_message(message))

    @property
    def steering_queue(self) -> tuple[AgentMessage, ...]:
        return tuple(self._steering.messages)

    @property
    def follow_up_queue(self) -> tuple[AgentMessage, ...]:
        return tuple(self._follow_ups.messages)

    def clear_steering_queue(self) -> None:
        self._steering.messages.clear()

    def clear_follow_up_queue(self) -> None:
        self._follow_ups.messages.clear()

    def clear_all_queues(self) -> None:
        self.clear_steering_queue()
        self.clear_follow_up_queue()

    def has_queued_messages(self) -> bool:
        return bool(self._steering.messages or self._follow_ups.messages)

    # -- runs ------------------------------------------------------------------------------------

    def abort(self) -> None:
        """Abort the current run, if any: tools see the signal, the model call ends as aborted.

        As pi's, a run is made by the ``prompt()``/``continue_()`` call itself, so
        ``asyncio.ensure_future(agent.prompt(...)); agent.abort()`` aborts that run although its
        coroutine has not taken a step yet: it still records the prompt, and ends with an
        ``aborted`` reply (a provider sends no request with an aborted signal). An abort with nothing asked holds for no
        later prompt."""
        runs = [*self._asked, *([self._active] if self._active is not None else [])]
        self._asked.clear()
        for run in runs:
            run.grace.abort()
            run.controller.abort()

    async def wait_for_idle(self) -> None:
        """Return once the current run (and its ``agent_end`` listeners) has finished."""
        if self._active is not None:
            await self._active.idle.wait()

    def reset(self) -> None:
        """Forget the transcript, the run state and both queues."""
        self._messages = []
        self._streaming_message = None
        self._pending_tool_calls = frozenset()
        self._error_message = None
        self.clear_all_queues()

    def prompt(
        self,
        prompt: str | AgentMessage | Sequence[AgentMessage],
        images: Sequence[ImageContent] | None = None,
    ) -> Coroutine[Any, Any, list[AgentMessage]]:
        """Run the agent on a text (with optional images), a message or messages; returns the
        messages the run added. (A plain function returning the coroutine: the run is made on
        the call, so an ``abort()`` before the coroutine's first step aborts it, see ``abort``.)"""
        return self._prompt(prompt, images, self._ask())

    def continue_(self) -> Coroutine[Any, Any, list[AgentMessage]]:
        """Continue from the transcript (its last message must be a user or tool-result message).

        After an assistant message, queued steering (else follow-up) messages are run instead.
        The run is made on the call, as ``prompt()``'s.
        """
        return self._continue(self._ask())

    def _ask(self) -> _ActiveRun:
        run = _ActiveRun()
        self._asked.add(run)
        return run

    async def _prompt(
        self,
        prompt: str | AgentMessage | Sequence[AgentMessage],
        images: Sequence[ImageContent] | None,
        run: _ActiveRun,
    ) -> list[AgentMessage]:
        self._asked.discard(run)
        if self._active is not None:
            raise AgentBusyError(
                "Agent is already processing a prompt. Use steer() or follow_up() to queue messages, "
                "or await wait_for_idle() first."
            )
        return await self._run_prompts(run, _prompt_messages(prompt, images))

    async def _continue(self, run: _ActiveRun) -> list[AgentMessage]:
        self._asked.discard(run)
        if self._active is not None:
            raise AgentBusyError(
                "Agent is already processing. Use steer() or follow_up() to queue messages, "
                "or await wait_for_idle() before continuing."
            )
        if not self._messages:
            raise ValueError("No messages to continue from")
        model = self._require_model()
        if self._messages[-1]["role"] == "assistant":
            if self._steering.messages:
                return await self._run_prompts(
                    run, self._steering.drain(), self._steering, skip_first_steering_poll=True
                )
            if self._follow_ups.messages:
                return await self._run_prompts(run, self._follow_ups.drain(), self._follow_ups)
            raise ValueError("Cannot continue from message role: assistant")
        return await self._lifecycle(
            run,
            lambda run: run_agent_loop_continue(
                self._context(),
                self._config(model, run, False),
                self._process,
                run.controller.signal,
                self.stream_fn,
            ),
        )

    async def _run_prompts(
        self,
        run: _ActiveRun,
        messages: list[AgentMessage],
        taken_from: _Queue | None = None,
        skip_first_steering_poll: bool = False,
    ) -> list[AgentMessage]:
        """Run from ``messages``; when they were drained from a queue, they go back to it if the
        run ends before delivering them."""
        model = self._require_model()

        def start(run: _ActiveRun) -> Awaitable[list[AgentMessage]]:
            if taken_from is not None:
                run.in_flight.extend((taken_from, message) for message in messages)
            config = self._config(model, run, skip_first_steering_poll)
            return run_agent_loop(
                messages, self._context(), config, self._process, run.controller.signal, self.stream_fn
            )

        return await self._lifecycle(run, start)

    def _require_model(self) -> ModelInfo:
        if self.model is None:
            raise ValueError("Agent.model is not set: assign a ModelInfo before prompting")
        missing = ModelInfo.__required_keys__ - self.model.keys()
        if missing:  # a record written by hand: a bare KeyError from deep in a request otherwise
            raise ModelError(
                f"the model lacks {', '.join(sorted(missing))}: take it from tether.find_model(...), or "
                "describe your own with tether.ai.models.register_model"
            )
        return self.model

    async def _lifecycle(
        self, run: _ActiveRun, start: Callable[[_ActiveRun], Awaitable[list[AgentMessage]]]
    ) -> list[AgentMessage]:
        if self._active is not None:
            raise AgentBusyError("Agent is already processing.")
        self._active = run
        self._streaming_message = None
        self._error_message = None
        try:
            return await start(run)
        finally:
            self._finish(run)

    def _finish(self, run: _ActiveRun) -> None:
        for queue in (self._steering, self._follow_ups):
            undelivered = [message for owner, message in run.in_flight if owner is queue]
            if undelivered:
                queue.put_back(undelivered)
        self._streaming_message = None
        self._pending_tool_calls = frozenset()
        self._active = None
        run.idle.set()

    def _context(self) -> AgentContext:
        return AgentContext(
            system_prompt=self.system_prompt,
            messages=list(self._messages),
            tools=list(self._tools),
            volatile_context=self.volatile_context,
        )

    def _config(self, model: ModelInfo, run: _ActiveRun, skip_first_steering_poll: bool) -> AgentLoopConfig:
        skip = [skip_first_steering_poll]

        async def steering() -> list[AgentMessage]:
            if skip[0]:
                skip[0] = False
                return []
            return self._take(self._steering, run)

        async def follow_ups() -> list[AgentMessage]:
            return self._take(self._follow_ups, run)

        options = self.options
        reasoning = None if self.thinking_level == "off" else self.thinking_level
        if options.reasoning != reasoning or options.service_tier != self.service_tier:
            # The loop copies the options for its run anyway (adding its signal): a copy here
            # only when they differ, not on every prompt.
            options = dataclasses.replace(options, reasoning=reasoning, service_tier=self.service_tier)
        return AgentLoopConfig(
            model=model,
            options=options,
            convert_to_llm=self.convert_to_llm,
            transform_context=self.transform_context,
            get_system_prompt=lambda: self.system_prompt,
            get_volatile_context=lambda: self.volatile_context,
            get_tools=lambda: self._tools,
            get_api_key=self.get_api_key,
            should_stop_after_turn=self.should_stop_after_turn,
            should_stop_before_turn=self.should_stop_before_turn,
            get_steering_messages=steering,
            get_follow_up_messages=follow_ups,
            get_continuation_messages=self.get_continuation_messages,
            tool_execution=self.tool_execution,
            before_tool_call=self.before_tool_call,
            after_tool_call=self.after_tool_call,
            instrumentation=self.instrumentation,
        )

    def _take(self, queue: _Queue, run: _ActiveRun) -> list[AgentMessage]:
        """Drain for the loop, unless the run is aborted: its next turn would never answer them."""
        if run.controller.signal.aborted:
            return []
        drained = queue.drain()
        run.in_flight.extend((queue, message) for message in drained)
        return drained

    def _process(self, event: AgentEvent) -> Awaitable[None]:
        """Reduce the event into state; the awaitable that runs every listener in order."""
        run = self._active
        if run is None:
            raise RuntimeError("Agent listener invoked outside an active run")
        # The most frequent first (a session's events: half are updates), as comparisons written
        # out: ``match`` compared a copy of the type with each case in turn, and its ``message_end``
        # comprehension made ``message`` a cell, allocated on every call.
        if event["type"] == "message_update" or event["type"] == "message_start":
            self._streaming_message = event["message"]
        elif event["type"] == "message_end":
            message = event["message"]
            self._streaming_message = None
            self._messages.append(message)
            if run.in_flight:
                kept: list[tuple[_Queue, AgentMessage]] = []
                for entry in run.in_flight:
                    if entry[1] is not message:
                        kept.append(entry)
                run.in_flight = kept
        elif event["type"] == "tool_execution_start":
            self._pending_tool_calls = self._pending_tool_calls | {event["toolCallId"]}
        elif event["type"] == "tool_execution_end":
            self._pending_tool_calls = self._pending_tool_calls - {event["toolCallId"]}
        elif event["type"] == "turn_end":
            message = event["message"]
            if message["role"] == "assistant" and message.get("errorMessage"):
                self._error_message = message.get("errorMessage")
        elif event["type"] == "agent_end":
            self._streaming_message = None
        # The recorder, then the listeners, are called here, in order, until one answers an
        # awaitable: most answer None (an ``AgentSession``'s while nobody listens to it), and a
        # coroutine to call them in cost more than the call (~100 events a P6 session).
        # ``_notify`` awaits that one and calls the rest, from the same iterator; the caller
        # awaits at once either way.
        recorder = self._recorder
        if recorder is not None and event["type"] not in self._recorder_skips:
            recorded = recorder(event)
            if recorded is not None:
                return self._notify(event, run, recorded, iter(self._listeners))
        listeners = self._listeners
        if listeners:
            kind = event["type"]
            entries = iter(listeners)
            for subscription in entries:
                if kind in subscription[3]:
                    continue
                listener, wants_signal, bounded, _ = subscription
                grace = run.grace
                if grace.hung and grace.skips(listener):
                    continue
                pending = listener(event, run.controller.signal) if wants_signal else listener(event)
                if pending is not None and inspect.isawaitable(pending):
                    bounded_pending = grace.wait(listener, pending, kind) if bounded else pending
                    return self._notify(event, run, bounded_pending, entries)
        done = run.done
        if done is None:
            done = run.done = asyncio.get_running_loop().create_future()
            done.set_result(None)
        return done

    async def _notify(
        self, event: AgentEvent, run: _ActiveRun, pending: Awaitable[object], entries: Iterator[_Entry]
    ) -> None:
        """Await ``pending``, what a listener answered, then call the listeners after it
        (``entries``, the rest of ``_process``'s) in order, awaiting what each answers."""
        signal = run.controller.signal
        grace = run.grace
        kind = event["type"]
        await pending
        for listener, wants_signal, bounded, skip in entries:
            if kind in skip or (grace.hung and grace.skips(listener)):
                continue
            answer = listener(event, signal) if wants_signal else listener(event)
            if answer is not None and inspect.isawaitable(answer):
                await (grace.wait(listener, answer, kind) if bounded else answer)


def _as_message(message: str | AgentMessage) -> AgentMessage:
    if isinstance(message, str):
        return _prompt_messages(message, None)[0]
    return message


def _prompt_messages(
    prompt: str | AgentMessage | Sequence[AgentMessage], images: Sequence[ImageContent] | None
) -> list[AgentMessage]:
    if isinstance(prompt, str):
        content: list[TextContent | ImageContent] = [{"type": "text", "text": prompt}]
        content.extend(images or ())
        message: UserMessage = {"role": "user", "content": content, "timestamp": int(time.time() * 1000)}
        return [message]
    if images:
        raise ValueError("images can only be given with a text prompt; put them in the message instead")
    if isinstance(prompt, Mapping):
        return [prompt]
    return list(prompt)
