"""Submitting a durable run and following it, from any process that reaches the databases.

``submit`` enqueues a run with a ``DBOSClient`` (no DBOS launch, no workflow code needed: the
run is addressed by its registered name); ``follow`` reads the run's event stream as the worker
writes it, from whichever worker runs it (and from the one that recovers it after a crash).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future, wait
from typing import Any, TypeVar, cast

import sqlalchemy as sa
from dbos import DBOSClient, EnqueueOptions, WorkflowHandleAsync

from tether.durable.config import EVENTS, QUEUE, WORKFLOW, DurableConfig, first_line
from tether.durable.workflow import RunOutcome, check_request
from tether.errors import TransportError
from tether.session.events import SessionEvent
from tether.store.database import is_postgres_url, open_store
from tether.store.paths import redact

KEY_PREFIX = "key-"
"""The id of a run submitted with a key: this plus the key."""
CONNECT_TIMEOUT = 5
"""Seconds a client's connection attempt waits, unless its URL says (a server that stopped
answering held ``tether runs`` at its connect for ever)."""
KEEPALIVES = {
    "keepalives": "1",
    "keepalives_idle": "30",
    "keepalives_interval": "10",
    "keepalives_count": "3",
}
"""TCP keepalives of a client's connections, unless its URL sets one: a server host gone without a
word (powered off, cut off) ends its connections in about a minute. Not the workers': their
connections ride an outage out, DBOS's own settings."""
MAX_WAITING = 32
"""Calls left waiting for an answer past ``answer_wait_seconds`` (each a thread, on a server
frozen, until it answers): past this many, a call is refused at once."""

T = TypeVar("T")


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


def client_url(url: str) -> str:
    """``url`` for a client's connections: a PostgreSQL URL with ``CONNECT_TIMEOUT`` and
    ``KEEPALIVES`` unless it sets them (a URL's own choice wins), any other as it is."""
    if not is_postgres_url(url):
        return url
    parsed = sa.make_url(url)
    added = {} if "connect_timeout" in parsed.query else {"connect_timeout": str(CONNECT_TIMEOUT)}
    if not any(name.startswith("keepalives") for name in parsed.query):
        added.update(KEEPALIVES)
    return parsed.update_query_dict(added).render_as_string(hide_password=False)


class DurableClient:
    """Submit and follow runs. ``with DurableClient(config) as client: ...``; a command that must
    not wait for ever on a database that stopped answering calls through ``answer``."""

    def __init__(self, config: DurableConfig, *, ride_out_outages: bool = True) -> None:
        """``ride_out_outages``: a call that loses its connection waits for the database to come
        back (DBOS's way), else it fails at once (``answer``: a command says so and ends)."""
        self.config = config
        self._where = shown(config.system_database)
        try:
            self._client = DBOSClient(
                system_database_url=client_url(config.system_database),
                application_name="tether",
                retry_connection_errors=ride_out_outages,
            )
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


_waiting = threading.BoundedSemaphore(MAX_WAITING)
"""A place for each call under way (``_started``), taken back when its thread ends."""


def answer(config: DurableConfig, work: Callable[[DurableClient], T], *, effect: str = "") -> T:
    """``work`` with a client of ``config``, waited for ``config.answer_wait_seconds``.

    The client and the work run on a daemon thread: a server frozen after connecting answers
    nothing, ever, and neither the connect timeout nor keepalives end that wait (its kernel
    acknowledges). Past the wait, ``SubmitError`` says so in one line; ``effect`` names what the
    work changes ("the cancel"), which the line says may still take effect (the database may have
    done it and not answered yet). The thread is left to end when the database answers;
    ``MAX_WAITING`` such threads at most (``SubmitError`` at once past them)."""
    future = _started(config, work)
    if not wait([future], config.answer_wait_seconds).done:
        raise _no_answer(config, effect)
    return future.result()


async def answer_async(config: DurableConfig, work: Callable[[DurableClient], T], *, effect: str = "") -> T:
    """``answer`` awaited: the event loop's own threads are not held while the database is silent."""
    waited = asyncio.wrap_future(_started(config, work))
    done, _ = await asyncio.wait([waited], timeout=config.answer_wait_seconds)
    if not done:
        waited.cancel()  # what the thread ends with later is nobody's to read
        raise _no_answer(config, effect)
    return waited.result()


def _started(config: DurableConfig, work: Callable[[DurableClient], T]) -> Future[T]:
    if not _waiting.acquire(blocking=False):
        raise SubmitError(
            f"durable database {shown(config.system_database)}: {MAX_WAITING} calls are still "
            "waiting for its answer; try again later"
        )
    future: Future[T] = Future()
    future.set_running_or_notify_cancel()  # a waiter giving up cancels its wrapper, not this

    def run() -> None:
        try:
            with DurableClient(config, ride_out_outages=False) as client:
                value = work(client)
        except BaseException as exc:  # the caller's to raise, or nobody's if it stopped waiting
            _waiting.release()  # before the caller, woken, calls again
            future.set_exception(exc)
        else:
            _waiting.release()
            future.set_result(value)

    threading.Thread(target=run, name="tether-durable-call", daemon=True).start()
    return future


def _no_answer(config: DurableConfig, effect: str) -> SubmitError:
    later = f": {effect} may still take effect" if effect else ""
    return SubmitError(
        f"durable database {shown(config.system_database)} did not answer within "
        f"{config.answer_wait_seconds:g} s{later}"
    )
