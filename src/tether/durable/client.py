"""Submitting a durable run and following it, from any process that reaches the databases.

``submit`` enqueues a run with a ``DBOSClient`` (no DBOS launch, no workflow code needed: the
run is addressed by its registered name); ``follow`` reads the run's event stream as the worker
writes it, from whichever worker runs it (and from the one that recovers it after a crash).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, cast

from dbos import DBOSClient, EnqueueOptions, WorkflowHandleAsync

from tether.durable.config import EVENTS, QUEUE, WORKFLOW, DurableConfig, first_line
from tether.durable.workflow import RunOutcome, check_request
from tether.errors import TransportError
from tether.session.events import SessionEvent
from tether.store.database import is_postgres_url, open_store
from tether.store.paths import redact

KEY_PREFIX = "key-"
"""The id of a run submitted with a key: this plus the key."""


class SubmitError(TransportError):
    """A run could not be submitted or followed; the message says why."""


def shown(url: str) -> str:
    """A database URL for messages: without its password."""
    return redact(url) if is_postgres_url(url) else url


def no_tables(exc: BaseException) -> bool:
    """Whether a query failed because DBOS's tables are not there yet (no worker ever started
    on the database), as opposed to a database that cannot be used at all."""
    cause = getattr(exc, "orig", None) or exc
    return type(cause).__name__ == "UndefinedTable" or "no such table" in str(cause)


class DurableClient:
    """Submit and follow runs. ``with DurableClient(config) as client: ...``."""

    def __init__(self, config: DurableConfig) -> None:
        self.config = config
        self._where = shown(config.system_database)
        try:
            self._client = DBOSClient(system_database_url=config.system_database, application_name="tether")
        except Exception as exc:
            raise SubmitError(f"durable database {self._where}: {first_line(exc)}") from None

    @property
    def dbos(self) -> DBOSClient:
        """The DBOS client underneath (``tether.durable.runs`` uses it)."""
        return self._client

    def submit(
        self,
        session_id: str,
        prompt: str,
        *,
        key: str | None = None,
        timeout: float | None = None,
        cwd: str | Callable[[str], str] | None = None,
    ) -> str:
        """Enqueue a run of ``prompt`` on the stored session ``session_id``; returns the run id.

        The session must exist in the store the workers use; runs of one session execute one
        after the other (one writer per session).

        Args:
            key: Makes the submit idempotent: submitting again with the same key (a retry after a
                lost answer, a duplicate request) returns the first run's id instead of making a
                second run. The run's id is ``KEY_PREFIX`` plus the key.
            timeout: Seconds after it starts when the run is cancelled (default: the
                ``durable.runTimeoutSeconds`` setting; 0: no limit).
            cwd: The folder the run works in, absolute, as the caller checked it (``tether
                serve``: ``recorded_workspace``); or what gives it from the session's recorded
                folder, raising to refuse the run (``tether submit``), called with the row this
                submit reads to see that the session exists, so it is read once; default: the
                session's recorded folder, whatever its file said.
        """
        asked: dict[str, str] = {"session": session_id, "prompt": prompt}
        if isinstance(cwd, str):
            asked["cwd"] = cwd
        request = check_request(asked, "submit")
        store = open_store(self.config.sessions)
        try:
            recorded = store.get_session(session_id).cwd
        finally:
            store.close()
        if callable(cwd):
            request = check_request({**asked, "cwd": cwd(recorded)}, "submit")
        try:
            ready = self._client.retrieve_queue(QUEUE) is not None
        except Exception as exc:
            if not no_tables(exc):  # not a database, unreachable, refused: say so, not "no worker"
                raise SubmitError(f"durable database {self._where}: {first_line(exc)}") from None
            ready = False
        if not ready:
            raise SubmitError(
                f"no worker has started on {self._where} yet: start `tether worker` there first"
            )
        options: EnqueueOptions = {
            "workflow_name": WORKFLOW,
            "queue_name": QUEUE,
            "queue_partition_key": session_id,
        }
        seconds = self.config.run_timeout_seconds if timeout is None else timeout
        if seconds:
            options["workflow_timeout"] = seconds
        if key is not None:
            options["workflow_id"] = KEY_PREFIX + key  # DBOS returns the existing run for a known id
        try:
            run_id = self._client.enqueue(options, request).get_workflow_id()
        except Exception as exc:
            raise SubmitError(f"cannot submit to {self._where}: {first_line(exc)}") from None
        if key is not None:
            found = self._client.list_workflows(workflow_ids=[run_id], load_output=False)
            inputs = found[0].input if found else None
            if inputs is not None and list(inputs["args"]) != [request]:
                raise SubmitError(f"key {key!r} was used for another run ({run_id}): a key names one run")
        return run_id

    async def follow(self, run_id: str) -> AsyncIterator[SessionEvent]:
        """The run's events as they are written, until the run ends."""
        async for batch in self._client.read_stream_async(run_id, EVENTS, polling_interval_sec=0.1):
            for event in cast(list[SessionEvent], batch):
                yield event

    async def result(self, run_id: str) -> RunOutcome:
        """Wait for the run to end; a run that failed raises its error."""
        handle: WorkflowHandleAsync[RunOutcome] = await self._client.retrieve_workflow_async(run_id)
        return await handle.get_result()

    def status(self, run_id: str) -> str:
        """``ENQUEUED``, ``PENDING``, ``SUCCESS``, ``ERROR``, ``CANCELLED``..."""
        found = self._client.list_workflows(workflow_ids=[run_id], load_input=False, load_output=False)
        return found[0].status if found else "UNKNOWN"

    def close(self) -> None:
        self._client.destroy()

    def __enter__(self) -> DurableClient:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()
