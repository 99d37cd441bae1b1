"""The steps of a durable run: each model call and each tool call is one DBOS step.

A step's output is checkpointed in the system database when it returns. When a crashed run is
replayed, a checkpointed step is not run again: its recorded output comes back instead. So:

- **model call**: the whole stream is consumed *inside* the step; its events are written to the
  run's DBOS stream as they arrive, a batch at most ``BATCH_SECONDS`` apart (followers see them
  live); the step's output is the final
  assistant message, which the loop then receives as a one-event stream. A call cut by a crash
  runs again from the start (the model is asked again; followers see a new ``message_start``).
- **tool call**: the step's output is the tool's result. A call cut by a crash runs again only
  when its tool may (``may_rerun``): ``read``, ``grep``, ``find``, ``ls`` and the tools named in
  ``durable.rerunTools`` or marked with ``RERUN_KEY``. Any other interrupted call is answered
  with an error result saying so, without running the tool again: a half-done ``bash`` or
  ``write`` is the model's (and the user's) to inspect, not ours to repeat.

To know that a call was interrupted, a non-rerunnable call first checkpoints a *start* step
holding the id of the execution that started it; when the call's own step must run and the
start step belongs to an earlier execution, that execution died inside the call.

Step ids are reserved synchronously as a call starts, so the calls of a parallel tool batch get
the same ids on every replay whatever order they finish in.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import AsyncIterator, Collection
from typing import Any, cast

from dbos import DBOS

from tether.agent import AgentTool
from tether.agent.tool import AgentToolResult, ToolUpdate
from tether.ai.abort import AbortSignal
from tether.ai.event_stream import AssistantMessageEventStream, fail, new_assistant_message
from tether.ai.types import Context, SimpleStreamOptions, StreamFn
from tether.durable.config import EVENTS
from tether.errors import ToolError
from tether.wire import AssistantMessage, AssistantMessageEvent, ModelInfo

RERUNNABLE = frozenset({"read", "grep", "find", "ls"})
"""Built-in tools without side effects: running one twice is harmless."""
RERUN_KEY = "tether.durable.rerun"
"""``AgentTool.metadata`` key: ``True`` lets a tool run again after a crash, ``False`` forbids it."""


BATCH_SECONDS = 0.05
"""Inside a model step, events are written at most this far apart, several per write."""


class EventLog:
    """A run's events on their way to its DBOS stream, written in batches (one stream value is a
    list of events). The loop's events wait for the next step boundary: they come in quick
    succession between steps, and a write from the workflow is a checkpoint of its own, so one
    per boundary instead of one per event. Flushing at step boundaries keeps the writes at the
    same points of every replay, as checkpoints must be."""

    def __init__(self) -> None:
        self._pending: list[Any] = []

    def add(self, event: Any) -> None:
        self._pending.append(event)

    async def flush(self) -> None:
        if self._pending:
            batch, self._pending = self._pending, []
            await DBOS.write_stream_async(EVENTS, batch)


class ToolInterruptedError(ToolError):
    """A tool call cut by a worker crash, not run again (its text is the error tool result)."""


def interrupted_text(name: str) -> str:
    return (
        f"The {name} call was interrupted by a worker crash and was not run again: "
        "its effects, if any, are unknown. Check the state before retrying it."
    )


class RunCancelledError(ToolError):
    """A call of a run that was cancelled (its text is the error tool result)."""


CANCELLED_TEXT = "The run was cancelled (`tether runs cancel`, or its timeout) during this call."


def cancelled(exc: BaseException) -> bool:
    """Whether ``exc`` is DBOS saying the workflow was cancelled (raised by the first step or
    stream write after a cancel; a ``BaseException``, from a private module, hence the name)."""
    return type(exc).__name__ == "DBOSWorkflowCancelledError"


def may_rerun(tool: AgentTool, extra: Collection[str] = ()) -> bool:
    """Whether a call of ``tool`` cut by a crash may simply run again."""
    declared = tool.metadata.get(RERUN_KEY)
    if isinstance(declared, bool):
        return declared
    return tool.name in RERUNNABLE or tool.name in extra


def durable_tool(tool: AgentTool, *, rerun: bool, execution: str, events: EventLog) -> AgentTool:
    """``tool`` with each call run as a DBOS step (see the module docstring).

    Args:
        tool: The tool to wrap.
        rerun: Whether an interrupted call may run again (``may_rerun``).
        execution: This execution of the workflow (a fresh id per start or recovery).
        events: The run's events, flushed before the call.
    """

    async def execute(
        call_id: str, params: Any, signal: AbortSignal | None, on_update: ToolUpdate | None
    ) -> AgentToolResult[Any]:
        start = None if rerun else DBOS.reserve_step()
        call = DBOS.reserve_step()
        try:
            return await record(start, call, call_id, params, signal)
        except BaseException as exc:
            if cancelled(exc):  # the call is answered, so the session stays consistent
                raise RunCancelledError(CANCELLED_TEXT) from None
            raise

    async def record(
        start: Any, call: Any, call_id: str, params: Any, signal: AbortSignal | None
    ) -> AgentToolResult[Any]:
        await events.flush()
        started_by = execution
        if start is not None:
            started_by = await start.run_async({"name": f"tool-start:{tool.name}"}, _same, execution)

        async def run() -> dict[str, Any]:
            if started_by != execution:
                raise ToolInterruptedError(interrupted_text(tool.name))
            # Partial results are not forwarded: they would have to be checkpointed to replay.
            result = await tool.execute(call_id, params, signal, None)
            return {"content": result.content, "details": result.details, "terminate": result.terminate}

        # Preemptible: cancelling the run (``tether runs cancel``, its timeout) cancels the call.
        recorded = await call.run_async({"name": f"tool:{tool.name}", "preemptible": True}, run)
        return AgentToolResult(recorded["content"], recorded["details"], recorded["terminate"])

    return AgentTool(
        name=tool.name,
        label=tool.label,
        description=tool.description,
        parameters=tool.parameters,
        execute=execute,
        execution_mode=tool.execution_mode,
        prepare_arguments=tool.prepare_arguments,
        metadata=tool.metadata,
    )


def _same(value: str) -> str:
    """The start step: records which execution started the call."""
    return value


def durable_stream(stream_fn: StreamFn, events: EventLog) -> StreamFn:
    """``stream_fn`` with each call run as a DBOS step whose output is the final message;
    ``events`` (the run's) are flushed before the call."""

    async def call(model: ModelInfo, context: Context, options: SimpleStreamOptions | None = None) -> Any:
        try:
            await events.flush()
            final = await DBOS.run_step_async(
                {"name": "model", "preemptible": True}, _stream_step, stream_fn, model, context, options
            )
        except BaseException as exc:
            if not cancelled(exc):
                raise
            final = new_assistant_message(model)  # the prompt's answer: aborted, saying why
            fail(final, CANCELLED_TEXT, aborted=True)
        signal = options.signal if options is not None else None
        return AssistantMessageEventStream(model, _recorded(final), signal)

    return cast(StreamFn, call)


async def _stream_step(
    stream_fn: StreamFn, model: ModelInfo, context: Context, options: SimpleStreamOptions | None
) -> AssistantMessage:
    """Consume one model stream, forwarding its events live; the final message is the output."""
    opened = stream_fn(model, context, options)
    stream: AssistantMessageEventStream = await opened if inspect.isawaitable(opened) else opened
    batch: list[dict[str, Any]] = []
    written = 0.0
    async for event in stream:
        forwarded = stream_event(event)
        if forwarded is None:
            continue
        batch.append(forwarded)
        if time.monotonic() - written >= BATCH_SECONDS:
            await DBOS.write_stream_async(EVENTS, batch)
            batch, written = [], time.monotonic()
    if batch:
        await DBOS.write_stream_async(EVENTS, batch)
    return await stream.result()


def stream_event(event: AssistantMessageEvent) -> dict[str, Any] | None:
    """The session event a follower gets for a model stream event (``None``: none).

    ``start`` is the assistant's ``message_start``; each later event a ``message_update`` without
    the partial message (rebuilding it is the follower's job, as sending it each time would cost
    the square of the reply's length); the terminal event is left to the loop's ``message_end``.
    """
    if event["type"] == "start":
        return {"type": "message_start", "message": event["partial"]}
    if event["type"] == "done" or event["type"] == "error":
        return None
    update = {k: v for k, v in event.items() if k != "partial"}
    return {"type": "message_update", "assistantMessageEvent": update}


async def _recorded(message: AssistantMessage) -> AsyncIterator[AssistantMessageEvent]:
    """The final message of a model step as the terminal event of a stream."""
    reason = message["stopReason"]
    if reason == "error" or reason == "aborted":
        yield cast(AssistantMessageEvent, {"type": "error", "reason": reason, "error": message})
    else:
        yield cast(AssistantMessageEvent, {"type": "done", "reason": reason, "message": message})
