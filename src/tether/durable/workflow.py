"""The durable run: one prompt to settled, as a DBOS workflow over an ``AgentSession``.

The workflow *is* the agent loop: it builds the session's ``AgentSession`` as the CLI would, runs
``prompt()`` to settled and closes it. Only the model calls and the tool calls are steps
(``tether.durable.steps``); everything between them (the loop's decisions, approval, compaction
decisions, session appends) is deterministic given the steps' outputs, so a replay after a crash
takes the same path and reaches the point of the crash without calling anything again.

Replaying must not write the transcript twice. The first step (``begin``) records the session's
leaf and a base entry id; every entry the run appends takes the next id after that base. A replay
rewinds the leaf to the recorded one and appends again with the same ids: the entries already
stored are recognised and skipped (``Session.use_ids``), the leaf walks the same path, and the
first entry not stored yet is written as on a first run.

Events go to the run's DBOS stream (``EVENTS``) in batches (``EventLog``): those of the loop from
the workflow at each step boundary (checkpointed, so a replay does not send them twice), those of
a model stream from inside its step.
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from dbos import DBOS
from pydantic_core import to_jsonable_python

from tether.agent.loop import default_stream_fn
from tether.durable.config import EVENTS, WORKFLOW, DurableConfig
from tether.durable.steps import EventLog, durable_stream, durable_tool, may_rerun
from tether.session.agent_session import AgentSession
from tether.session.events import SessionEvent
from tether.session.factory import SessionChoice, create_agent_session
from tether.session.manager import SessionManager
from tether.session.session import Session
from tether.session.settings import load_settings
from tether.store.database import open_store
from tether.store.ids import decode, encode, new_id
from tether.store.store import SessionLockedError, SessionStore
from tether.tools.approval import Approval

Setup = Callable[[AgentSession], Awaitable[None] | None]
"""Called with each run's ``AgentSession`` before it runs: add tools, set the model (``--setup``)."""


class RunRequest(TypedDict):
    """A submitted run: the workflow's one argument."""

    session: str
    prompt: str


class RunOutcome(TypedDict):
    """What a finished run returns (``tether submit`` prints it)."""

    session: str
    stopReason: str
    messages: int
    """Messages the run added."""


class _Start(TypedDict):
    """The ``begin`` step's output: where the run started."""

    leaf: str | None
    base: str
    cwd: str


@dataclass(frozen=True, slots=True)
class Runtime:
    """How this process runs durable runs (set by the worker before DBOS launches)."""

    config: DurableConfig
    config_dir: Path
    """Where the user's settings are (``settings.json``)."""
    setup: Setup | None = None
    model: str | None = None
    """The model spec of runs (``--model``); default: the session's, then the settings'."""
    approval: Approval | None = None
    """The approval policy of runs (default: the settings'); nobody can answer an ``ask``."""


_runtime: Runtime | None = None
_shared_store: SessionStore | None = None


def install(runtime: Runtime | None) -> None:
    """Make ``runtime`` the one the workflow uses in this process (``None``: none; closes the
    session store the runs shared)."""
    global _runtime, _shared_store
    if _shared_store is not None:
        _shared_store.close()
    _runtime, _shared_store = runtime, None


def _store() -> SessionStore:
    """The session store of this process's runs: one for all of them, opened on first use. Runs
    use it from the event loop DBOS runs them on, one call at a time (store calls are
    synchronous), so they can share it and its connection."""
    global _shared_store
    if _shared_store is None:
        _shared_store = open_store(_current().config.sessions)
    return _shared_store


def _current() -> Runtime:
    if _runtime is None:
        raise RuntimeError("tether.durable: no runtime installed (start a worker first)")
    return _runtime


@DBOS.workflow(name=WORKFLOW)
async def durable_run(request: RunRequest) -> RunOutcome:
    """Run one prompt on a stored session, durably (see the module docstring)."""
    runtime = _current()
    execution = uuid.uuid4().hex  # not checkpointed on purpose: it tells executions apart
    session_id = request["session"]
    start = await DBOS.run_step_async({"name": "begin"}, _begin, session_id)
    events = EventLog()
    core = await _open(runtime, session_id, start, execution, events)
    try:
        core.subscribe(lambda event: _forward(events, event))
        added = await core.prompt(request["prompt"])
        last = core.last_assistant()
    finally:
        await core.close()
    await events.flush()
    await DBOS.close_stream_async(EVENTS)
    return {
        "session": session_id,
        "stopReason": last["stopReason"] if last is not None else "stop",
        "messages": len(added),
    }


async def _begin(session_id: str) -> _Start:
    """Record the session's leaf and the run's base entry id (greater than every stored id)."""
    store = _store()
    record = store.get_session(session_id)
    return {"leaf": record.leaf_id, "base": new_id(store.newest_entry_id(session_id)), "cwd": record.cwd}


async def _open(
    runtime: Runtime, session_id: str, start: _Start, execution: str, events: EventLog
) -> AgentSession:
    """The run's ``AgentSession``, built as the CLI builds one, with its model and tools as steps."""
    cwd = Path(start["cwd"])
    settings = load_settings(runtime.config_dir, cwd)
    waited = 0.0
    while True:
        try:
            core = create_agent_session(
                cwd=cwd,
                settings=settings,
                session=SessionChoice(session_id=session_id),
                sessions=_RunSessions(_store(), start),
                model=runtime.model,
                approval=runtime.approval,
            )
            break
        except SessionLockedError:
            # A dead worker's lease outlives it until its database connection is noticed gone.
            if waited >= runtime.config.lock_wait_seconds:
                raise
            await asyncio.sleep(1.0)
            waited += 1.0
    try:
        if runtime.setup is not None:
            outcome = runtime.setup(core)
            if inspect.isawaitable(outcome):
                await outcome
        agent = core.agent
        agent.stream_fn = durable_stream(agent.stream_fn or default_stream_fn(), events)
        rerun = runtime.config.rerun_tools
        agent.tools = [
            durable_tool(t, rerun=may_rerun(t, rerun), execution=execution, events=events)
            for t in agent.tools
        ]
    except BaseException:
        await core.close()
        raise
    return core


def _forward(events: EventLog, event: SessionEvent) -> None:
    """Queue a loop event for the run's stream, as JSON values (a tool result is a dataclass).
    The assistant's ``message_start`` went out from its model step already; queue updates are not
    part of a run's record."""
    if event["type"] == "queue_update":
        return
    if event["type"] == "message_start" and event["message"]["role"] == "assistant":
        return
    events.add(to_jsonable_python(event))


class _RunSessions(SessionManager):
    """The session manager of one run: the session it opens for writing is rewound to the run's
    start and takes the run's deterministic entry ids (see the module docstring)."""

    def __init__(self, store: SessionStore, start: _Start) -> None:
        super().__init__(store)
        self._start = start

    def close(self) -> None:
        """Leave the store open: it is the worker's, shared by its runs (``_store``)."""

    def open(self, session_id: str, *, readonly: bool = False) -> Session:
        session = super().open(session_id, readonly=readonly)
        if not readonly:
            session.use_ids(_step_ids(self._start["base"]))
            if session.leaf_id != self._start["leaf"]:
                session.branch(self._start["leaf"])
        return session


def _step_ids(base: str) -> Callable[[], str]:
    """``base``, then each following id: the same sequence on every replay."""
    value = decode(base)
    count = 0

    def next_id() -> str:
        nonlocal count
        count += 1
        return encode(value + count - 1)

    return next_id
