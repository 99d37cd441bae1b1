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
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias, cast

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
from tether.agent.validation import validate_tool_arguments
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


@dataclass(slots=True)
class _Prepared:
    call: ToolCall
    tool: AgentTool
    args: Any


@dataclass(slots=True)
class _Finalized:
    call: ToolCall
    result: AgentToolResult[Any]
    is_error: bool


@dataclass(slots=True)
class _Executed:
    """A call of a concurrent batch that ran before the batch finished starting: not reported yet."""

    prepared: _Prepared
    outcome: _Finalized


@dataclass(slots=True)
class _Bound:
    """The call of a concurrent batch that did not end while starting eagerly: the batch's own
    task continues it (see ``eager``)."""

    index: int
    prepared: _Prepared
    suspended: Suspended[_Finalized]

    async def finish(self, settle: asyncio.Task[None] | None) -> _Finalized | None:
        """Its outcome; ``None`` when ``settle`` failed meanwhile (a sibling or a listener did),
        which cancels it, as the batch cancels every call still running when one fails."""
        task = asyncio.current_task()
        if settle is None or task is None:
            return await self.suspended.resume()
        failed = False

        def on_settled(settled: asyncio.Task[None]) -> None:
            nonlocal failed
            if not settled.cancelled() and settled.exception() is not None:
                failed = True
                task.cancel()

        settle.add_done_callback(on_settled)
        try:
            outcome = await self.suspended.resume()
        except asyncio.CancelledError:
            if failed and task.uncancel() == 0:
                return None
            raise
        finally:
            settle.remove_done_callback(on_settled)
        if failed:  # it ignored the cancellation: the failure still ends the batch
            task.uncancel()
            return None
        return outcome


_Entry: TypeAlias = _Finalized | _Executed | _Bound | asyncio.Task[_Finalized | _Executed]
"""A call of a concurrent batch, from its start to its end report."""


@dataclass(slots=True)
class _Starting:
    """A concurrent batch while its calls start: the update tasks they create meanwhile."""

    done: bool = False
    updates: list[asyncio.Task[None]] = field(default_factory=lambda: [])


ABORT_GRACE = 1.0
"""Seconds a tool may take to stop once the run is aborted. One that has not returned by then
is left behind: an async tool is cancelled, a plain function's thread finishes on its own, and
whatever it returns later is dropped. Its call ends at once with an error result saying so, so an
abort (and ``close``) returns within about this long whatever the tool does with its signal."""


class ToolAbandonedError(ToolError):
    """A tool kept running past ``ABORT_GRACE`` after the run was aborted."""


async def until_abort_grace(
    work: Awaitable[AgentToolResult[Any]], signal: AbortSignal | None
) -> AgentToolResult[Any]:
    """``await work``, but give up on it ``ABORT_GRACE`` seconds after ``signal`` aborts."""
    if signal is None:
        return await work
    task = asyncio.ensure_future(work)
    aborted: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def wake(_: object) -> None:
        if not aborted.done():
            aborted.set_result(None)

    remove = signal.add_listener(wake)
    try:
        await asyncio.wait((task, aborted), return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            await asyncio.wait((task,), timeout=ABORT_GRACE)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        remove()
    if task.done():
        return task.result()
    task.cancel()
    task.add_done_callback(_forget)
    raise ToolAbandonedError(
        f"Tool execution was aborted (the tool did not stop within {ABORT_GRACE:g} s; "
        "its late result is dropped)"
    )


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


async def emit_tool_result(message: ToolResultMessage, emit: Emit, report: BatchReport) -> None:
    """Report one result message; it counts as delivered from its ``message_start`` on."""
    report.delivered.append(message)
    report.open_result = message
    try:
        await emit({"type": "message_start", "message": message})
        report.open_result = None
        await emit({"type": "message_end", "message": message})
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
    finalized = await (run.sequential(calls) if sequential else run.parallel(calls))
    terminate = bool(finalized)
    for outcome in finalized:
        if outcome.result.terminate is not True:
            terminate = False
    return ToolBatch(messages=list(report.delivered), terminate=terminate)


class _Batch:
    """The state shared by the calls of one batch."""

    __slots__ = ("assistant", "config", "context", "emit", "report", "signal", "tools", "trace")

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

    # Events are awaited where they happen, each noted in the report first: a coroutine of our
    # own per event (or per result message) cost more than the events themselves.

    def _emit_end(self, finalized: _Finalized) -> Awaitable[None]:
        """Note the end in the report and hand back the listener's awaitable (to be awaited)."""
        event = _end_event(finalized)
        self.report.started[finalized.call["id"]] = event
        return self.emit(event)

    async def _emit_results(self, done: list[_Finalized]) -> None:
        """The result messages of ``done``, in order; each counts as delivered from its start on."""
        report, emit = self.report, self.emit
        for finalized in done:
            message = tool_result_message(finalized.call, finalized.result, finalized.is_error)
            await emit_tool_result(message, emit, report)

    async def sequential(self, calls: Sequence[ToolCall]) -> list[_Finalized]:
        done: list[_Finalized] = []
        for call in calls:
            event = _start_event(call)
            self.report.started[call["id"]] = None
            try:
                await self.emit(event)
            except Exception as exc:
                raise ListenerError(exc) from exc
            prepared = (
                self._check(call) if self.config.before_tool_call is None else await self._prepare(call)
            )
            if isinstance(prepared, _Finalized):
                finalized = prepared
                try:
                    await self._emit_end(finalized)
                except Exception as exc:
                    raise ListenerError(exc) from exc
            else:
                finalized = await self._run_and_report(prepared)
            await self._emit_results([finalized])
            done.append(finalized)
        return done

    async def parallel(self, calls: Sequence[ToolCall]) -> list[_Finalized]:
        slots: list[_Finalized | _Prepared] = []
        runnable = 0
        started = self.report.started
        for call in calls:
            event = _start_event(call)
            started[call["id"]] = None
            try:
                await self.emit(event)
            except Exception as exc:
                raise ListenerError(exc) from exc
            prepared = (
                self._check(call) if self.config.before_tool_call is None else await self._prepare(call)
            )
            if isinstance(prepared, _Finalized):
                try:
                    await self._emit_end(prepared)
                except Exception as exc:
                    raise ListenerError(exc) from exc
            else:
                runnable += 1
            slots.append(prepared)

        if runnable > 1:
            done = await self._run_concurrently(slots)
        elif runnable:  # nothing to run concurrently: spare the task
            done = [
                slot if isinstance(slot, _Finalized) else await self._run_and_report(slot) for slot in slots
            ]
        else:
            done = cast(list[_Finalized], slots)
        await self._emit_results(done)
        return done

    async def _run_concurrently(self, slots: list[_Finalized | _Prepared]) -> list[_Finalized]:
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
        starting = _Starting()
        pending: list[_Entry] = []
        bound: _Bound | None = None
        tasks: list[asyncio.Task[_Finalized | _Executed]] = []
        settle: asyncio.Task[None] | None = None
        try:
            for slot in slots:
                if isinstance(slot, _Finalized):
                    pending.append(slot)
                elif bound is None:
                    started = start_eagerly(self._execute(slot, starting))
                    if isinstance(started, Suspended):
                        bound = _Bound(len(pending), slot, started)
                        pending.append(bound)
                    else:
                        pending.append(_Executed(slot, started))
                else:
                    task = asyncio.get_running_loop().create_task(self._run_in_batch(slot, starting))
                    tasks.append(task)
                    pending.append(task)
            if bound is None and not tasks and not starting.updates:
                # Every call ended while starting (instant tools): their ends, in source order.
                starting.done = True
                done: list[_Finalized] = []
                for entry in pending:
                    if isinstance(entry, _Executed):
                        entry = await self._report(entry.prepared, entry.outcome)
                    assert isinstance(entry, _Finalized)
                    done.append(entry)
                return done
            if bound is None:
                await self._settle(pending, tasks, starting)
            else:
                if tasks or starting.updates:
                    settle = asyncio.get_running_loop().create_task(self._settle(pending, tasks, starting))
                else:
                    await self._settle(pending, tasks, starting)
                outcome = await bound.finish(settle)
                if outcome is not None:
                    pending[bound.index] = (
                        await self._report(bound.prepared, outcome)
                        if starting.done
                        else _Executed(bound.prepared, outcome)  # ``_settle`` reports it
                    )
                if settle is not None:
                    await settle
        finally:  # a failed sibling, or our own cancellation: nothing may keep running
            if bound is not None:
                await bound.suspended.close()
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
        done = []
        for entry in pending:  # every entry is reported by now
            outcome = entry.result() if isinstance(entry, asyncio.Task) else entry
            assert isinstance(outcome, _Finalized)
            done.append(outcome)
        return done

    async def _settle(
        self,
        pending: list[_Entry],
        tasks: list[asyncio.Task[_Finalized | _Executed]],
        starting: _Starting,
    ) -> None:
        """Let the tasks start, report the updates sent while starting, then the ends of the calls
        that finished meanwhile (in source order); then wait for the tasks (or the first failure)."""
        if tasks:
            await asyncio.sleep(0)  # the tasks take their first steps
        if starting.updates:
            await asyncio.wait(starting.updates)
        starting.done = True
        for index, entry in enumerate(pending):
            if isinstance(entry, asyncio.Task) and entry.done() and not entry.cancelled():
                entry = entry.result()
            if isinstance(entry, _Executed):
                pending[index] = await self._report(entry.prepared, entry.outcome)
        for task in tasks:
            if not task.done():
                await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
                break
        for task in tasks:
            failure = None if task.cancelled() else task.exception()
            if failure is not None:
                raise failure

    async def _run_in_batch(self, prepared: _Prepared, starting: _Starting) -> _Finalized | _Executed:
        """A call of a concurrent batch: one that finished before every call started leaves
        reporting its end to the batch (``_run_concurrently``)."""
        outcome = await self._execute(prepared, starting)
        if not starting.done:
            return _Executed(prepared, outcome)
        return await self._report(prepared, outcome)

    async def _run_and_report(self, prepared: _Prepared) -> _Finalized:
        """Execute, finalize, report the end."""
        return await self._report(prepared, await self._execute(prepared))

    async def _execute(self, prepared: _Prepared, starting: _Starting | None = None) -> _Finalized:
        """Run the tool; its updates are reported (in order) by the time this returns."""
        call = prepared.call
        updates: _Updates | None = None  # most tools send none: made on the first
        ended = False

        def on_update(partial: AgentToolResult[Any]) -> None:
            nonlocal updates
            if ended:  # sent after the tool returned: dropped
                return
            if updates is None:
                updates = _Updates(call, self.emit, starting)
            updates.push(partial)

        try:
            if self.trace is None:  # no ``with`` a null context: two calls per tool call spared
                result = await until_abort_grace(
                    prepared.tool.execute(call["id"], prepared.args, self.signal, on_update), self.signal
                )
            else:
                with self.trace.tool_running(call["id"]):
                    result = await until_abort_grace(
                        prepared.tool.execute(call["id"], prepared.args, self.signal, on_update), self.signal
                    )
            is_error = False
            if not isinstance(result, AgentToolResult):  # pyright: ignore[reportUnnecessaryIsInstance]
                result = error_result(
                    f"Tool {call['name']} returned {type(result).__name__}, not an AgentToolResult"
                )
                is_error = True
        except Exception as exc:
            result, is_error = error_result(describe_error(exc)), True
        finally:
            ended = True
            if updates is not None:
                await updates.close()
        return _Finalized(call, result, is_error)

    async def _report(self, prepared: _Prepared, outcome: _Finalized) -> _Finalized:
        """Finalize (``after_tool_call``) and report the end."""
        finalized = (
            outcome
            if self.config.after_tool_call is None
            else await self._finalize(prepared, outcome.result, outcome.is_error)
        )
        try:
            await self._emit_end(finalized)
        except Exception as exc:
            raise ListenerError(exc) from exc
        return finalized

    # -- the steps of one call ---------------------------------------------------------------

    async def _prepare(self, call: ToolCall) -> _Prepared | _Finalized:
        """``_check``, then ``before_tool_call`` (callers without the hook call ``_check`` alone)."""
        prepared = self._check(call)
        if self.config.before_tool_call is None or isinstance(prepared, _Finalized):
            return prepared
        try:
            decision = await self.config.before_tool_call(
                BeforeToolCallContext(self.assistant, call, prepared.args, self.context), self.signal
            )
        except Exception as exc:
            return _Finalized(call, error_result(describe_error(exc)), True)
        if decision is not None and decision.block:
            return _Finalized(call, error_result(decision.reason or BLOCKED), True)
        return prepared

    def _check(self, call: ToolCall) -> _Prepared | _Finalized:
        """The synchronous part of preparing: find the tool, prepare and validate the arguments."""
        agent_tool = self.tools.get(call["name"])
        if agent_tool is None:
            return _Finalized(call, error_result(f"Tool {call['name']} not found"), True)
        try:
            arguments: Any = call["arguments"]
            if agent_tool.prepare_arguments is not None:
                arguments = agent_tool.prepare_arguments(arguments)
            args = validate_tool_arguments(agent_tool, call["name"], arguments)
        except Exception as exc:
            return _Finalized(call, error_result(describe_error(exc)), True)
        return _Prepared(call, agent_tool, args)

    async def _finalize(
        self, prepared: _Prepared, result: AgentToolResult[Any], is_error: bool
    ) -> _Finalized:
        """Apply ``after_tool_call`` (callers without the hook skip this step)."""
        after = self.config.after_tool_call
        if after is None:
            return _Finalized(prepared.call, result, is_error)
        try:
            override = await after(
                AfterToolCallContext(
                    self.assistant, prepared.call, prepared.args, result, is_error, self.context
                ),
                self.signal,
            )
        except Exception as exc:
            return _Finalized(prepared.call, error_result(describe_error(exc)), True)
        if override is None:
            return _Finalized(prepared.call, result, is_error)
        merged = AgentToolResult(
            content=override.content if override.content is not None else result.content,
            details=override.details if override.details is not None else result.details,
            terminate=override.terminate if override.terminate is not None else result.terminate,
        )
        return _Finalized(
            prepared.call, merged, override.is_error if override.is_error is not None else is_error
        )


def _start_event(call: ToolCall) -> ToolExecutionStartEvent:
    return {
        "type": "tool_execution_start",
        "toolCallId": call["id"],
        "toolName": call["name"],
        "args": call["arguments"],
    }


def _end_event(finalized: _Finalized) -> ToolExecutionEndEvent:
    return {
        "type": "tool_execution_end",
        "toolCallId": finalized.call["id"],
        "toolName": finalized.call["name"],
        "result": finalized.result,
        "isError": finalized.is_error,
    }


class _Updates:
    """The updates of one tool call: ``on_update`` cannot await, so each partial result is
    emitted by a task that first waits for the previous one. Updates keep their order, the tool
    never waits for a listener, and ``close()`` waits for them all."""

    __slots__ = ("_call", "_emit", "_starting", "_tasks")

    def __init__(self, call: ToolCall, emit: Emit, starting: _Starting | None = None) -> None:
        self._call = call
        self._emit = emit
        self._tasks: list[asyncio.Task[None]] = []
        self._starting = starting
        """The concurrent batch that waits for the updates sent while its calls start."""

    def push(self, partial: AgentToolResult[Any]) -> None:
        event: ToolExecutionUpdateEvent = {
            "type": "tool_execution_update",
            "toolCallId": self._call["id"],
            "toolName": self._call["name"],
            "args": self._call["arguments"],
            "partialResult": partial,
        }
        previous = self._tasks[-1] if self._tasks else None
        task = asyncio.get_running_loop().create_task(self._send(previous, event))
        self._tasks.append(task)
        if self._starting is not None and not self._starting.done:
            self._starting.updates.append(task)

    async def _send(self, previous: asyncio.Task[None] | None, event: ToolExecutionUpdateEvent) -> None:
        if previous is not None:
            await previous
        try:
            await self._emit(event)
        except Exception as exc:
            raise ListenerError(exc) from exc

    async def close(self) -> None:
        try:
            await self._tasks[-1]
        finally:
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)


TRUNCATED_CALL = (
    'Tool call "{name}" was not executed: the response hit the output token limit (stopReason "length") '
    "and cut it off, so its arguments may be incomplete. Send the call again, smaller if needed."
)


async def reject_truncated_calls(calls: list[ToolCall], emit: Emit, report: BatchReport) -> ToolBatch:
    """The tool calls of a response cut by the token limit are not run: each gets an error result."""
    for call in calls:
        result = error_result(TRUNCATED_CALL.format(name=call["name"]))
        start, end = _start_event(call), _end_event(_Finalized(call, result, True))
        report.started[call["id"]] = None
        try:
            await emit(start)
            report.started[call["id"]] = end
            await emit(end)
        except Exception as exc:
            raise ListenerError(exc) from exc
        await emit_tool_result(tool_result_message(call, result, True), emit, report)
    return ToolBatch(messages=list(report.delivered), terminate=False)
