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
waiting for, up to its end event. The reference builds an object per step; a Python object per
step and a coroutine per step cost more than the events themselves (P2: three instant tools a
turn). The run's ``ToolRunner`` keeps one batch's records at a time: they are also what a run
whose listener failed mid-batch reads to give every call exactly one end and one result
(``ToolRunner.close``), so the batch keeps no second account of what went out.

A failing listener stops the batch with ``ListenerError``; the batch then cancels the calls still
running, so no task outlives it. Events go straight to the sink (no wrapper coroutine per event):
what a failure needs to know (a record's stage, the result messages delivered) is written just
before each event is awaited, and the listener's exception is wrapped where it is awaited.

A little past our usual ~600 lines: the five steps, both modes and the ending of an interrupted
batch share one batch's state, and the order of their events is what the conformance traces check.

This module loads with a run's first tool call (``loop`` imports it there): a run that only
answers never pays for it.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from tether.agent.abort_grace import ToolAbandonedError, until_abort_grace
from tether.agent.eager import Suspended, start_eagerly
from tether.agent.hooks import (
    AfterToolCallContext,
    AfterToolCallResult,
    BeforeToolCallContext,
    BeforeToolCallResult,
)
from tether.agent.listener_grace import hook_within_grace
from tether.agent.tool import AgentTool, AgentToolResult
from tether.agent.types import (
    AgentContext,
    AgentLoopConfig,
    Emit,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
)
from tether.agent.validation import arguments_validator
from tether.ai.abort import AbortSignal
from tether.errors import TetherError
from tether.wire import AssistantMessage, ToolCall, ToolResultMessage

T = TypeVar("T")

if TYPE_CHECKING:
    from tether.telemetry.spans import RunTrace

BLOCKED = "Tool execution was blocked"


class ListenerError(TetherError):
    """The event sink raised ``cause`` while the batch reported; the batch stopped there."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(str(cause))
        self.cause = cause


def describe_error(exc: BaseException) -> str:
    """The text of an error result: the exception's message, or its type when it has none."""
    return str(exc) or type(exc).__name__


def error_result(text: str) -> AgentToolResult[Any]:
    return AgentToolResult(content=[{"type": "text", "text": text}], details={})


# The events and the message of a call are built here alone, and every path (the parallel one
# included, which otherwise writes its steps out) calls these: a field added to one copy of an
# event would otherwise be missing from the others. Plain functions, not coroutines: awaiting
# stays where each event is sent.


def start_event(call: ToolCall) -> ToolExecutionStartEvent:
    return {
        "type": "tool_execution_start",
        "toolCallId": call["id"],
        "toolName": call["name"],
        "args": call["arguments"],
    }


def end_event(call: ToolCall, result: AgentToolResult[Any], is_error: bool) -> ToolExecutionEndEvent:
    return {
        "type": "tool_execution_end",
        "toolCallId": call["id"],
        "toolName": call["name"],
        "result": result,
        "isError": is_error,
    }


def tool_result_message(
    call: ToolCall, result: AgentToolResult[Any], is_error: bool, timestamp: int
) -> ToolResultMessage:
    """``timestamp`` is the caller's: the results of a parallel batch, made together, share one."""
    return {
        "role": "toolResult",
        "toolCallId": call["id"],
        "toolName": call["name"],
        "content": result.content,
        "isError": is_error,
        "timestamp": timestamp,
        "details": result.details,
    }


# The stages of a call (``_Call.stage``): what is left to report of it.
_RUNNABLE = 0
"""Prepared: its tool is to run (or running)."""
_EXECUTED = 1
"""It has its result (executed, or an immediate one); its end is not reported."""
_REPORTED = 2
"""Its end is being reported (``after_tool_call`` is asked first): whoever sets this reports it."""
_ENDED = 3
"""Its end event went out (its listener may have raised): its result is final."""

_PENDING: AgentToolResult[Any] = AgentToolResult(content=[])
"""The result of a call that has none yet (never reported: a call is reported from ``_EXECUTED``)."""


class _Call:
    """One tool call of a batch, from its start event to its result message: made as its start
    event goes out, preparing fills in its tool and arguments (or an immediate ``result``),
    executing and finalizing its ``result``, and ``stage`` says what is left to report.
    ``update`` is the tool's ``on_update``.

    What most calls never change (no failure, no update, no task of their own) is a default of
    the class, not an attribute set per call: a record costs two assignments and its place in
    its batch's ``records``."""

    tool: AgentTool
    """Set by preparing once the tool is found (only a call whose tool was found runs)."""
    args: Any = None
    result: AgentToolResult[Any] = _PENDING
    is_error: bool = False
    stage: int = _RUNNABLE
    ended: bool = False
    """The tool returned: updates it sends from now on are dropped."""
    abandoned: bool = False
    """The abort grace gave the call up (``until_abort_grace``): what the tool comes to is dropped."""
    updates: list[asyncio.Task[None]] | None = None
    """One task per update sent (most tools send none): each emits its event once the
    previous one is out, so updates keep their order and the tool never waits for a listener."""
    task: asyncio.Task[None] | None = None
    """The task it runs in, when a concurrent batch could not start it in its own."""

    def __init__(self, runner: ToolRunner, call: ToolCall) -> None:
        """Made as the call's start event goes out: the batch counts it as started."""
        self.runner = runner
        self.call = call
        runner.records.append(self)

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
        task = asyncio.get_running_loop().create_task(_send_update(previous, event, self.runner.emit))
        self.updates.append(task)
        starting = self.runner.starting
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


class ToolRunner:
    """The tool calls of one run, batch by batch (``run``): made with the run's first tool call
    and kept for its others, with what every batch shares (the context, the hooks, the signal,
    the sink). A batch's records (``records``, ``delivered``, ``open_result``) say what went
    out, each written before its event is awaited (an event whose listener raised counts as
    sent), so a run whose listener failed mid-batch can end the batch properly (``close``).
    With ``trace``, each tool's span is the current one while the tool executes."""

    __slots__ = (
        "assistant",
        "config",
        "context",
        "delivered",
        "emit",
        "open_result",
        "records",
        "signal",
        "starting",
        "terminate",
        "tools",
        "trace",
    )

    def __init__(
        self,
        context: AgentContext,
        config: AgentLoopConfig,
        signal: AbortSignal | None,
        emit: Emit,
        trace: RunTrace | None = None,
    ) -> None:
        self.context = context
        self.config = config
        self.signal = signal
        self.emit = emit
        self.trace = trace
        self.assistant: AssistantMessage | None = None
        """The message whose calls the records are of."""
        self.records: list[_Call] = []
        """The batch's calls whose ``tool_execution_start`` went out, in source order."""
        self.delivered: list[ToolResultMessage] = []
        """The batch's result messages, each from its ``message_start`` on (in source order)."""
        self.open_result: ToolResultMessage | None = None
        """The result whose ``message_start`` went out and whose ``message_end`` did not."""
        self.tools: dict[str, AgentTool] = {}
        """The batch's tools by name (read from the context at each batch: it may change)."""
        self.terminate = False
        """The last batch's results all asked to stop the run after it."""
        self.starting: list[asyncio.Task[None]] | None = None
        """While a concurrent batch starts its calls: the update tasks they create meanwhile,
        to be reported before any call's end."""

    async def run(self, assistant: AssistantMessage, calls: Sequence[ToolCall]) -> list[ToolResultMessage]:
        """Run ``calls`` (``assistant``'s) and report them; their result messages. Those of a
        response cut by the token limit are not run (``TRUNCATED_CALL``)."""
        self.assistant = assistant
        self.records = []
        self.delivered = []
        if assistant["stopReason"] == "length":
            await self._reject_truncated(calls)
            self.terminate = False
            self.records = []
            return self.delivered
        tools: dict[str, AgentTool] = {}
        self.tools = tools
        sequential_tool = False
        for t in self.context.tools:  # plain loops here and below: a generator costs a frame per batch
            tools[t.name] = t
            if t.execution_mode == "sequential":
                sequential_tool = True
        sequential = self.config.tool_execution == "sequential"
        if sequential_tool and not sequential:  # does this batch call one? (most contexts have none)
            for call in calls:
                if (t := tools.get(call["name"])) is not None and t.execution_mode == "sequential":
                    sequential = True
        self.terminate = await (self._sequential(calls) if sequential else self._parallel(calls))
        # The batch is over: its records go now. Each points back at this runner (``_Call.update``
        # reports through it), so records kept to the next batch or the run's end were a cycle
        # only a garbage collection freed, with the batch's results and events.
        self.records = []
        return self.delivered

    async def close(
        self, assistant: AssistantMessage, calls: Sequence[ToolCall], text: str, emit: Emit
    ) -> None:
        """Give every call of ``assistant`` that has no result message yet its result (the real
        one if its end went out, else an error saying the call was not completed, after an end
        event if its start went out), reported through ``emit`` (which must not raise), so the
        transcript never holds a call without exactly one result; ``delivered`` then has them
        all. Result messages go out in source order, so the calls without one are the last."""
        if self.assistant is not assistant:  # its batch never started
            self.assistant, self.records, self.delivered = assistant, [], []
        self.open_result = None
        records = self.records
        try:
            for index in range(len(self.delivered), len(calls)):
                if index < len(records):
                    record = records[index]
                    if record.stage != _ENDED:
                        record.fail(f"Tool call was not completed: {text}")
                        await emit(end_event(record.call, record.result, True))
                else:  # its start never went out: its record, made now, is only what is delivered
                    record = _Call(self, calls[index])
                    record.fail(f"Tool call was not completed: {text}")
                await self._deliver((record,), int(time.time() * 1000), emit)
        finally:  # the batch is over, cut short or not: its records go (``run``)
            self.records = []

    def _emit_end(self, record: _Call) -> Awaitable[None]:
        """Mark the end as sent and hand back the listener's awaitable (to be awaited)."""
        record.stage = _ENDED
        return self.emit(end_event(record.call, record.result, record.is_error))

    async def _deliver(self, records: Iterable[_Call], timestamp: int, emit: Emit) -> bool:
        """Report the result messages of ``records``, in order, each delivered from its
        ``message_start`` on; whether every result asks to stop. ``timestamp`` is the caller's:
        the results of a parallel batch, made together, share one."""
        delivered = self.delivered
        terminate = True
        try:
            for record in records:
                result = record.result
                message = tool_result_message(record.call, result, record.is_error, timestamp)
                delivered.append(message)
                self.open_result = message
                await emit({"type": "message_start", "message": message})
                self.open_result = None
                await emit({"type": "message_end", "message": message})
                if result.terminate is not True:
                    terminate = False
        except Exception as exc:
            raise ListenerError(exc) from exc
        return terminate

    async def _sequential(self, calls: Sequence[ToolCall]) -> bool:
        """Each call through all its steps before the next; whether every result asks to stop."""
        terminate = True
        emit = self.emit
        hooked = self.config.before_tool_call is not None
        for call in calls:
            record = _Call(self, call)
            try:
                await emit(start_event(call))
            except Exception as exc:
                raise ListenerError(exc) from exc
            if hooked:
                await self._prepare(record)
            else:
                self._check(record)
            if record.stage == _RUNNABLE:
                await self._run(record)
                await self._report(record)
            else:
                try:
                    await self._emit_end(record)
                except Exception as exc:
                    raise ListenerError(exc) from exc
            if not await self._deliver((record,), int(time.time() * 1000), emit):
                terminate = False
        return terminate

    async def _reject_truncated(self, calls: Sequence[ToolCall]) -> None:
        """The calls of a response cut by the token limit are not run: each gets an error result."""
        for call in calls:
            record = _Call(self, call)
            record.fail(TRUNCATED_CALL.format(name=call["name"]))
            try:
                await self.emit(start_event(call))
                await self._emit_end(record)
            except Exception as exc:
                raise ListenerError(exc) from exc
            await self._deliver((record,), int(time.time() * 1000), self.emit)

    async def _parallel(self, calls: Sequence[ToolCall]) -> bool:
        """Every call prepared (an immediate result reports its end at once), the prepared ones
        run concurrently, then the result messages in source order; whether every result asks
        to stop. Calls start *eagerly*, in this task (``eager``), as the reference's ``execute``
        does: a call that ends at once (an instant tool) costs no task and no pass of the event
        loop, and when every call does, their ends are reported here, in source order: a
        coroutine per step of each call, or per batch, cost more than the steps themselves (P2).
        The first call that does not end at once hands the batch to ``_run_concurrently``."""
        emit = self.emit
        hooked = self.config.before_tool_call is not None
        records = self.records
        runnable = 0
        for call in calls:
            record = _Call(self, call)
            try:
                await emit(start_event(call))
            except Exception as exc:
                raise ListenerError(exc) from exc
            if hooked:
                await self._prepare(record)
            else:
                self._check(record)
            if record.stage == _RUNNABLE:
                runnable += 1
            else:
                try:
                    await self._emit_end(record)
                except Exception as exc:
                    raise ListenerError(exc) from exc

        if runnable > 1:
            starting: list[asyncio.Task[None]] = []
            self.starting = starting
            for record in records:
                if record.stage == _RUNNABLE:
                    suspended = start_eagerly(self._execute(record))
                    if suspended is not None:
                        await self._run_concurrently(records, record, suspended)
                        break
            else:
                if starting:  # updates sent by calls that ended while starting
                    await self._run_concurrently(records, None, None)
                else:  # every call ended while starting (instant tools): their ends, in source order
                    self.starting = None
                    after = self.config.after_tool_call
                    for record in records:
                        if record.stage == _EXECUTED:  # ``_report`` and ``_emit_end``, written out
                            if after is not None:
                                record.stage = _REPORTED
                                await self._finalize(record)
                            record.stage = _ENDED
                            try:
                                await emit(end_event(record.call, record.result, record.is_error))
                            except Exception as exc:
                                raise ListenerError(exc) from exc
        elif runnable:  # nothing to run concurrently: spare the task
            for record in records:
                if record.stage == _RUNNABLE:
                    await self._run(record)
                    await self._report(record)
        return await self._deliver(records, int(time.time() * 1000), emit)

    async def _run_concurrently(
        self, records: list[_Call], bound: _Call | None, suspended: Suspended[None] | None
    ) -> None:
        """Run the calls of a concurrent batch once they have started up to ``bound``, the first
        that suspended while starting (``suspended``): every call starts (runs up to its first
        suspension, in source order) and the updates sent meanwhile are reported before any
        call reports its end, as in the reference, where each ``execute`` starts synchronously
        and an update is emitted when it is sent. Calls that finished while starting then
        report their ends in source order; the others report theirs as they finish.

        ``bound`` stays in this task (whatever it tied to its task, a timeout or a cancel scope,
        stays true), which continues it at once; the calls after it start as tasks, and a task
        of its own settles the batch (``_settle``). In the P2 benchmark (three instant tools per
        turn) starting eagerly removed three tasks and a ``sleep(0)`` per turn: 8% of the run's
        instructions (callgrind, 186 M -> 170 M per run), 12% of its CPU time (interleaved runs)."""
        tasks: list[asyncio.Task[None]] = []
        settle: asyncio.Task[None] | None = None
        starting = self.starting
        try:
            for record in records:  # the calls after ``bound`` (those before it have ended)
                if record.stage == _RUNNABLE and record is not bound:
                    record.task = asyncio.get_running_loop().create_task(self._run_in_batch(record))
                    tasks.append(record.task)
            if suspended is None:
                await self._settle(records, tasks)
            else:
                assert bound is not None
                if tasks or starting:
                    settle = asyncio.get_running_loop().create_task(self._settle(records, tasks))
                else:
                    await self._settle(records, tasks)
                finished = await self._finish(bound, suspended, settle)
                # ``_settle`` has started every call meanwhile, or it reports this one's end
                if finished and self.starting is None:
                    await self._report(bound)
                if settle is not None:
                    await settle
        finally:  # a failed sibling, or our own cancellation: nothing may keep running
            self.starting = None
            if suspended is not None:
                await suspended.close()
            if tasks or starting or settle is not None:
                running: list[asyncio.Task[Any]] = [*tasks, *(starting or ())]
                if settle is not None:
                    running.append(settle)
                unfinished = [task for task in running if not task.done()]
                for task in unfinished:
                    task.cancel()
                if unfinished:
                    await asyncio.gather(*unfinished, return_exceptions=True)
                for task in running:  # the batch's own failure is on its way: theirs are read, not logged
                    if not task.cancelled():
                        task.exception()
        for task in tasks:
            failure = None if task.cancelled() else task.exception()
            if failure is not None:
                raise failure

    async def _finish(
        self, bound: _Call, suspended: Suspended[None], settle: asyncio.Task[None] | None
    ) -> bool:
        """Continue the call that suspended while starting to its end; ``False`` when ``settle``
        failed meanwhile (a sibling or a listener did), which cancels it, as the batch cancels
        every call still running when one fails."""
        task = asyncio.current_task()
        if settle is None or task is None:
            await self._drive(bound, suspended)
            return True
        failed = False
        resuming = True

        def on_settled(settled: asyncio.Task[None]) -> None:
            nonlocal failed
            # A done callback is scheduled when ``settle`` ends: removing it afterwards does not
            # unschedule it, so one that runs after the call ended must not cancel anything (it
            # cancelled the caller's task after the run had returned).
            if resuming and not settled.cancelled() and settled.exception() is not None:
                failed = True
                task.cancel()

        settle.add_done_callback(on_settled)
        try:
            await self._drive(bound, suspended)
        except asyncio.CancelledError:
            if failed and task.uncancel() == 0:
                return False
            raise
        finally:
            resuming = False
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
        await self._run(record)
        if self.starting is None:
            await self._report(record)

    async def _run(self, record: _Call) -> None:
        """Execute a call in this task: started eagerly, as every call is, so an instant one
        ends in its first step; one that suspends is continued by ``_drive``."""
        suspended = start_eagerly(self._execute(record))
        if suspended is not None:
            await self._drive(record, suspended)

    async def _drive(self, record: _Call, suspended: Suspended[None]) -> None:
        """Continue a call that suspended in its first step to its end. With a signal, the abort
        grace watches it from here (``until_abort_grace``) and may leave it behind (marking it
        ``abandoned``, which ``_execute`` reads: whatever the tool comes to later is dropped):
        its call then ends here with the error saying so, and its updates from now on are
        dropped. It becomes ``_EXECUTED`` only once the updates it sent are out: from then on
        another task (``_settle``) may report its end, which must come after them, and once."""
        if self.signal is None:
            await suspended.resume()
            return
        try:
            await until_abort_grace(suspended, self.signal, record)
        except ToolAbandonedError as exc:
            record.ended = True
            if record.updates is not None:
                await record.close_updates()
            record.fail(describe_error(exc))
            record.stage = _EXECUTED
            if self.trace is not None:
                self.trace.tool_raised(record.call["id"], exc)

    async def _execute(self, record: _Call) -> None:
        """Run the tool, awaited as it is (the abort grace is its caller's business, only once
        it suspends: ``_drive``); its updates are reported (in order) by the time this returns.
        It returns nothing (its outcome goes into ``record``): ``start_eagerly`` needs no
        exception to learn that a call ended at once."""
        result: Any = None
        # The failure's text, not the exception: kept in this frame, which the exception's
        # traceback holds, the exception made a cycle only a garbage collection freed.
        failure: str | None = None
        try:
            if self.trace is None:
                result = await record.tool.execute(record.call["id"], record.args, self.signal, record.update)
            else:
                with self.trace.tool_running(record.call["id"]):
                    result = await record.tool.execute(
                        record.call["id"], record.args, self.signal, record.update
                    )
        except Exception as exc:
            failure = describe_error(exc)
        except asyncio.CancelledError as exc:
            current = asyncio.current_task()
            if current is None or current.cancelling():
                raise  # the run itself is cancelled
            # The tool raised it while nobody cancelled the run (e.g. it read a cancelled task's
            # result): a failure of the tool like any other, not the end of the run.
            failure = describe_error(exc)
        finally:
            record.ended = True
            if record.updates is not None:
                await record.close_updates()
        if record.abandoned:  # by the grace (``_drive``): what it came to is dropped
            return
        if failure is not None:
            record.fail(failure)
        elif isinstance(result, AgentToolResult) and not isinstance(result.content, list):  # pyright: ignore[reportUnnecessaryIsInstance]
            # a string kept as is made a message no store or provider takes (pi's type: a list)
            given: object = result.content
            record.fail(
                f"Tool {record.call['name']} returned content as a {type(given).__name__}, not a list of blocks"
            )
        elif isinstance(result, AgentToolResult):
            record.result = result
        else:
            name = record.call["name"]
            record.fail(f"Tool {name} returned {type(result).__name__}, not an AgentToolResult")
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

    async def _prepare(self, record: _Call) -> None:
        """``_check``, then ``before_tool_call`` (callers without the hook call ``_check`` alone)."""
        self._check(record)
        before = self.config.before_tool_call
        if before is None or record.stage != _RUNNABLE:
            return
        assert self.assistant is not None
        try:
            decision = await _answer(
                "before_tool_call",
                before(
                    BeforeToolCallContext(self.assistant, record.call, record.args, self.context), self.signal
                ),
                BeforeToolCallResult,
                self.signal,
            )
        except Exception as exc:
            record.fail(describe_error(exc))
            record.stage = _EXECUTED
            return
        if decision is not None and decision.block:
            record.fail(decision.reason or BLOCKED)
            record.stage = _EXECUTED

    def _check(self, record: _Call) -> None:
        """The synchronous part of preparing: find the tool, prepare and validate the arguments.
        A failure is an immediate result (stage ``_EXECUTED``)."""
        call = record.call
        agent_tool = self.tools.get(call["name"])
        if agent_tool is None:
            record.fail(f"Tool {call['name']} not found")
            record.stage = _EXECUTED
            return
        record.tool = agent_tool
        try:
            arguments: Any = call["arguments"]
            if agent_tool.prepare_arguments is not None:
                arguments = agent_tool.prepare_arguments(arguments)
            record.args = arguments_validator(agent_tool)(arguments)
        except Exception as exc:
            record.fail(describe_error(exc))
            record.stage = _EXECUTED

    async def _finalize(self, record: _Call) -> None:
        """Apply ``after_tool_call`` to the call's result (callers without the hook skip this)."""
        after = self.config.after_tool_call
        assert after is not None and self.assistant is not None
        result, is_error = record.result, record.is_error
        try:
            override = await _answer(
                "after_tool_call",
                after(
                    AfterToolCallContext(
                        self.assistant, record.call, record.args, result, is_error, self.context
                    ),
                    self.signal,
                ),
                AfterToolCallResult,
                self.signal,
            )
        except Exception as exc:
            record.fail(describe_error(exc))
            return
        if override is None:
            return
        if override.content is not None and not isinstance(override.content, list):  # pyright: ignore[reportUnnecessaryIsInstance]
            # it replaces the tool's: a string made the message a tool returning one did
            given: object = override.content
            record.fail(f"after_tool_call returned content as a {type(given).__name__}, not a list of blocks")
            return
        record.result = AgentToolResult(
            content=override.content if override.content is not None else result.content,
            details=override.details if override.details is not None else result.details,
            terminate=override.terminate if override.terminate is not None else result.terminate,
        )
        if override.is_error is not None:
            record.is_error = override.is_error


async def _answer(hook: str, value: object, kind: type[T], signal: AbortSignal | None) -> T | None:
    """What a tool hook answered: awaited if it is awaitable (a hook may be a plain function, as
    the loop's other hooks may; cut ``ABORT_GRACE`` after the abort, as they are), and ``None``
    or a ``kind``; anything else (pi's object literal, a dict here) fails the call, naming the
    hook, as a hook that raises does."""
    if inspect.isawaitable(value):
        value = await (value if signal is None else hook_within_grace(hook, value, signal))
    if value is None or isinstance(value, kind):
        return value
    raise TypeError(f"{hook} returned a {type(value).__name__}, not {kind.__name__} or None")


TRUNCATED_CALL = (
    'Tool call "{name}" was not executed: the response hit the output token limit (stopReason "length") '
    "and cut it off, so its arguments may be incomplete. Send the call again, smaller if needed."
)
