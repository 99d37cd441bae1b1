"""``AssistantMessageEventStream``: the one shape every model call returns.

It is *pull-based*: a provider is an async generator of events, and this wrapper drives it from
the consumer's own task. No queue or background task sits between the socket and the consumer,
which keeps per-event overhead to one generator step and gives natural back-pressure.

The wrapper enforces the stream contract, whatever the provider does:

- exactly one terminal event (``done`` or ``error``), always last; nothing after it;
- an exception inside the provider becomes an ``error`` event carrying the partial content,
  never a raise;
- a source that stops without a terminal event ends with an ``error`` event;
- an abort of ``signal`` cancels the ``await`` the provider is blocked on (network read, sleep)
  and ends the stream with ``error``/``aborted``. Sources check ``signal.aborted`` themselves at
  their own safe points between events; the wrapper only interrupts a blocked wait.
- cancelling the consumer's task closes the provider (and so its HTTP response) and re-raises;
  ``result()`` then gives the aborted message.

A source may also yield a *list* of events (everything one network read produced): they are
served one by one without a generator step each (and by ``forward`` in a ``for``, without a
coroutine each), the cheapest path for token-sized events.

A source that never awaits anything but a pass through the event loop (a model played from
memory, as ``tether.testing.scripted``'s) may be a plain generator instead (``of_steps``):
it yields events, and ``WAIT`` (``None``) where a provider would wait, which the wrapper
answers with one pass through the event loop, the point where an abort can interrupt it. After
its terminal event it is run to its end (its ``finally`` blocks run, nothing more is served)
rather than closed. A steps source that builds one message in place (the scripted model) names
it (``of_steps``'s ``message``) and returns instead of yielding a terminal event, its message
final: its reader has nothing to read from an event, only to hand it over.

``forward`` is the consumer's cheap path: one coroutine reads the whole stream and hands each
event to a plain callback, instead of a coroutine per event behind ``async for``. The agent loop
reads every model response with it: with the scripted model as a steps source, P2 runs 6.4%
fewer instructions than through a coroutine per event, an async adapter per source item and a
``close`` of each finished source. The loop awaits ``pump``, the same reading as a bare
awaitable: over a steps source that builds its message, a generator-based coroutine whose waits
are its own bare ``yield`` (1.1% fewer of P2's instructions than a coroutine awaiting a ``_pass``
per wait) and whose events cost a call of the handler and a ``yield from`` of what it returns:
no terminal event to look for, no partial to note, no type to look up (5% of P2's bytecodes).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import types
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import Any, cast

from tether.ai.abort import AbortSignal
from tether.wire import (
    AssistantErrorEvent,
    AssistantMessage,
    AssistantMessageEvent,
    AssistantStreamingEvent,
    ModelInfo,
)

ABORTED_MESSAGE = "Request was aborted"

WAIT = None
"""What a steps source (``AssistantMessageEventStream.of_steps``) yields where it would wait."""

Steps = Generator[AssistantMessageEvent | None, None, None]
"""A synchronous source: events one by one, and ``WAIT``. No lists: where an asynchronous
source's list saves an ``await`` per event, a generator's next event costs less than a list's
unpacking."""

Handler = Callable[[AssistantStreamingEvent, AssistantMessage], Awaitable[object] | None]
"""A consumer's callback (``forward``): an event and the message it carries (its ``partial``),
read once by the stream, which needs it anyway; what it returns, when not ``None``, is awaited."""

_END: list[AssistantMessageEvent] = []
"""``next``'s answer for a steps source that ended (only ever compared by identity)."""


def empty_usage() -> dict[str, object]:
    return {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def new_assistant_message(model: ModelInfo) -> AssistantMessage:
    """An empty assistant message for ``model``: what ``start`` carries before any content."""
    return cast(
        AssistantMessage,
        {
            "role": "assistant",
            "content": [],
            "api": model["api"],
            "provider": model["provider"],
            "model": model["id"],
            "usage": empty_usage(),
            "stopReason": "stop",
            "timestamp": int(time.time() * 1000),
        },
    )


def fail(message: AssistantMessage, text: str, *, aborted: bool = False) -> AssistantMessage:
    """Finish ``message`` as failed (``aborted``, or ``error``) saying ``text``; ``message``. For a
    source that builds its message in place and ends by returning, where no event is sent."""
    message["stopReason"] = "aborted" if aborted else "error"
    message["errorMessage"] = text
    return message


def error_event(message: AssistantMessage, text: str, *, aborted: bool = False) -> AssistantErrorEvent:
    """Finish ``message`` as failed (``fail``) and wrap it in the terminal ``error`` event."""
    return {
        "type": "error",
        "reason": "aborted" if aborted else "error",
        "error": fail(message, text, aborted=aborted),
    }


class AssistantMessageEventStream:
    """Async-iterable of ``AssistantMessageEvent``s; ``await result()`` gives the final message."""

    # What a stream starts with, unless it says otherwise: a class default costs a new stream
    # nothing (a stream per model call), where an instance's own value costs a store.
    _steps: Steps | None = None
    """A steps source (``_source`` adapts it for ``__anext__``)."""
    _building: AssistantMessage | None = None
    """The message a steps source builds in place (``of_steps``'s ``message``): such a source is
    read directly by ``forward``."""
    _partial: AssistantMessage | None = None
    _final: AssistantMessage | None = None
    _waiting: asyncio.Task[Any] | None = None
    _abort_requested = False
    _remove_listener: Callable[[], None] | None = None

    def __init__(
        self,
        model: ModelInfo,
        source: AsyncIterator[AssistantMessageEvent]
        | AsyncIterator[AssistantMessageEvent | list[AssistantMessageEvent]],
        signal: AbortSignal | None = None,
        describe_error: Callable[[BaseException], str] | None = None,
    ) -> None:
        self._model = model
        self._source = source
        self._signal = signal
        self._describe = describe_error or _describe
        self._batch: list[AssistantMessageEvent] = []
        if signal is not None:
            self._remove_listener = signal.add_listener(self._on_abort)

    @classmethod
    def of_steps(
        cls,
        model: ModelInfo,
        steps: Steps,
        signal: AbortSignal | None = None,
        *,
        message: AssistantMessage | None = None,
    ) -> AssistantMessageEventStream:
        """A stream over a synchronous source: events, ``WAIT`` where it waits.

        With ``message``, the source builds that one message in place: every event it yields
        carries it as its ``partial``, and instead of yielding a terminal event it returns once
        the message is final, its ``stopReason`` set (and its ``errorMessage``, which makes the
        terminal event ``error`` rather than ``done``). ``forward`` then has nothing to read from
        an event but to hand it over: no terminal event to look for, no partial to note."""
        stream = cls(model, _StepsSource(steps, message), signal)
        stream._steps = steps
        if message is not None:
            stream._building = stream._partial = message
        return stream

    @classmethod
    def of_message(cls, model: ModelInfo, message: AssistantMessage) -> AssistantMessageEventStream:
        """A stream that only reports a ready-made failure (``error`` without ``start``)."""

        async def source() -> AsyncIterator[AssistantMessageEvent]:
            reason = message["stopReason"]
            if reason in ("error", "aborted"):
                yield {"type": "error", "reason": reason, "error": message}
            else:
                yield {"type": "done", "reason": reason, "message": message}

        return cls(model, source())

    def __aiter__(self) -> AssistantMessageEventStream:
        return self

    async def __anext__(self) -> AssistantMessageEvent:
        if self._final is not None:
            raise StopAsyncIteration
        batch = self._batch
        while not batch:  # served from the batch: no await, no generator step
            # Only an abort signal needs the task (to cancel the await); skip the lookup without one.
            task = asyncio.current_task() if self._signal is not None else None
            self._waiting = task
            try:
                item = await self._source.__anext__()
            except (Exception, asyncio.CancelledError) as exc:
                item = await self._failed(exc, task)
            finally:
                self._waiting = None
            if not isinstance(item, list):
                event = item
                break
            item.reverse()  # popped from the end, so the batch is served in order at O(1) each
            batch = self._batch = item
        else:
            event = batch.pop()
        if event["type"] == "done" or event["type"] == "error":
            # The source is suspended at its terminal ``yield``: close it now (releasing e.g. its
            # HTTP response) instead of leaving it to the garbage collector's finalizer task.
            await self._close_source(ended=True)
            return self._finish(event)
        self._partial = event["partial"]
        return event

    async def _failed(
        self, exc: Exception | asyncio.CancelledError, task: asyncio.Task[Any] | None
    ) -> AssistantErrorEvent:
        """What the source's exception makes of the stream, for the two readers that await the
        source (``__anext__``, ``_forward_source``) each in a ``try`` of their own: its end without
        a terminal event, a provider's bug or an abort is the terminal ``error`` event (the source
        closed); a cancellation that is not the abort's closes the source and propagates."""
        if isinstance(exc, StopAsyncIteration):
            return error_event(self._current(), "Stream ended without a final event")
        if isinstance(exc, asyncio.CancelledError):
            if self._abort_requested and task is not None and task.uncancel() == 0:
                await self._close_source()
                return error_event(self._current(), ABORTED_MESSAGE, aborted=True)
            await self._close_source()
            self._final = fail(self._current(), ABORTED_MESSAGE, aborted=True)
            raise exc
        await self._close_source()  # the contract: a provider bug is an error message, not a raise
        return error_event(self._current(), self._describe(exc))

    async def forward(self, handle: Handler) -> AssistantMessage:
        """Read the rest of the stream, calling ``handle`` with every event but the terminal one
        (and the message it carries) and awaiting what it returns (when not ``None``); the final
        message.

        The contract holds as for ``async for``; whatever ``handle`` or its awaitable raises
        propagates unchanged (the stream stays open: ``aclose`` it), so anything but a
        cancellation that escapes is the consumer's own failure.
        """
        return await self.pump(handle)

    def pump(self, handle: Handler) -> Awaitable[AssistantMessage]:
        """``forward`` as a bare awaitable, for a consumer that awaits it at once (the agent
        loop): over a steps source that builds its message, a generator-based coroutine whose waits are its own bare
        ``yield`` to the task, so each pass through the event loop resumes one frame (the
        coroutine ``forward`` adds one more, and ``await``-ing a ``_pass`` per wait another).
        Not a coroutine object: ``forward`` is the one to hand to ``create_task``."""
        steps = self._steps
        message = self._building
        if steps is None or message is None:  # (a steps source read by ``__anext__`` has no batch)
            return self._forward_source(handle)
        return self._forward_steps(steps, message, handle)

    async def _forward_source(self, handle: Handler) -> AssistantMessage:
        """``pump`` over an asynchronous source: one ``await`` per item of the source, the events
        of a list (what one network read produced) handled in place, as ``_forward_steps`` does
        (an ``__anext__`` per event cost a coroutine each). ``consumer`` says whose an exception
        is: an event without its fields is the source's (the stream ends with ``error``)."""
        item: AssistantMessageEvent | list[AssistantMessageEvent] = self._batch[::-1]  # ``__anext__``'s rest
        self._batch = []
        task = asyncio.current_task() if self._signal is not None else None
        consumer = False
        try:
            while self._final is None:
                # (pyright takes ``item`` for the list it starts as)
                for event in item if isinstance(item, list) else (item,):  # pyright: ignore[reportUnnecessaryIsInstance]
                    if event["type"] in ("done", "error"):
                        await self._close_source(ended=True)
                        self._finish(event)
                        break
                    # Not a terminal event (pyright cannot narrow from ``in``; a ``cast`` is a call).
                    partial = self._partial = event["partial"]  # pyright: ignore[reportGeneralTypeIssues, reportUnknownVariableType]
                    try:
                        pending = handle(event, partial)  # pyright: ignore[reportArgumentType, reportUnknownArgumentType]
                        if pending is not None:
                            await pending
                            if self._final is not None:  # the consumer closed the stream
                                break
                    except BaseException:  # the consumer's failure (or cancellation): not the source's
                        consumer = True
                        raise
                else:
                    self._waiting = task
                    try:
                        item = await self._source.__anext__()
                    except (Exception, asyncio.CancelledError) as exc:
                        item = await self._failed(exc, task)
                    finally:
                        self._waiting = None
        except Exception as exc:
            if consumer:
                raise
            await self._malformed(exc)
        final = self._final
        assert final is not None
        return final

    @types.coroutine
    def _forward_steps(
        self, steps: Steps, message: AssistantMessage, handle: Handler
    ) -> Generator[Any, Any, AssistantMessage]:
        """``pump`` over a steps source that builds ``message`` (``of_steps``): one ``for`` over
        the source, each event handed over where it arrives with the message it carries, and the
        terminal event made from the message when the source returns. One ``try`` covers the
        source and the consumer alike (a ``try`` costs nothing until something raises);
        ``consumer`` says whose the exception is: the source's ends the stream as the contract
        says, the consumer's (``handle`` or its awaitable) propagates unchanged. A consumer that
        closes the stream from ``handle`` closes the source (a generator), which ends the ``for``."""
        final = self._final
        if final is not None:
            return final
        task = asyncio.current_task() if self._signal is not None else None
        consumer = False
        try:
            for event in steps:
                if event is None:  # WAIT: one pass through the event loop, where an abort cuts in
                    if task is None:  # no signal: nothing to cut in
                        yield
                    else:
                        self._waiting = task
                        try:
                            yield
                        finally:
                            self._waiting = None
                    continue
                try:
                    # (never a terminal event: such a source returns instead)
                    pending = handle(event, message)  # pyright: ignore[reportArgumentType]
                    if pending is not None:
                        # A coroutine or a future as it is (``yield from`` takes both: no type to
                        # look up per event); only an awaitable that is neither fails to start,
                        # and is awaited by its ``__await__``.
                        try:
                            yield from pending  # pyright: ignore[reportGeneralTypeIssues]
                        except TypeError:
                            if hasattr(pending, "__iter__") or isinstance(pending, types.CoroutineType):
                                raise  # raised by the awaitable itself
                        else:
                            continue
                        yield from pending.__await__()
                except BaseException:  # the consumer's failure (or cancellation): not the source's
                    consumer = True
                    raise
            if self._final is None:  # (else the consumer closed the stream): the message is final
                self._final = message
                if self._remove_listener is not None:
                    self._detach()
        except asyncio.CancelledError:
            if consumer:
                raise
            _close_steps(steps)
            if self._abort_requested and task is not None and task.uncancel() == 0:
                self._finish(error_event(message, ABORTED_MESSAGE, aborted=True))
            else:
                self._final = fail(message, ABORTED_MESSAGE, aborted=True)
                raise
        except Exception as exc:  # the contract: a source's bug is an error message, not a raise
            if consumer:
                raise
            _close_steps(steps)
            self._finish(error_event(message, self._describe(exc)))
        return message  # whatever ended the stream (an abort, a closing consumer) finished it

    async def result(self) -> AssistantMessage:
        """The final message; drains the remaining events if nobody iterated them."""
        while self._final is None:
            try:
                await self.__anext__()
            except StopAsyncIteration:
                break
        assert self._final is not None
        return self._final

    async def aclose(self) -> None:
        """Stop early: close the provider (and its HTTP response) and end as aborted."""
        if self._final is None:
            await self._close_source()
            self._final = fail(self._current(), ABORTED_MESSAGE, aborted=True)
            self._detach()

    # -- internals -------------------------------------------------------------------------------

    def _on_abort(self, _reason: object) -> None:
        self._abort_requested = True
        if self._waiting is not None and self._final is None:
            self._waiting.cancel()

    def _current(self) -> AssistantMessage:
        if self._partial is None:
            self._partial = new_assistant_message(self._model)
        return self._partial

    async def _malformed(self, exc: Exception) -> None:
        """A source's event lacks its fields: a provider bug, so (for ``forward``, whose escaping
        exceptions are the consumer's) the stream ends with an ``error`` event like any other."""
        await self._close_source()
        self._finish(error_event(self._current(), self._describe(exc)))

    def _finish(self, event: AssistantMessageEvent) -> AssistantMessageEvent:
        if event["type"] == "done":
            self._final = event["message"]
        elif event["type"] == "error":
            self._final = event["error"]
        self._detach()
        return event

    def _detach(self) -> None:
        if self._remove_listener is not None:
            self._remove_listener()
            self._remove_listener = None

    async def _close_source(self, *, ended: bool = False) -> None:
        """Release the source: ``ended``, it just gave its terminal event; else it is interrupted."""
        steps = self._steps
        if steps is not None:
            _end_steps(steps) if ended else _close_steps(steps)
            return
        aclose = getattr(self._source, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):  # best effort: the stream's outcome is decided
                await aclose()


def _end_steps(steps: Steps) -> None:
    """After its terminal event, run a steps source to its end (its ``finally`` blocks run, no
    exception is thrown into it as ``close`` would); closed if it yields anything more."""
    try:
        rest = next(steps, _END)
    except Exception:  # a source failing after its terminal event changes nothing
        return
    if rest is not _END:
        _close_steps(steps)


def _close_steps(steps: Steps) -> None:
    with contextlib.suppress(Exception):
        steps.close()


def _terminal(message: AssistantMessage) -> AssistantMessageEvent:
    """The terminal event of a source that built ``message`` and returned: ``error`` when the
    message says what failed, else ``done`` (whatever its stop reason)."""
    if "errorMessage" in message:
        return {"type": "error", "reason": message["stopReason"], "error": message}  # pyright: ignore[reportReturnType]
    return {"type": "done", "reason": message["stopReason"], "message": message}  # pyright: ignore[reportReturnType]


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class _StepsSource:
    """A steps source as an asynchronous one, for ``__anext__``: ``WAIT`` is a bare ``yield`` to
    the task (one pass of the event loop; a cancellation is thrown in there), anything else the
    next item. An async generator did the same, but each of its items cost a ``StopIteration``."""

    __slots__ = ("_message", "_steps")

    def __init__(self, steps: Steps, message: AssistantMessage | None) -> None:
        self._steps = steps
        self._message = message

    def __aiter__(self) -> _StepsSource:
        return self

    @types.coroutine
    def __anext__(self) -> Generator[None, None, AssistantMessageEvent]:
        for step in self._steps:
            if step is None:  # WAIT
                yield
            else:
                return step
        if self._message is not None:  # a source building its message ends by returning
            return _terminal(self._message)
        raise StopAsyncIteration
