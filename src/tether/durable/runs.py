"""What an operator does with durable runs: list, inspect, cancel, resume, retry, prune.

Each function takes a ``DurableClient`` (any process that reaches the system database; no worker
needed) and returns plain data that ``tether runs … --json`` prints as it is. A run is a DBOS
workflow of ``WORKFLOW``; its record (status, steps, stream) lives in the system database, its
transcript in the session store.

- ``cancel``: DBOS marks the run cancelled; the worker running it notices within
  ``CANCEL_POLL_SECONDS`` and aborts it as a person's Esc would: the model call and the tool stop,
  the interrupted answer is stored marked aborted, so the session stays consistent and can be
  continued.
- ``resume``: a failed run, or one cancelled before it started, goes on from its last checkpoint,
  refused by the run itself if its session moved on meanwhile (``workflow._check_replay``). A run
  cancelled while it ran is not resumed: its cancel stored answers under the run's own entry ids
  (the aborted reply, the tools answered "cancelled"), which a replay would take for its own and
  skip, so whatever it answered after them would be lost. ``retry`` runs its prompt again.
- ``retry``: the same prompt again as a new run, from the session's current leaf.
- ``prune``: finished runs' records older than a cutoff are deleted (transcripts stay).
"""

from __future__ import annotations

import base64
import io
import pickle
import time
from dataclasses import asdict, dataclass, field
from typing import Any, cast

from dbos import WorkflowStatus

from tether.durable.client import DurableClient, no_tables
from tether.durable.config import QUEUE, WORKFLOW
from tether.errors import UserError

FINISHED = ("SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")
STATUSES = ("ENQUEUED", "PENDING", *FINISHED)


class RunNotFoundError(UserError, LookupError):
    def __init__(self, run_id: str) -> None:
        super().__init__(f"no durable run {run_id!r}")


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One run as ``tether runs list`` shows it."""

    id: str
    status: str
    session: str | None
    prompt: str | None
    worker: str | None
    """The executor (worker name) that ran it last."""
    created: float | None
    """Unix seconds."""
    updated: float | None
    error: str | None
    timeout_seconds: float | None
    cwd: str | None = None
    """The folder it works in, as its submitter checked it, kept so that ``runs retry`` works
    where the first run was allowed to, not wherever the session's file says by then; ``None``:
    the session's recorded one (the submitter named none)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class StepInfo:
    number: int
    name: str
    started: float | None
    ended: float | None
    error: str | None
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0


@dataclass(frozen=True, slots=True)
class RunDetail:
    """One run as ``tether runs show`` shows it: the run, its steps, and what its model calls cost."""

    run: RunInfo
    steps: list[StepInfo] = field(default_factory=list[StepInfo])
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _info(status: WorkflowStatus) -> RunInfo:
    request = _request(status)
    error = status.error
    return RunInfo(
        id=status.workflow_id,
        status=status.status,
        session=_text(request, "session") if request else status.queue_partition_key,
        prompt=_text(request, "prompt"),
        worker=status.executor_id,
        created=status.created_at / 1000 if status.created_at else None,
        updated=(status.completed_at or status.updated_at or 0) / 1000 or None,
        error=_one_line(error) if error is not None else None,
        timeout_seconds=status.workflow_timeout_ms / 1000 if status.workflow_timeout_ms else None,
        cwd=_text(request, "cwd"),
    )


def _request(status: WorkflowStatus) -> dict[str, Any] | None:
    inputs = status.input
    args = inputs["args"] if inputs else ()
    return cast(dict[str, Any], args[0]) if args and isinstance(args[0], dict) else None


def _text(request: dict[str, Any] | None, name: str) -> str | None:
    """A request's field when it is text: a run enqueued by a program may hold anything (it ended
    in ``ERROR`` saying what, ``workflow.check_request``), and a listing shows it as missing."""
    value = request.get(name) if request else None
    return value if isinstance(value, str) else None


def _one_line(error: object) -> str:
    """The first line of a run's or a step's error. DBOS gives an error it cannot unpickle here
    (its class in a module only the worker has: a ``--setup`` tool's) as the pickle itself,
    base64, and that was the line shown: it is read with a stand-in for each class this
    process lacks, and shown as ``module.Class: its first line``."""
    if isinstance(error, str):
        error = _unpickled(error)
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


class _StandIns(pickle.Unpickler):
    """Unpickles an error, a stand-in exception for each class that cannot be found here, or that
    is not an exception (nothing else but exceptions is called)."""

    def find_class(self, module: str, name: str) -> Any:
        try:
            found = super().find_class(module, name)
        except (ImportError, AttributeError):
            found = None
        if isinstance(found, type) and issubclass(found, BaseException):
            return found
        return type(name, (_StandIn,), {"__module__": module, "__qualname__": name})


class _StandIn(Exception):
    """An error of a class this process cannot import: says the class, then the error's text."""

    def __str__(self) -> str:
        kind = type(self)
        return f"{kind.__module__}.{kind.__qualname__}: {super().__str__()}"


def _unpickled(text: str) -> object:
    """What DBOS gave as text in place of an error: unpickled with stand-ins, or the text as it is
    when it is not a pickle of one."""
    try:
        error = _StandIns(io.BytesIO(base64.b64decode(text, validate=True))).load()
    except Exception:
        return text
    return error if isinstance(error, BaseException) else text


def list_runs(
    client: DurableClient,
    *,
    status: str | None = None,
    session: str | None = None,
    worker: str | None = None,
    newer_than: float | None = None,
    older_than: float | None = None,
    limit: int | None = 100,
) -> list[RunInfo]:
    """Runs, newest first. ``newer_than``/``older_than``: their age in seconds (by creation)."""
    now = time.time()
    found = _workflows(
        client,
        name=WORKFLOW,
        status=status,
        executor_id=worker,
        start_time=_iso(now - newer_than) if newer_than is not None else None,
        end_time=_iso(now - older_than) if older_than is not None else None,
        sort_desc=True,
        limit=None if session is not None else limit,
    )
    runs = [_info(w) for w in found]
    if session is not None:
        runs = [r for r in runs if r.session == session][:limit]
    return runs


def show(client: DurableClient, run_id: str) -> RunDetail:
    """The run with its steps, their timings, and the tokens and cost of its model calls."""
    found = _workflows(client, workflow_ids=[run_id])
    if not found:
        raise RunNotFoundError(run_id)
    steps: list[StepInfo] = []
    for step in client.dbos.list_workflow_steps(run_id):
        usage = _usage(step["output"]) if step["function_name"] == "model" else {}
        cost = usage.get("cost")
        steps.append(
            StepInfo(
                number=step["function_id"],
                name=step["function_name"],
                started=_seconds(step["started_at_epoch_ms"]),
                ended=_seconds(step["completed_at_epoch_ms"]),
                error=_one_line(step["error"]) if step["error"] is not None else None,
                input_tokens=int(usage.get("input") or 0),
                output_tokens=int(usage.get("output") or 0),
                cost=float(cast(dict[str, Any], cost).get("total") or 0) if isinstance(cost, dict) else 0.0,
            )
        )
    return RunDetail(
        run=_info(found[0]),
        steps=steps,
        input_tokens=sum(s.input_tokens for s in steps),
        output_tokens=sum(s.output_tokens for s in steps),
        cost=sum(s.cost for s in steps),
    )


def _usage(output: object) -> dict[str, Any]:
    if isinstance(output, dict):
        usage = cast(dict[str, Any], output).get("usage")
        if isinstance(usage, dict):
            return cast(dict[str, Any], usage)
    return {}


def cancel(client: DurableClient, run_id: str) -> RunInfo:
    """Cancel the run (see the module docstring); a finished run is left as it is."""
    run = _get(client, run_id)
    if run.status not in FINISHED:
        client.dbos.cancel_workflow(run_id)
    return _get(client, run_id)


def resume(client: DurableClient, run_id: str) -> RunInfo:
    """Put a cancelled or failed run back in the queue, to go on from its last checkpoint."""
    run = _get(client, run_id)
    if run.status == "SUCCESS":
        raise ValueError(f"run {run_id} has finished: `tether runs retry {run_id}` runs its prompt again")
    if run.status == "CANCELLED" and client.dbos.list_workflow_steps(run_id):
        raise ValueError(
            f"run {run_id} was cancelled while it ran, and its session holds the answers the cancel "
            f"gave: `tether runs retry {run_id}` runs its prompt again from there"
        )
    client.dbos.resume_workflow(run_id, queue_name=QUEUE)  # under the limits, as submitted
    return _get(client, run_id)


def retry(client: DurableClient, run_id: str) -> str:
    """Submit the run's prompt again on its session, as a new run, in the folder the run was
    submitted to work in; returns the new run's id."""
    run = _get(client, run_id)
    if run.session is None or run.prompt is None:
        raise ValueError(f"run {run_id} has no recorded session and prompt (text) to run again")
    return client.submit(run.session, run.prompt, timeout=run.timeout_seconds, cwd=run.cwd)


def prune(client: DurableClient, older_than_days: float) -> list[str]:
    """Delete the records of finished runs that ended more than ``older_than_days`` ago (their
    steps, events and status; transcripts stay in the session store); returns their ids."""
    return prune_with(client.dbos, older_than_days)


def prune_with(dbos: Any, older_than_days: float) -> list[str]:
    """``prune`` through ``dbos``: a ``DBOSClient``, or the ``DBOS`` class in a worker."""
    cutoff = _iso(time.time() - older_than_days * 86400)
    old = dbos.list_workflows(
        name=WORKFLOW, status=list(FINISHED), completed_before=cutoff, load_input=False, load_output=False
    )
    ids = [cast(WorkflowStatus, w).workflow_id for w in old]
    if ids:
        dbos.delete_workflows(ids)
    return ids


def _get(client: DurableClient, run_id: str) -> RunInfo:
    found = _workflows(client, workflow_ids=[run_id], load_output=False)
    if not found:
        raise RunNotFoundError(run_id)
    return _info(found[0])


def _workflows(client: DurableClient, **query: Any) -> list[WorkflowStatus]:
    """DBOS's runs matching ``query``; none before a worker has ever started on the database (its
    tables are made then): a fresh machine has no runs, not a missing table."""
    try:
        return client.dbos.list_workflows(**query)
    except Exception as exc:
        if no_tables(exc):
            return []
        raise


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{int(seconds % 1 * 1000):03d}Z"


def _seconds(ms: int | None) -> float | None:
    return ms / 1000 if ms else None
