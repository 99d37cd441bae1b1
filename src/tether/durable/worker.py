"""A worker process: DBOS launched on the system database, claiming runs from the shared queue
onto its own (``tether.durable.dispatch``: per-worker and global limits), and watching the other
workers so the runs of a dead one are finished.

DBOS recovers a worker's own unfinished runs when it launches under the same executor id (a
restarted worker with the same ``--name``): it puts them back on its queue at once. Runs of a
worker that never comes back are given to the live ones: every worker records a heartbeat
(``tether_workers`` in the system database) every ``heartbeat_seconds``; when a run is claimed
or pending under an executor whose heartbeat is older than ``dead_after_seconds`` (or that has
none), a live worker puts that executor's runs back on the shared queue, where exactly one live
worker claims each; the replay then skips every checkpointed step. Several workers noticing the
same death at once is harmless: giving back is idempotent. Heartbeats are stamped and judged by
the database's clock, not the workers': hosts' clocks differ, and a starved worker may write a
beat seconds after it read its own clock (a loaded host would then look dead early). A worker
beats from a thread of its own: when the look for dead workers (or the hourly pruning) shared its
loop, a slow one on a loaded host held the next beat back, and others could take a live worker
for dead and run its runs a second time.

A database outage (a restart, a failover) stops no worker and cancels no run: DBOS's own calls
wait for the database and go on, the session store's too (``PostgresStore.outage_seconds``), and
the heartbeat logs one line when the database goes away and one when it is back. Every worker's
heartbeat lapses during an outage, so a worker takes another for dead only after it has itself
been connected for ``dead_after_seconds`` since the database came back: the others had that long
to beat again. (Otherwise the first worker back would recover the runs the others are still
running, and run them twice.)
"""

from __future__ import annotations

import ast
import contextlib
import logging
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy as sa
from dbos import DBOS
from sqlalchemy.exc import DBAPIError

from tether._version import __version__
from tether.durable.client import shown
from tether.durable.config import APP_NAME, QUEUE, WORKFLOW, DurableConfig, first_line
from tether.durable.dispatch import Dispatcher, own_queue, system_engine
from tether.durable.runs import prune_with
from tether.durable.workflow import (
    DbosVersionError,
    Runtime,
    check_dbos,
    executing,
    install,
    logged_failure,
)
from tether.wire.escapes import visible

_METADATA = sa.MetaData()
_WORKERS = sa.Table(
    "tether_workers",
    _METADATA,
    sa.Column("executor_id", sa.Text, primary_key=True),
    sa.Column("host", sa.Text, nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("seen", sa.Float, nullable=False),
)

log = logging.getLogger("tether.durable")


def launch(runtime: Runtime) -> Dispatcher:
    """Install ``runtime``, launch DBOS in this process listening to this worker's own queue,
    declare the queues and start claiming runs (``tether.durable.dispatch``); ``shutdown`` undoes it."""
    config = runtime.config
    install(runtime)
    logging.getLogger("dbos").addFilter(_FAILED_RUNS)
    logging.getLogger("dbos").addFilter(_CANCELLED_STEPS)
    DBOS(
        config={
            "name": APP_NAME,
            "system_database_url": config.system_database,
            "executor_id": config.executor_id,
            # One version for every worker of this tether release: DBOS recovers and dequeues
            # only runs of its own version, and its default is a hash of the workflow code.
            "application_version": __version__,
            "log_level": "WARNING",
        }
    )
    try:
        check_dbos()  # before anything starts: a DBOS of another version fails here, in one line
    except DbosVersionError:
        DBOS.destroy()
        install(None)
        raise
    mine = own_queue(config.executor_id)
    DBOS.listen_queues([mine])  # submitted runs reach it through claims only
    DBOS.launch()
    DBOS.register_queue(
        QUEUE,
        global_concurrency=config.global_concurrency or None,  # the claims read it from here
        partition_concurrency=1,  # one run at a time per session: the session has one writer
        on_conflict="always_update",
    )
    DBOS.register_queue(
        mine,
        worker_concurrency=config.worker_concurrency or None,
        polling_interval_sec=0.25,
        on_conflict="always_update",
    )
    dispatcher = Dispatcher(config)
    dispatcher.start()
    return dispatcher


def shutdown(dispatcher: Dispatcher) -> None:
    """Stop claiming, stop DBOS, and put the runs claimed but not started back on the shared
    queue (the started ones are resumed by this worker's next start under its name, or by a
    live worker once this one's heartbeat is gone)."""
    dispatcher.stop()
    try:
        DBOS.destroy()
        with contextlib.suppress(DBAPIError):  # the database is away: a live worker gives them back
            dispatcher.release()
    finally:
        dispatcher.close()
        install(None)


PRUNE_EVERY_SECONDS = 3600.0
"""How often a worker deletes the records of runs older than ``durable.keepRunsDays`` (every
worker does; deleting what another deleted already is nothing)."""


class Heartbeats:
    """This worker's heartbeat row, and the others' (see the module docstring)."""

    def __init__(self, config: DurableConfig) -> None:
        self.config = config
        self._engine = system_engine(config.system_database)
        _METADATA.create_all(self._engine)
        self._clock = _database_clock(self._engine)
        self._away_since: float | None = None
        """When a beat first failed (monotonic), while the database is away."""
        self._back_since = float("-inf")
        """When the database came back after an outage this worker saw (monotonic)."""

    def beat(self) -> bool:
        """Record that this worker is alive; False (and one log line an outage) if the database
        cannot be reached now."""
        me = self.config.executor_id
        try:
            with self._engine.begin() as db:
                db.execute(_WORKERS.delete().where(_WORKERS.c.executor_id == me))
                db.execute(
                    _WORKERS.insert().values(
                        executor_id=me, host=socket.gethostname(), pid=os.getpid(), seen=self._clock
                    )
                )
        except DBAPIError as exc:
            if self._away_since is None:
                self._away_since = time.monotonic()
                log.warning(
                    "durable database %s unreachable (%s): runs wait for it; nothing is cancelled",
                    shown(self.config.system_database),
                    first_line(exc),
                )
            return False
        if self._away_since is not None:
            log.warning(
                "durable database %s reachable again after %.1f s",
                shown(self.config.system_database),
                time.monotonic() - self._away_since,
            )
            self._away_since = None
            self._back_since = time.monotonic()
        return True

    @property
    def connected(self) -> bool:
        """Whether the last beat reached the database."""
        return self._away_since is None

    def settled(self) -> bool:
        """Whether this worker may judge the others by their heartbeats: connected now, and for
        ``dead_after_seconds`` since the last outage it saw."""
        return (
            self._away_since is None and time.monotonic() - self._back_since >= self.config.dead_after_seconds
        )

    def live(self) -> set[str]:
        """Executors heard from within ``dead_after_seconds``."""
        since = self._clock - self.config.dead_after_seconds
        with self._engine.connect() as db:
            rows = db.execute(sa.select(_WORKERS.c.executor_id).where(_WORKERS.c.seen >= since))
            return {row[0] for row in rows}

    def forget(self, executor_id: str) -> None:
        with self._engine.begin() as db:
            db.execute(_WORKERS.delete().where(_WORKERS.c.executor_id == executor_id))

    def close(self) -> None:
        with contextlib.suppress(DBAPIError):  # the database may be away: the row ages out
            self.forget(self.config.executor_id)
        self._engine.dispose()


def _database_clock(engine: sa.Engine) -> sa.ColumnElement[float]:
    """The database server's clock in seconds since the epoch, as a SQL expression."""
    if engine.dialect.name == "postgresql":
        return sa.cast(sa.extract("epoch", sa.func.clock_timestamp()), sa.Float)
    return (sa.func.julianday("now") - 2440587.5) * 86400.0


class Unrecorded:
    """Finds the runs of this worker whose end DBOS could not record, and runs them again.

    DBOS records a run's outcome when its workflow returns or raises; when the database refuses
    that write (read-only during a failover, ``default_transaction_read_only``) DBOS logs it and
    nothing else: the run stays ``PENDING`` on this worker's queue with nothing running it, and
    no one recovers the runs of a live worker, so it would wait for ever. A run seen that way,
    with no execution of it under way here (``workflow.executing``), on every look for
    ``dead_after_seconds``, goes back on the shared queue (``Dispatcher.give_back``): its replay
    skips every checkpointed step, as after a crash. (DBOS starts a claimed run a moment after
    marking it ``PENDING``; the wait covers that moment. A run whose outcome DBOS is still
    writing, or retrying through an outage, counts as under way.)"""

    def __init__(self, dispatcher: Dispatcher, wait_seconds: float) -> None:
        self._dispatcher = dispatcher
        self._wait = wait_seconds
        self._since: dict[str, float] = {}
        """Each run seen running here with no execution of it, since when (monotonic)."""

    def look(self) -> list[str]:
        """One look; the runs put back on the shared queue."""
        now = time.monotonic()
        idle = self._dispatcher.running_here() - executing()
        self._since = {run: self._since.get(run, now) for run in idle}
        lost = {run for run, since in self._since.items() if now - since >= self._wait}
        if not lost:
            return []
        moved = self._dispatcher.give_back(self._dispatcher.config.executor_id, running=True, only=lost)
        for run in lost:
            del self._since[run]
        return moved


def recover_dead(heartbeats: Heartbeats, dispatcher: Dispatcher) -> list[str]:
    """Give the runs of every silent worker to the live ones: those on its own queue go back on
    the shared queue (``Dispatcher.give_back``), any other pending run of it is recovered by
    DBOS; returns the run ids."""
    pending = DBOS.list_workflows(status="PENDING", name=WORKFLOW, load_input=False, load_output=False)
    owners = dispatcher.owners()
    # Judged after the listings, which wait out an outage: heartbeats as of now.
    if not heartbeats.settled():
        return []
    live = heartbeats.live() | {heartbeats.config.executor_id}
    suspects = {w.executor_id for w in pending if w.executor_id} | owners
    recovered: list[str] = []
    for executor in sorted(suspects - live):
        recovered.extend(dispatcher.give_back(executor, running=True))
        handles = DBOS._recover_pending_workflows([executor])  # pyright: ignore[reportPrivateUsage]
        recovered.extend(h.get_workflow_id() for h in handles)
        DBOS.delete_queue(own_queue(executor))
        heartbeats.forget(executor)
    return recovered


_OUTAGE_WORDS = (
    "OperationalError",
    "connection failed",
    "server closed the connection",
    "Connection refused",
    "read-only transaction",  # a failover's standby, before it is promoted
)


class _OutageNoise(logging.Filter):
    """Drops the warnings DBOS's threads and psycopg's pool log on every retry while the database
    is away or read-only (each with the driver's multi-line message and its SQL, three every
    0.25 s): the heartbeat says so once, and again when it is back."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            return True
        message = record.getMessage()
        return (
            not any(word in message for word in _OUTAGE_WORDS)
            and "discarding closed connection" not in message
        )


_NOISE = _OutageNoise()


class _FailedRuns(logging.Filter):
    """Drops DBOS's record of a run that failed ("Exception encountered in asynchronous
    workflow", with a traceback of some 70 lines): the run said it in one line already, naming
    the run, its session and why (``workflow.durable_run``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.exc_info is None or record.exc_info[1] is None or not logged_failure(record.exc_info[1])


_FAILED_RUNS = _FailedRuns()

DBOS_CANCELLED = "Asyncio task cancelled for workflow or step "
"""How DBOS's warning for each step or workflow it cancels starts (``dbos/_outcome.py``; a test
pins it), a run cancelled or its worker stopping; the callable's repr follows."""
_FUNCTION = re.compile(r"<function (\S+) at 0x[0-9a-f]+>")
_RUN = re.compile(r"<dbos\._dbos\.DBOS object at 0x[0-9a-f]+>, ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")")


class _CancelledSteps(logging.Filter):
    """Cuts DBOS's warning for a cancelled step (``DBOS_CANCELLED``) to the step's function and
    its run: the callable's repr held the step's arguments, a model step's the whole context
    (the system prompt, every message), in one line per step under way as a worker stopped."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message.startswith(DBOS_CANCELLED):
            record.msg, record.args = DBOS_CANCELLED + _cancelled(message[len(DBOS_CANCELLED) :]), ()
        return True


def _cancelled(callable_repr: str) -> str:
    """The step's function and run in DBOS's repr of a cancelled callable: a step is
    ``functools.partial(<function _supervise_step …>, <DBOS object …>, 'RUN', <function STEP …>,
    ARGUMENTS…)``, a workflow a function."""
    names: list[str] = _FUNCTION.findall(callable_repr)
    if names[:1] == ["_supervise_step"]:
        names = names[1:]
    run = _RUN.search(callable_repr)
    of_run = f" of run {visible(ast.literal_eval(run.group(1)), one_line=True)}" if run else ""
    return (names[0] if names else "(unnamed)") + of_run


_CANCELLED_STEPS = _CancelledSteps()


def _beat(heartbeats: Heartbeats, stopped: threading.Event) -> None:
    while not stopped.wait(heartbeats.config.heartbeat_seconds):
        heartbeats.beat()


STOP_SECONDS = 15.0
"""How long a stopping worker waits for its own shutdown (the claims, DBOS, the heartbeat row),
which waits for the database: with the database away (down, or frozen with its connections
open) DBOS retries for ever and Python's exit joins its threads, so a worker stopped then never
exited. Past this the worker leaves without them (``Stopped.cut``)."""
CUT_EXIT = 3
"""``tether worker``'s exit status when its stop was cut (``STOP_SECONDS``, or a shutdown that
failed): its runs are left pending for another worker, or for its own restart under its name."""


@dataclass(frozen=True, slots=True)
class Stopped:
    """How a worker's ``serve`` ended."""

    cut: bool
    """Its shutdown did not end within ``STOP_SECONDS`` (or failed): threads are left waiting
    for the database, which only leaving the process (``leave``) ends."""
    left: int
    """The runs it had under way as it stopped: pending, for another worker or its restart."""


def serve(runtime: Runtime, stop: threading.Event, on_ready: Callable[[], None] | None = None) -> Stopped:
    """Run a worker until ``stop`` is set: heartbeat first (so no live worker takes this one for
    dead), then DBOS, then a heartbeat and the looks for dead workers and unrecorded runs every
    ``heartbeat_seconds``, each on a thread of its own (a look waits for the database as long as
    DBOS retries: for ever); then the shutdown, given ``STOP_SECONDS``."""
    for name in ("dbos", "psycopg.pool"):
        logging.getLogger(name).addFilter(_NOISE)
    heartbeats = Heartbeats(runtime.config)
    heartbeats.beat()
    beating = threading.Event()
    beater = threading.Thread(target=_beat, args=(heartbeats, beating), name="tether-heartbeat", daemon=True)
    beater.start()
    try:
        dispatcher = launch(runtime)
    except BaseException:
        beating.set()
        beater.join()
        heartbeats.close()
        raise
    watching = threading.Event()
    watcher = threading.Thread(
        target=_watch, args=(runtime, heartbeats, dispatcher, watching), name="tether-watch", daemon=True
    )
    watcher.start()

    def stop_all() -> None:
        watching.set()
        watcher.join()  # no look under way as DBOS goes
        try:
            shutdown(dispatcher)
        finally:
            beating.set()
            beater.join()  # no beat after the row is gone
            heartbeats.close()

    left = 0
    try:
        if on_ready is not None:
            on_ready()
        while not stop.wait(runtime.config.heartbeat_seconds):
            pass
        left = len(executing())  # DBOS does not wait for them: they stay pending
    finally:
        ended = _bounded(stop_all, STOP_SECONDS, "tether-stop")
    if not ended:
        log.warning(
            "tether worker %s: stopped without waiting for its database any longer (%g s): %d run%s "
            "left pending for another worker (or this one's restart under its name)",
            visible(runtime.config.executor_id, one_line=True),
            STOP_SECONDS,
            left,
            "" if left == 1 else "s",
        )
    return Stopped(cut=not ended, left=left)


def _bounded(work: Callable[[], None], seconds: float, name: str) -> bool:
    """Run ``work`` on a thread of its own for at most ``seconds``; whether it ended in time
    without an error (which is logged in one line: the stop goes on regardless)."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # said in one line: the stop goes on
            failed.append(exc)
            log.warning("stopping: %s", first_line(exc))

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    thread.join(seconds)
    return not thread.is_alive() and not failed


def _watch(
    runtime: Runtime, heartbeats: Heartbeats, dispatcher: Dispatcher, stopped: threading.Event
) -> None:
    """Every ``heartbeat_seconds`` until ``stopped``: prune old runs (hourly), give the runs of
    dead workers to the live ones, run again this worker's runs whose end was not recorded."""
    pruned = float("-inf")
    unrecorded = Unrecorded(dispatcher, runtime.config.dead_after_seconds)
    while not stopped.wait(runtime.config.heartbeat_seconds):
        if not heartbeats.connected:
            continue  # the database is away: nothing to judge, nothing to stop
        if runtime.config.keep_runs_days and time.monotonic() - pruned >= PRUNE_EVERY_SECONDS:
            pruned = time.monotonic()
            try:
                prune_with(DBOS, runtime.config.keep_runs_days)
            except Exception as exc:
                log.warning("pruning old runs failed: %s", first_line(exc))
        try:
            for run_id in recover_dead(heartbeats, dispatcher):
                log.warning("recovering run %s of a dead worker", visible(run_id, one_line=True))
        except Exception as exc:  # a passing database fault: the next look tries again
            log.warning("looking for dead workers failed: %s", first_line(exc))
        if stopped.is_set():
            return
        try:
            for run_id in unrecorded.look():
                log.warning(
                    "run %s ended but the database did not record it: running it again",
                    visible(run_id, one_line=True),  # a program's choice: a newline forged a line
                )
        except Exception as exc:
            log.warning("looking for runs whose end was not recorded failed: %s", first_line(exc))


def leave(stopped: Stopped | None, grace: float = 1.0) -> None:
    """End the process now (``os._exit(CUT_EXIT)``) when the worker's stop was cut, when ``serve``
    raised after its start (``stopped`` is ``None``), or when threads it started are still running
    ``grace`` seconds on: Python's exit joins them, and a thread waiting for an away database never
    returns. Called by ``tether worker`` in a ``finally``; a program serving in its own process
    decides for itself. Otherwise returns (the exit is Python's own)."""
    main = threading.main_thread()
    deadline = time.monotonic() + grace
    for thread in threading.enumerate():
        if thread is not main and not thread.daemon:
            thread.join(max(0.0, deadline - time.monotonic()))
    waiting = [t.name for t in threading.enumerate() if t is not main and not t.daemon and t.is_alive()]
    if stopped is not None and not stopped.cut and not waiting:
        return
    failure = sys.exc_info()[1]
    if failure is not None:  # os._exit drops it: said here in one line
        log.error("tether worker stopped on an error: %s", first_line(failure))
    if stopped is not None and not stopped.cut:
        log.warning(
            "tether worker: leaving past %d thread(s) still waiting: %s", len(waiting), ", ".join(waiting)
        )
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(CUT_EXIT)
