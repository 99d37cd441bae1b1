"""The durable run: one prompt to settled, as a DBOS workflow over an ``AgentSession``.

The workflow *is* the agent loop: it builds the session's ``AgentSession`` as the CLI would, runs
``prompt()`` to settled and closes it. Only the model calls and the tool calls are steps
(``tether.durable.steps``); everything between them (the loop's decisions, approval, compaction
decisions, session appends) is deterministic given the steps' outputs, so a replay after a crash
takes the same path and reaches the point of the crash without calling anything again.

A run never forks its session: it first takes the session's writer lock (waiting up to
``lock_wait_seconds`` while someone else, a person's open ``tether`` say, holds it), and only then
records, in its first step (``begin``), the session's leaf and a base entry id: it starts from
whatever the holder before it left, the person's last messages included. Every entry the run
appends takes the next id after that base.

Replaying must not write the transcript twice. A replay rewinds the leaf to the recorded one and
appends again with the same ids: the entries already stored are recognised and skipped
(``Session.use_ids``), the leaf walks the same path, and the first entry not stored yet is written
as on a first run. That rewind is safe only while the session's leaf is the run's start or one of
the run's own entries; when something else was appended after them (a later run, after this one
was cancelled and then resumed), the replay is refused rather than leave that on an abandoned
branch (``_check_replay``).

Events go to the run's DBOS stream (``EVENTS``) in batches (``EventLog``): those of the loop from
the workflow at each step boundary (checkpointed, so a replay does not send them twice), those of
a model stream from inside its step.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import inspect
import logging
import os
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NotRequired, TypedDict, cast

import dbos._dbos
from dbos import DBOS
from pydantic_core import to_jsonable_python

from tether.agent.loop import default_stream_fn
from tether.durable.config import EVENTS, WORKFLOW, DurableConfig, message_lines
from tether.durable.steps import EventLog, durable_stream, durable_tool, may_rerun
from tether.errors import UserError
from tether.session.agent_session import AgentSession
from tether.session.events import SessionEvent
from tether.session.factory import SessionChoice, start_session
from tether.session.manager import SessionManager
from tether.session.options import SessionOptions
from tether.session.session import Session
from tether.session.settings import load_settings
from tether.store.database import open_store
from tether.store.ids import decode, encode, new_id
from tether.store.store import SessionError, SessionLockedError, SessionRecord, SessionStore, WriterLease
from tether.tools.approval import Approval
from tether.wire.escapes import visible

log = logging.getLogger("tether.durable")

Setup = Callable[[AgentSession], Awaitable[None] | None]
"""Called with each run's ``AgentSession`` before it runs: add tools, set the model (``--setup``)."""


class RunRequest(TypedDict):
    """A submitted run: the workflow's one argument."""

    session: str
    prompt: str
    cwd: NotRequired[str]
    """The folder the run works in, as its submitter checked it (``recorded_workspace``: the
    session's recorded folder resolved, where the submitter is); without it, the session's
    recorded folder as it stands."""


class RunRequestError(UserError, ValueError):
    """A run request that is not ``RunRequest``; the message says what is wrong and where."""


def check_request(request: object, where: str) -> RunRequest:
    """``request`` as a ``RunRequest``, or ``RunRequestError`` naming what is wrong with it.

    Checked where a request enters (``DurableClient.submit``, the workflow itself: a program can
    enqueue the workflow by name with anything): a request missing its prompt would otherwise end
    the run in ``ERROR`` with ``KeyError('prompt')``, after it had waited for the session's lock."""
    shape = '{"session": <session id>, "prompt": <text>, optionally "cwd": <absolute folder>}'
    if not isinstance(request, dict):
        raise RunRequestError(f"{where}: the request must be {shape}, not {type(request).__name__}")
    fields = cast(dict[object, object], request)
    for name in ("session", "prompt"):
        if name not in fields:
            raise RunRequestError(f"{where}: the request has no {name!r} (it must be {shape})")
        _must_be_text(fields, name, where)
    if "cwd" in fields:
        _must_be_text(fields, "cwd", where)
    unknown = sorted(repr(key) for key in fields if key not in ("session", "prompt", "cwd"))
    if unknown:
        raise RunRequestError(
            f"{where}: the request has unknown fields {', '.join(unknown)} (it must be {shape})"
        )
    if not cast(str, fields["session"]):
        raise RunRequestError(f"{where}: the request's 'session' is empty")
    if "cwd" in fields and not os.path.isabs(cast(str, fields["cwd"])):
        raise RunRequestError(f"{where}: the request's 'cwd' must be an absolute folder")
    return cast(RunRequest, fields)


def _must_be_text(fields: dict[object, object], name: str, where: str) -> None:
    if not isinstance(fields[name], str):
        raise RunRequestError(
            f"{where}: the request's {name!r} must be a string, not {type(fields[name]).__name__}"
        )


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
        # Patient: the first run may start while the database restarts (runs ride that out).
        _shared_store = open_store(_current().config.sessions, patient=True)
    return _shared_store


def _current() -> Runtime:
    if _runtime is None:
        raise RuntimeError("tether.durable: no runtime installed (start a worker first)")
    return _runtime


DBOS_REQUIREMENT = "dbos>=3.4,<4"
"""The DBOS versions tether.durable was tested with, as ``pyproject.toml`` pins them (a test
keeps the two alike): ``executing`` reads private members of DBOS, which another may lack."""


class DbosVersionError(UserError):
    """The installed DBOS lacks what tether.durable reads of its private members."""


def check_dbos() -> None:
    """Raise ``DbosVersionError`` now, at a worker's launch (DBOS made, not launched), if the
    installed DBOS lacks the private members ``executing`` reads: an upgrade past the pinned
    versions then fails at once in one line, not on every heartbeat of a worker taking runs."""
    _active_workflows()


def _active_workflows() -> Any:
    """DBOS's private record of the executions under way in this process."""
    get_instance = getattr(dbos._dbos, "_get_dbos_instance", None)
    active = getattr(get_instance(), "_active_workflows_set", None) if callable(get_instance) else None
    if not callable(getattr(active, "activeList", None)):
        missing = (
            "dbos._dbos._get_dbos_instance"
            if not callable(get_instance)
            else "DBOS._active_workflows_set.activeList()"
        )
        raise DbosVersionError(
            f"tether.durable needs {DBOS_REQUIREMENT}, not dbos {importlib.metadata.version('dbos')}, "
            f"which lacks {missing}: pip install '{DBOS_REQUIREMENT}'"
        )
    return active


def executing() -> frozenset[str]:
    """The ids of the runs this process is running now: the worker tells from them which of the
    runs DBOS has as running on its queue none of its executions is still under way for.

    Read from DBOS's own record of its executions, not from ``durable_run`` entering and leaving:
    DBOS writes a run's outcome after the workflow returns, and retries that write through a
    database outage without a deadline (``db_retry``, backing off up to 90 s); it forgets the
    execution only once the write is done or refused for good. A run that had left
    ``durable_run`` but whose outcome DBOS was still retrying looked unattended, was put back on
    the shared queue and could run twice.

    That record is private to DBOS (``_active_workflows_set``): a DBOS without it raises
    ``DbosVersionError`` here, saying so, and ``launch`` asks first (``check_dbos``), so an
    upgrade that removed it fails at a worker's start, not on every beat."""
    return frozenset(_active_workflows().activeList())


@DBOS.workflow(name=WORKFLOW)
async def durable_run(request: RunRequest) -> RunOutcome:
    """Run one prompt on a stored session, durably (see the module docstring).

    A failed run is logged here in one line naming the run, its session and why, its traceback
    only when the ``tether.durable`` logger is at DEBUG (``tether worker --verbose``): a damaged
    session or a failing ``--setup`` is data, said to the submitter in one line as well. DBOS logs
    the same failure with its traceback (some 70 lines, mostly its own frames); the worker drops
    that record (``logged_failure``)."""
    run_id = DBOS.workflow_id
    try:
        return await _run(request, run_id)
    except Exception as exc:  # a cancel (DBOSWorkflowCancelledError) is a BaseException: no failure
        fields = cast(object, request)  # anything a program enqueued: check_request may refuse it
        session = cast(dict[str, object], fields).get("session") if isinstance(fields, dict) else None
        lines = message_lines(exc)
        cut = f" ({len(lines) - 1} more lines: tether worker --verbose shows them)" if len(lines) > 1 else ""
        # escaped as a terminal shows them: a newline in a session id someone enqueued forged
        # a line of the log, an escape sequence in an error set the title of a ``tail -f``
        log.error(
            "run %s%s failed: %s%s",
            visible(str(run_id), one_line=True),
            f" of session {visible(session, one_line=True)}" if isinstance(session, str) and session else "",
            visible(lines[0], one_line=True),
            cut,
            exc_info=exc if log.isEnabledFor(logging.DEBUG) else None,
        )
        # past the class's own __setattr__: one refusing attributes (a frozen dataclass) raised
        # here, its error replacing the run's
        with contextlib.suppress(AttributeError, TypeError):
            object.__setattr__(exc, _LOGGED, True)
        raise


_LOGGED = "_tether_logged"
"""The mark ``durable_run`` puts on a failure it logged (an attribute: exceptions take no weak
reference, and an id may be a later object's)."""


def logged_failure(exc: BaseException) -> bool:
    """Whether ``durable_run`` logged ``exc`` already (the run's one line)."""
    return getattr(exc, _LOGGED, False) is True


async def _run(request: RunRequest, run_id: str | None) -> RunOutcome:
    request = check_request(request, f"run {run_id}")
    runtime = _current()
    execution = uuid.uuid4().hex  # not checkpointed on purpose: it tells executions apart
    session_id = request["session"]
    lease = await _lock(runtime, session_id)
    try:
        start = await DBOS.run_step_async({"name": "begin"}, _begin, session_id, request.get("cwd"))
    except BaseException:
        lease.release()
        raise
    events = EventLog()
    core = await _open(runtime, session_id, start, lease, execution, events)
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


async def _lock(runtime: Runtime, session_id: str) -> WriterLease:
    """The session's writer lease, waited for while another writer holds it: a person's open
    session (the run queues behind them), or a dead worker's lease until its connection is gone."""
    waited = 0.0
    while True:
        try:
            return _store().acquire_writer(session_id)
        except SessionLockedError as exc:
            if waited >= runtime.config.lock_wait_seconds:
                raise SessionLockedError(
                    session_id, f"{exc.holder or 'another writer'}, for all of {waited:.0f} s this run waited"
                ) from None
            await asyncio.sleep(1.0)
            waited += 1.0


async def _begin(session_id: str, cwd: str | None = None) -> _Start:
    """Record the session's leaf and the run's base entry id (greater than every stored id), as
    of holding its writer lease, and its folder: ``cwd`` as submitted (checked by its
    submitter), else the session's recorded one."""
    store = _store()
    record = store.get_session(session_id)
    base = new_id(store.newest_entry_id(session_id))
    return {"leaf": record.leaf_id, "base": base, "cwd": cwd or record.cwd}


async def _open(
    runtime: Runtime, session_id: str, start: _Start, lease: WriterLease, execution: str, events: EventLog
) -> AgentSession:
    """The run's ``AgentSession``, built as the CLI builds one, with its model and tools as steps;
    it takes over ``lease`` (closing it releases the lease)."""
    cwd = Path(start["cwd"])
    try:
        settings = load_settings(runtime.config_dir, cwd)
        # the database this worker keeps runs in, wherever it came from (flag, environment), so
        # that the run's sandbox hides it as it hides the session database
        settings = replace(
            settings, durable=replace(settings.durable, database=runtime.config.system_database)
        )
        # The CLI's resolver, so a worker's run has the tools, skills and prompt of a CLI run; MCP
        # servers and extensions are programs a worker does not start on a session's behalf.
        options = SessionOptions(model=runtime.model, approval=runtime.approval, mcp=False, extensions=False)
        core = start_session(
            options,
            cwd=cwd,
            settings=settings,
            ask=None,
            session=SessionChoice(session_id=session_id),
            sessions=_RunSessions(_store(), start, lease),
        )
    except BaseException:
        lease.release()
        raise
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
    """The session manager of one run: the session it opens for writing is the run's, under the
    lease the run holds already, rewound to the run's start and taking the run's deterministic
    entry ids (see the module docstring)."""

    def __init__(self, store: SessionStore, start: _Start, lease: WriterLease) -> None:
        super().__init__(store)
        self._start = start
        self._lease = lease

    def _writable(self, record: SessionRecord) -> Session:
        if record.id != self._lease.session_id:
            return super()._writable(record)
        return self._load(self.store.get_session(record.id), self._lease)

    def open(self, session_id: str, *, readonly: bool = False) -> Session:
        session = super().open(session_id, readonly=readonly)
        if not readonly:
            session.use_ids(_step_ids(self._start["base"]))
            if session.leaf_id != self._start["leaf"]:
                _check_replay(session, self._start)
                session.branch(self._start["leaf"])
        return session


def _check_replay(session: Session, start: _Start) -> None:
    """``SessionError`` unless every entry from the run's start to the session's leaf is the
    run's own (its ids, in order, from ``base``): only then is rewinding to the start no fork."""
    path = [entry["id"] for entry in session.path()]
    begin = 0 if start["leaf"] is None else path.index(start["leaf"]) + 1 if start["leaf"] in path else -1
    own = _step_ids(start["base"])
    if begin < 0 or any(entry_id != own() for entry_id in path[begin:]):
        raise SessionError(
            f"session {session.id!r} moved on since this run started (its leaf is now "
            f"{session.leaf_id}): not replaying the run onto a branch of its own; submit it again"
        )


def _step_ids(base: str) -> Callable[[], str]:
    """``base``, then each following id: the same sequence on every replay."""
    value = decode(base)
    count = 0

    def next_id() -> str:
        nonlocal count
        count += 1
        return encode(value + count - 1)

    return next_id
