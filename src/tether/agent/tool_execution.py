"""Running the tool calls of one assistant message: prepare, execute, finalize, report.

Each call goes through the same steps as in the reference:

1. ``tool_execution_start``;
2. *prepare*: find the tool (``Tool NAME not found``), apply ``prepare_arguments``, validate the
   arguments, ask ``before_tool_call`` (a block gives ``Tool execution was blocked`` or the hook's
   reason). A failure here is an *immediate* error result: the tool never runs;
3. *execute*: ``execute`` raises to fail; partial results sent through ``on_update`` become
   ``tool_execution_update`` events, emitted in order and all before the call's end event;
4. *finalize*: ``after_tool_call`` may override the result field by field; if it raises, its
   message becomes the error result;
5. ``tool_execution_end``, then the tool-result message (``message_start``/``message_end``).

Sequential mode runs one call through all steps before the next. Parallel mode prepares every
call in source order (immediate results report their end at once), then executes the prepared
ones concurrently: end events come in completion order, result messages in source order.
A tool whose ``execution_mode`` is ``sequential`` makes the whole batch sequential.

Beyond the reference: the calls of a response cut by the output token limit (``length``) are not
run at all (their arguments may be truncated); each gets an error result saying so.

A call is one record (``_Call``) from its start event to its result message: each step fills in
what it found (the tool and arguments, the result) and its ``stage`` says which report it is
waiting for. The reference builds an object per step; a Python object per step and a coroutine
per step cost more than the events themselves (P2: three instant tools a turn).

A failing listener stops the batch with ``ListenerError``; the batch then cancels the calls still
running, so no task outlives it, and ``BatchReport`` says what went out. Events go straight to
the sink (no wrapper coroutine per event): the bookkeeping a failure needs is written into the
batch's ``BatchReport`` before each event is awaited, and the listener's exception is wrapped
where it is awaited.

A little past our usual ~600 lines: the five steps, both modes and the failure bookkeeping share
one batch's state, and the order of their events is what the conformance traces check.

This module loads with a run's first tool call (``loop`` imports it there): a run that only
answers never pays for it.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
import types
from collections.abc import Awaitable, Coroutine, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from tether.agent.eager import Suspended, start_eagerly
from tether.agent.hooks import AfterToolCallContext, BeforeToolCallContext
from tether.agent.tool import AgentTool, AgentToolResult
from tether.agent.types import (
    AgentContext,
    AgentLoopConfig,
    Emit,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
)
from tether.agent.validation import ArgumentsValidator, arguments_validator
from tether.ai.abort import AbortSignal
from tether.errors import TetherError, ToolError
from tether.wire import AssistantMessage, ToolCall, ToolResultMessage

if TYPE_CHECKING:
    from tether.telemetry.spans import RunTrace

BLOCKED = "Tool execution was blocked"


@dataclass(slots=True)
class ToolBatch:
    messages: list[ToolResultMessage]
    terminate: bool
    """True when every result of the batch asked to stop the run after it."""


class ListenerError(TetherError):
    """The event sink raised ``cause`` while the batch reported; the batch stopped there."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(str(cause))
        self.cause = cause


@dataclass(slots=True)
class BatchReport:
    """What a batch has reported so far, so that a run whose listener failed mid-batch can give
    every call exactly one end and one result (``loop``). Each entry is written before its event
    is awaited: an event whose listener raised counts as sent."""

    delivered: list[ToolResultMessage] = field(default_factory=lambda: [])
    """Result messages, each from its ``message_start`` on, in the order they went out."""
    started: dict[str, ToolExecutionEndEvent | None] = field(default_factory=lambda: {})
    """Calls whose ``tool_execution_start`` went out: ``None``, then their end event once sent."""
    open_result: ToolResultMessage | None = None
    """The result whose ``message_start`` went out and whose ``message_end`` did not."""


ABORT_GRACE = 1.0
"""Seconds a tool may take to stop once the run is aborted. One that has not returned by then
is left behind: an async tool is cancelled, a plain function's thread finishes on its own, and
whatever it returns later is dropped. Its call ends at once with an error result saying so, so an
abort (and ``close``) returns within about this long whatever the tool does with its signal."""


class ToolAbandonedError(ToolError):
    """A tool kept running past ``ABORT_GRACE`` after the run was aborted."""


@types.coroutine
def until_abort_grace(
    work: Awaitable[AgentToolResult[Any]], signal: AbortSignal | None
) -> Generator[Any, Any, AgentToolResult[Any]]:
    """``await work``, but give up on it ``ABORT_GRACE`` seconds after ``signal`` aborts.

    The tool runs in the awaiting task, as it does without a signal, and in a copy of the
    context, as a task would run it: its first step is taken here, so an instant tool ends there
    (no task, no pass of the event loop: the reference's ``execute`` starts synchronously too).
    One that suspends is driven from here, step by step, which is what lets us leave it:

    - its abort starts the grace; at its end, the future the tool waits on is cancelled (what
      cancelling a task does), so the tool gets a ``CancelledError`` and the call fails with
      ``ToolAbandonedError``, whatever the tool makes of it (a tool waiting on a task or a
      ``gather``, which a cancellation may never end, is waited on through a plain future
      that the grace cancels too: ``_Grace.relay``);
    - a ``CancelledError`` thrown in from outside (the run or the batch cancelled) goes to the
      tool and then propagates;
    - a tool that goes on after either (it ignores the cancellation, or awaits its cleanup)
      continues in a task of its own (``_carry_on``), left behind: we do not wait for it and
      drop whatever it returns. Its own ``asyncio.timeout`` or cancel scope still works: a
      cancellation that the tool took back (``uncancel``) is its own business.

    A task per call (the previous design) cost P2 with a signal 1.8x the instructions of P2
    without one: a task, two passes of the event loop and a listener per instant tool call."""
    if signal is None:
        return (yield from _iterate(work))
    coro: Coroutine[Any, Any, AgentToolResult[Any]] = (
        cast("Coroutine[Any, Any, AgentToolResult[Any]]", work)
        if isinstance(work, types.CoroutineType)
        else _as_coroutine(work)
    )
    context = contextvars.copy_context()
    run = context.run
    try:
        yielded = run(coro.send, None)
    except StopIteration as stop:
        result: AgentToolResult[Any] = stop.value
        return result
    # Suspended: from here on the abort counts.
    task = asyncio.current_task()
    assert task is not None, "tools run in a task"
    cancelling = task.cancelling()
    """Cancellations asked of the task before the tool suspended: more are asked from outside."""
    grace = _Grace(asyncio.get_running_loop())
    remove = signal.add_listener(grace.on_abort)
    try:
        while True:
            grace.waiting = yielded
            if yielded is None or type(yielded) is asyncio.Future:
                grace.relayed = None
            else:  # a task (or a gathering): cancelling it may not end it, see ``_Grace.relay``
                yielded = grace.relay(yielded)
            try:
                sent = yield yielded
            except GeneratorExit:  # this awaitable is being closed: close the tool (as PEP 380)
                run(coro.close)
                raise
            except asyncio.CancelledError as exc:
                if grace.abandoned:  # the grace ended: the future it waited on was cancelled
                    break
                if grace.relayed is not None:  # what cancelling the task would have cancelled
                    grace.waiting.cancel()
                asked = task.cancelling()
                try:
                    yielded = run(coro.throw, exc)
                except StopIteration as stop:
                    if task.cancelling() < asked:  # its own timeout, taken back: its result
                        return stop.value
                    raise exc from None  # it returned instead: the cancellation still stands
                if task.cancelling() >= asked:  # it ignores a cancellation that is not its own
                    _carry_on(coro, context, yielded)
                    raise
            except BaseException as exc:  # thrown into the task: the tool's to handle
                yielded = run(coro.throw, exc)
            else:
                if grace.abandoned:  # what it waited for came as the grace ended
                    break
                yielded = run(coro.send, sent)
    except StopIteration as stop:
        return stop.value
    finally:
        remove()
        grace.close()
    # The grace ended before the tool did: it is cancelled (as its task would have been), and
    # left behind if it goes on.
    try:
        yielded = run(coro.throw, asyncio.CancelledError())
    except BaseException:  # it ended: whatever it said is dropped
        pass
    else:
        _carry_on(coro, context, yielded)
    if task.cancelling() > cancelling:  # the task was cancelled meanwhile: that comes first
        raise asyncio.CancelledError
    raise ToolAbandonedError(ABANDONED)


ABANDONED = (
    f"Tool execution was aborted (the tool did not stop within {ABORT_GRACE:g} s; its late result is dropped)"
)


class _Grace:
    """The abort grace of one suspended tool call: started by the abort, it cancels the future
    the tool waits on when it ends (``abandoned``), which wakes the task driving the tool."""

    __slots__ = ("abandoned", "loop", "relayed", "timer", "waiting")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.waiting: Any = None
        """What the tool last handed the task: the future it waits on, or ``None`` (a bare
        yield: it is continued on the next pass, where ``abandoned`` is seen)."""
        self.relayed: asyncio.Future[None] | None = None
        """The future the task waits on instead of ``waiting``, when that is not a plain one."""
        self.abandoned = False
        self.timer: asyncio.TimerHandle | None = None

    def relay(self, waiting: Any) -> asyncio.Future[None]:
        """A plain future done when ``waiting`` is, for the task to wait on. A cancelled task
        (or ``gather``) ends only once what it runs has stopped, maybe never: the task driving
        the tool would never wake to leave it. A plain future (what ``sleep``, events, queues,
        streams and threads hand back) ends when cancelled, and is waited on as it is."""
        relayed = self.loop.create_future()
        relayed._asyncio_future_blocking = True  # pyright: ignore[reportPrivateUsage] (as ``await`` sets it)

        def done(_: object) -> None:
            if not relayed.done():
                relayed.set_result(None)

        waiting.add_done_callback(done)
        self.relayed = relayed
        return relayed

    def on_abort(self, _: object) -> None:
        self.timer = self.loop.call_later(ABORT_GRACE, self.give_up)

    def give_up(self) -> None:
        self.abandoned = True
        if self.waiting is not None:  # a future (anything a task accepts has ``cancel``)
            self.waiting.cancel()
        if self.relayed is not None:
            self.relayed.cancel()

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()


def _carry_on(coro: Coroutine[Any, Any, Any], context: contextvars.Context, yielded: Any) -> None:
    """Leave a tool that is still running to a task of its own, whose outcome nobody reads."""
    task = asyncio.get_running_loop().create_task(_continue(Suspended(coro, context, yielded)))
    task.add_done_callback(_forget)


async def _continue(suspended: Suspended[Any]) -> None:
    await suspended.resume()


def _iterate(work: Awaitable[Any]) -> Generator[Any, Any, Any]:
    return work.__await__()


async def _as_coroutine(work: Awaitable[AgentToolResult[Any]]) -> AgentToolResult[Any]:
    """A tool's ``execute`` that returned another awaitable than a coroutine (a future)."""
    return await work


def _forget(task: asyncio.Future[Any]) -> None:
    """Read an abandoned tool's outcome so asyncio does not log it as never retrieved."""
    if not task.cancelled():
        task.exception()


def describe_error(exc: BaseException) -> str:
    """The text of an error result: the exception's message, or its type when it has none."""
    return str(exc) or type(exc).__name__


def error_result(text: str) -> AgentToolResult[Any]:
    return AgentToolResult(content=[{"type": "text", "text": text}], details={})


def tool_result_message(call: ToolCall, result: AgentToolResult[Any], is_error: bool) -> ToolResultMessage:
    message: ToolResultMessage = {
        "role": "toolResult",
        "toolCallId": call["id"],
        "toolName": call["name"],
        "content": result.content,
        "isError": is_error,
        "timestamp": int(time.time() * 1000),
    }
    message["details"] = result.details
    return message


async def emit_tool_results(messages: Iterable[ToolResultMessage], emit: Emit, report: BatchReport) -> None:
    """Report result messages, in order; each counts as delivered from its ``message_start`` on."""
    delivered = report.delivered
    try:
        for message in messages:
            delivered.append(message)
            report.open_result = message
            await emit({"type": "message_start", "message": message})
            report.open_result = None
            await emit({"type": "message_end", "message": message})
    except Exception as exc:
        raise ListenerError(exc) from exc


# The stages of a call (``_Call.stage``): what is left to report of it.
_RUNNABLE = 0
"""Prepared: its tool is to run (or running)."""
_EXECUTED = 1
"""It has its result (executed, or an immediate one); its end is not reported."""
_REPORTED = 2
"""Its end is reported, or being reported: whoever sets this reports it."""

_PENDING: AgentToolResult[Any] = AgentToolResult(content=[])
"""The result of a call that has none yet (never reported: a call is reported from ``_EXECUTED``)."""


class _Call:
    """One tool call of a batch, from its start event to its result message: preparing fills in
    its tool and arguments (or an immediate ``result``), executing and finalizing its ``result``,
    and ``stage`` says what is left to report. ``update`` is the tool's ``on_update``."""

    __slots__ = ("args", "batch", "call", "ended", "is_error", "result", "stage", "task", "tool", "updates")

    def __init__(self, batch: _Batch, call: ToolCall, tool: AgentTool | None) -> None:
        self.batch = batch
        self.call = call
        self.tool = tool
        self.args: Any = None
        self.result = _PENDING
        self.is_error = False
        self.stage = _RUNNABLE
        self.ended = False
        """The tool returned: updates it sends from now on are dropped."""
        self.updates: list[asyncio.Task[None]] | None = None
        """One task per update sent (most tools send none): each emits its event once the
        previous one is out, so updates keep their order and the tool never waits for a listener."""
        self.task: asyncio.Task[None] | None = None
        """The task it runs in, when a concurrent batch could not start it in its own."""

    def fail(self, text: str) -> None:
        self.result = error_result(text)
        self.is_error = True

    def update(self, partial: AgentToolResult[Any]) -> None:
        if self.ended:  # sent after the tool returned: dropped
            return
        call = self.call
        event: ToolExecutionUpdateEvent = {
            "type": "tool_execution_update",
            "toolCallId": call["id"],
            "toolName": call["name"],
            "args": call["arguments"],
            "partialResult": partial,
        }
        if self.updates is None:
            self.updates = []
        previous = self.updates[-1] if self.updates else None
        task = asyncio.get_running_loop().create_task(_send_update(previous, event, self.batch.emit))
        self.updates.append(task)
        starting = self.batch.starting
        if starting is not None:
            starting.append(task)

    async def close_updates(self) -> None:
        """Wait until every update sent is reported (a listener's failure propagates)."""
        assert self.updates is not None
        try:
            await self.updates[-1]
        finally:
            for task in self.updates:
                task.cancel()
            await asyncio.gather(*self.updates, return_exceptions=True)


async def _send_update(
    previous: asyncio.Task[None] | None, event: ToolExecutionUpdateEvent, emit: Emit
) -> None:
    if previous is not None:
        await previous
    try:
        await emit(event)
    except Exception as exc:
        raise ListenerError(exc) from exc


async def execute_tool_calls(
    context: AgentContext,
    assistant: AssistantMessage,
    calls: Sequence[ToolCall],
    config: AgentLoopConfig,
    signal: AbortSignal | None,
    emit: Emit,
    report: BatchReport,
    trace: RunTrace | None = None,
) -> ToolBatch:
    """Run ``calls`` and report them through ``emit``, writing what went out into ``report`` (new
    for the batch), so a caller whose listener failed mid-batch knows which calls are done.
    With ``trace``, each tool's span is the current one while the tool executes."""
    tools = {t.name: t for t in context.tools}
    sequential = config.tool_execution == "sequential"
    for call in calls:  # plain loops here and below: a generator costs a frame per batch
        if not sequential and (t := tools.get(call["name"])) is not None and t.execution_mode == "sequential":
            sequential = True
    run = _Batch(context, assistant, tools, config, signal, emit, report, trace)
    records = await (run.sequential(calls) if sequential else run.parallel(calls))
    terminate = bool(records)
    for record in records:
        if record.result.terminate is not True:
            terminate = False
    return ToolBatch(messages=list(report.delivered), terminate=terminate)


class _Batch:
    """The state shared by the calls of one batch."""

    __slots__ = (
        "assistant",
        "config",
        "context",
        "emit",
        "report",
        "signal",
        "starting",
        "tools",
        "trace",
        "validators",
    )

    def __init__(
        self,
        context: AgentContext,
        assistant: AssistantMessage,
        tools: dict[str, AgentTool],
        config: AgentLoopConfig,
        signal: AbortSignal | None,
        emit: Emit,
        report: BatchReport,
        trace: RunTrace | None,
    ) -> None:
        self.context = context
        self.assistant = assistant
        self.tools = tools
        self.config = config
        self.signal = signal
        self.emit = emit
        self.report = report
        self.trace = trace
        self.validators: dict[str, ArgumentsValidator] = {}
        """The validator of each tool called so far (a batch often calls one tool several times)."""
        self.starting: list[asyncio.Task[None]] | None = None
        """While a concurrent batch starts its calls: the update tasks they create meanwhile,
        to be reported before any call's end."""

    # Events are awaited where they happen, each noted in the report first: a coroutine of our
    # own per event (or per result message) cost more than the events themselves.

    def _emit_start(self, call: ToolCall) -> Awaitable[None]:
        """Note the start in the report and hand back the listener's awaitable (to be awaited)."""
        self.report.started[call["id"]] = None
        return self.emit(
            {
                "type": "tool_execution_start",
                "toolCallId": call["id"],
                "toolName": call["name"],
                "args": call["arguments"],
            }
        )

    def _emit_end(self, record: _Call) -> Awaitable[None]:
        """Note the end in the report and hand back the listener's awaitable (to be awaited)."""
        call = record.call
        event: ToolExecutionEndEvent = {
            "type": "tool_execution_end",
            "toolCallId": call["id"],
            "toolName": call["name"],
            "result": record.result,
            "isError": record.is_error,
        }
        self.report.started[call["id"]] = event
        return self.emit(event)

    async def sequential(self, calls: Sequence[ToolCall]) -> list[_Call]:
        records: list[_Call] = []
        for call in calls:
            try:
                await self._emit_start(call)
            except Exception as exc:
                raise ListenerError(exc) from exc
            record = self._check(call) if self.config.before_tool_call is None else await self._prepare(call)
            if record.stage == _RUNNABLE:
                await self._execute(record)
                await self._report(record)
            else:
                record.stage = _REPORTED
                try:
                    await self._emit_end(record)
                except Exception as exc:
                    raise ListenerError(exc) from exc
            await emit_tool_results(
                (tool_result_message(call, record.result, record.is_error),), self.emit, self.report
            )
            records.append(record)
        return records

    async def parallel(self, calls: Sequence[ToolCall]) -> list[_Call]:
        records: list[_Call] = []
        runnable = 0
        for call in calls:
            try:
                await self._emit_start(call)
            except Exception as exc:
                raise ListenerError(exc) from exc
            record = self._check(call) if self.config.before_tool_call is None else await self._prepare(call)
            if record.stage == _RUNNABLE:
                runnable += 1
            else:
                record.stage = _REPORTED
                try:
                    await self._emit_end(record)
                except Exception as exc:
                    raise ListenerError(exc) from exc
            records.append(record)

        if runnable > 1:
            await self._run_concurrently(records)
        elif runnable:  # nothing to run concurrently: spare the task
            for record in records:
                if record.stage == _RUNNABLE:
                    await self._execute(record)
                    await self._report(record)
        await emit_tool_results(
            [tool_result_message(r.call, r.result, r.is_error) for r in records], self.emit, self.report
        )
        return records

    async def _run_concurrently(self, records: list[_Call]) -> None:
        """Every call starts (runs up to its first suspension, in source order) and the updates
        sent meanwhile are reported before any call reports its end, as in the reference, where
        each ``execute`` starts synchronously and an update is emitted when it is sent. Calls
        that finished while starting then report their ends in source order; the others report
        theirs as they finish.

        Calls start *eagerly*, in this task (``eager``), as the reference's ``execute`` does: a
        call that ends at once (an instant tool) costs no task and no pass of the event loop.
        The first call that does not end at once stays in this task (whatever it tied to its
        task, a timeout or a cancel scope, stays true), which continues it at once; the calls
        after it start as tasks, and a task of its own settles the batch (``_settle``). In the
        P2 benchmark (three instant tools per turn) this removed three tasks and a ``sleep(0)``
        per turn: 8% of the run's instructions (callgrind, 186 M -> 170 M per run), 12% of its
        CPU time (interleaved runs)."""
        starting: list[asyncio.Task[None]] = []
        self.starting = starting
        bound: _Call | None = None
        suspended: Suspended[None] | None = None
        tasks: list[asyncio.Task[None]] = []
        settle: asyncio.Task[None] | None = None
        try:
            for record in records:
                if record.stage != _RUNNABLE:
                    continue
                if suspended is not None:  # a call before it suspended: it starts as a task
                    record.task = asyncio.get_running_loop().create_task(self._run_in_batch(record))
                    tasks.append(record.task)
                    continue
                suspended = start_eagerly(self._execute(record))
                if suspended is not None:
                    bound = record
            if suspended is None and not tasks and not starting:
                # Every call ended while starting (instant tools): their ends, in source order.
                self.starting = None
                after = self.config.after_tool_call
                for record in records:
                    if record.stage == _EXECUTED:  # ``_report``, without a coroutine per call
                        record.stage = _REPORTED
                        if after is not None:
                            await self._finalize(record)
                        try:
                            await self._emit_end(record)
                        except Exception as exc:
                            raise ListenerError(exc) from exc
                return
            if suspended is None:
                await self._settle(records, tasks)
            else:
                assert bound is not None
                if tasks or starting:
                    settle = asyncio.get_running_loop().create_task(self._settle(records, tasks))
                else:
                    await self._settle(records, tasks)
                finished = await self._finish(suspended, settle)
                # ``_settle`` has started every call meanwhile, or it reports this one's end
                if finished and self.starting is None:  # pyright: ignore[reportUnnecessaryComparison]
                    await self._report(bound)
                if settle is not None:
                    await settle
        finally:  # a failed sibling, or our own cancellation: nothing may keep running
            self.starting = None
            if suspended is not None:
                await suspended.close()
            if tasks or settle is not None:
                running: list[asyncio.Task[Any]] = [*tasks, settle] if settle is not None else [*tasks]
                unfinished = [task for task in running if not task.done()]
                for task in unfinished:
                    task.cancel()
                if unfinished:
                    await asyncio.gather(*unfinished, return_exceptions=True)
        for task in tasks:
            failure = None if task.cancelled() else task.exception()
            if failure is not None:
                raise failure

    async def _finish(self, suspended: Suspended[None], settle: asyncio.Task[None] | None) -> bool:
        """Continue the call that suspended while starting to its end; ``False`` when ``settle``
        failed meanwhile (a sibling or a listener did), which cancels it, as the batch cancels
        every call still running when one fails."""
        task = asyncio.current_task()
        if settle is None or task is None:
            await suspended.resume()
            return True
        failed = False

        def on_settled(settled: asyncio.Task[None]) -> None:
            nonlocal failed
            if not settled.cancelled() and settled.exception() is not None:
                failed = True
                task.cancel()

        settle.add_done_callback(on_settled)
        try:
            await suspended.resume()
        except asyncio.CancelledError:
            if failed and task.uncancel() == 0:
                return False
            raise
        finally:
            settle.remove_done_callback(on_settled)
        if failed:  # it ignored the cancellation: the failure still ends the batch
            task.uncancel()
            return False
        return True

    async def _settle(self, records: list[_Call], tasks: list[asyncio.Task[None]]) -> None:
        """Let the tasks start, report the updates sent while starting, then the ends of the calls
        that finished meanwhile (in source order); then wait for the tasks (or the first failure)."""
        if tasks:
            await asyncio.sleep(0)  # the tasks take their first steps
        if self.starting:
            await asyncio.wait(self.starting)
        self.starting = None
        for record in records:
            task = record.task
            if task is not None and task.done() and not task.cancelled() and task.exception() is not None:
                raise task.exception()  # pyright: ignore[reportGeneralTypeIssues] (not None)
            if record.stage == _EXECUTED:
                await self._report(record)
        for task in tasks:
            if not task.done():
                await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
                break
        for task in tasks:
            failure = None if task.cancelled() else task.exception()
            if failure is not None:
                raise failure

    async def _run_in_batch(self, record: _Call) -> None:
        """A call of a concurrent batch in a task of its own: one that finished before every call
        started leaves reporting its end to the batch (``_settle``)."""
        await self._execute(record)
        if self.starting is None:
            await self._report(record)

    async def _execute(self, record: _Call) -> None:
        """Run the tool; its updates are reported (in order) by the time this returns. It
        returns nothing (its outcome goes into ``record``): ``start_eagerly`` needs no exception
        to learn that a call ended at once."""
        call, tool, signal = record.call, record.tool, self.signal
        assert tool is not None
        try:
            if self.trace is not None:  # no ``with`` a null context: two calls per tool call spared
                with self.trace.tool_running(call["id"]):
                    result = await until_abort_grace(
                        tool.execute(call["id"], record.args, signal, record.update), signal
                    )
            elif signal is None:  # nothing to give up on: the tool is awaited as it is
                result = await tool.execute(call["id"], record.args, None, record.update)
            else:
                result = await until_abort_grace(
                    tool.execute(call["id"], record.args, signal, record.update), signal
                )
            if isinstance(result, AgentToolResult):  # pyright: ignore[reportUnnecessaryIsInstance]
                record.result = result
            else:
                record.fail(f"Tool {call['name']} returned {type(result).__name__}, not an AgentToolResult")
        except Exception as exc:
            record.fail(describe_error(exc))
        except asyncio.CancelledError as exc:
            current = asyncio.current_task()
            if current is None or current.cancelling():
                raise  # the run itself is cancelled
            # The tool raised it while nobody cancelled the run (e.g. it read a cancelled task's
            # result): a failure of the tool like any other, not the end of the run.
            record.fail(describe_error(exc))
        finally:
            record.ended = True
            if record.updates is not None:
                await record.close_updates()
        record.stage = _EXECUTED

    async def _report(self, record: _Call) -> None:
        """Finalize (``after_tool_call``) and report the end."""
        record.stage = _REPORTED
        if self.config.after_tool_call is not None:
            await self._finalize(record)
        try:
            await self._emit_end(record)
        except Exception as exc:
            raise ListenerError(exc) from exc

    # -- the steps of one call ---------------------------------------------------------------

    async def _prepare(self, call: ToolCall) -> _Call:
        """``_check``, then ``before_tool_call`` (callers without the hook call ``_check`` alone)."""
        record = self._check(call)
        before = self.config.before_tool_call
        if before is None or record.stage != _RUNNABLE:
            return record
        try:
            decision = await before(
                BeforeToolCallContext(self.assistant, call, record.args, self.context), self.signal
            )
        except Exception as exc:
            record.fail(describe_error(exc))
            record.stage = _EXECUTED
            return record
        if decision is not None and decision.block:
            record.fail(decision.reason or BLOCKED)
            record.stage = _EXECUTED
        return record

    def _check(self, call: ToolCall) -> _Call:
        """The synchronous part of preparing: find the tool, prepare and validate the arguments.
        A failure is an immediate result (stage ``_EXECUTED``)."""
        agent_tool = self.tools.get(call["name"])
        record = _Call(self, call, agent_tool)
        if agent_tool is None:
            record.fail(f"Tool {call['name']} not found")
            record.stage = _EXECUTED
            return record
        try:
            arguments: Any = call["arguments"]
            if agent_tool.prepare_arguments is not None:
                arguments = agent_tool.prepare_arguments(arguments)
            validate = self.validators.get(agent_tool.name)
            if validate is None:
                validate = self.validators[agent_tool.name] = arguments_validator(agent_tool)
            record.args = validate(arguments)
        except Exception as exc:
            record.fail(describe_error(exc))
            record.stage = _EXECUTED
        return record

    async def _finalize(self, record: _Call) -> None:
        """Apply ``after_tool_call`` to the call's result (callers without the hook skip this)."""
        after = self.config.after_tool_call
        assert after is not None
        result, is_error = record.result, record.is_error
        try:
            override = await after(
                AfterToolCallContext(
                    self.assistant, record.call, record.args, result, is_error, self.context
                ),
                self.signal,
            )
        except Exception as exc:
            record.fail(describe_error(exc))
            return
        if override is None:
            return
        record.result = AgentToolResult(
            content=override.content if override.content is not None else result.content,
            details=override.details if override.details is not None else result.details,
            terminate=override.terminate if override.terminate is not None else result.terminate,
        )
        if override.is_error is not None:
            record.is_error = override.is_error


def _start_event(call: ToolCall) -> ToolExecutionStartEvent:
    return {
        "type": "tool_execution_start",
        "toolCallId": call["id"],
        "toolName": call["name"],
        "args": call["arguments"],
    }


TRUNCATED_CALL = (
    'Tool call "{name}" was not executed: the response hit the output token limit (stopReason "length") '
    "and cut it off, so its arguments may be incomplete. Send the call again, smaller if needed."
)


async def reject_truncated_calls(calls: list[ToolCall], emit: Emit, report: BatchReport) -> ToolBatch:
    """The tool calls of a response cut by the token limit are not run: each gets an error result."""
    for call in calls:
        result = error_result(TRUNCATED_CALL.format(name=call["name"]))
        end: ToolExecutionEndEvent = {
            "type": "tool_execution_end",
            "toolCallId": call["id"],
            "toolName": call["name"],
            "result": result,
            "isError": True,
        }
        report.started[call["id"]] = None
        try:
            await emit(_start_event(call))
            report.started[call["id"]] = end
            await emit(end)
        except Exception as exc:
            raise ListenerError(exc) from exc
        await emit_tool_results((tool_result_message(call, result, True),), emit, report)
    return ToolBatch(messages=list(report.delivered), terminate=False)
