"""Per-worker and global run limits: each worker moves submitted runs onto a queue of its own.

Why not one DBOS queue with ``worker_concurrency``: DBOS 3.4 keeps a queue's configuration in one
row of the system database (``dbos.queues``), and every worker's queue thread reloads that row
on each poll (``dbos/_queue.py``, ``queue_worker_thread``: ``latest =
dbos._sys_db.get_queue(queue.name)``). The per-executor limit is a column of that row, so it is
one number for every worker: whoever registered the queue last sets it for all.

So submitters enqueue on the shared queue (``QUEUE``), which no worker's DBOS dequeues from
(``DBOS.listen_queues``), and each worker claims runs from it onto a queue of its own
(``QUEUE@executor``), whose row carries that worker's ``--concurrency`` and which only it listens
to; DBOS then dequeues and runs them there as usual. A claim is one transaction, serialised
among workers (a PostgreSQL advisory lock; SQLite's single writer), that moves at most the room
left under both limits:

- the worker's: ``worker_concurrency`` minus its runs claimed or running;
- the global one: ``global_concurrency`` (the shared queue's row, set by the last worker started)
  minus every worker's runs claimed or running;

and at most one run per session, only when no run of that session is claimed or running
anywhere (a session has one writer); runs that had started on a worker that died first, then the
oldest. The move is conditional (still ``ENQUEUED``, still on the
shared queue), so a run cancelled meanwhile stays cancelled and two workers never take one run.

A worker that stops puts the runs it claimed but had not started back on the shared queue; the
runs of a worker that died (``tether.durable.worker.recover_dead``) go back there too, its
running ones as DBOS's recovery would re-enqueue them (``reenqueue_for_recovery``), so that
another worker claims them and replays them from their checkpoints.
"""

from __future__ import annotations

import logging
import threading
import time

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError

from tether._version import __version__
from tether.durable.config import APP_NAME, QUEUE, DurableConfig, first_line

log = logging.getLogger("tether.durable")

CLAIM_SECONDS = 0.25
"""How often a worker with room looks for submitted runs."""
PERSISTENT_FAILURES = 40
"""Claims failing on a database error this many times in a row (10 s) are worth a log line."""
CONNECT_TIMEOUT = 5
"""Seconds a connection attempt waits: an unreachable host must not hold up a loop."""
CLAIM_LOCK = 0x7465746865720001
"""The PostgreSQL advisory lock (transaction-scoped) that serialises claims: "tether" and 1."""
PREFIX = QUEUE + "@"
IN_FLIGHT = ("ENQUEUED", "PENDING")

_METADATA = sa.MetaData(schema="dbos")
_RUNS = sa.Table(
    "workflow_status",
    _METADATA,
    sa.Column("workflow_uuid", sa.Text, primary_key=True),
    sa.Column("status", sa.Text),
    sa.Column("queue_name", sa.Text),
    sa.Column("queue_partition_key", sa.Text),
    sa.Column("application_version", sa.Text),
    sa.Column("application_name", sa.Text),
    sa.Column("created_at", sa.BigInteger),
    sa.Column("updated_at", sa.BigInteger),
    sa.Column("started_at_epoch_ms", sa.BigInteger),
    sa.Column("owner_xid", sa.Text),
    sa.Column("recovery_attempts", sa.BigInteger),
)
"""The columns of DBOS's run table a claim reads and writes (``dbos/_schemas/system_database.py``)."""
_QUEUES = sa.Table(
    "queues", _METADATA, sa.Column("name", sa.Text, primary_key=True), sa.Column("concurrency", sa.Integer)
)


def own_queue(executor_id: str) -> str:
    """The queue only the worker ``executor_id`` dequeues from."""
    return PREFIX + executor_id


def system_engine(url: str) -> sa.Engine:
    """An engine on the system database for tether's own statements: connections checked before
    use (after a server restart, pooled ones are dead), a bounded connect, DBOS's schema mapped."""
    parsed = sa.make_url(url)
    connect_args: dict[str, object] = {}
    schemas: dict[str | None, str | None] = {"dbos": "dbos"}
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
        connect_args["connect_timeout"] = CONNECT_TIMEOUT
    else:
        schemas = {"dbos": None}  # SQLite: one file, no schemas
    engine = sa.create_engine(parsed, pool_pre_ping=True, connect_args=connect_args)
    return engine.execution_options(schema_translate_map=schemas)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _in_flight_on_workers() -> sa.ColumnElement[bool]:
    return sa.and_(_RUNS.c.status.in_(IN_FLIGHT), _RUNS.c.queue_name.startswith(PREFIX, autoescape=True))


class Dispatcher:
    """This worker's claims (see the module docstring); ``start()`` runs them in a thread."""

    def __init__(self, config: DurableConfig, engine: sa.Engine | None = None) -> None:
        self.config = config
        self.queue = own_queue(config.executor_id)
        self._engine = engine or system_engine(config.system_database)
        self._postgres = self._engine.dialect.name == "postgresql"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def claim(self) -> list[str]:
        """Move the submitted runs this worker has room for onto its queue; their ids."""
        runs, mine = _RUNS, self.queue
        with self._engine.begin() as db:
            if self._postgres:
                db.execute(sa.select(sa.func.pg_advisory_xact_lock(CLAIM_LOCK)))
            else:  # take SQLite's write lock first: the counts below stay true until commit
                db.execute(_QUEUES.update().where(sa.false()).values(name=_QUEUES.c.name))
            count = sa.select(sa.func.count()).select_from(runs)
            room = 1 << 30
            if self.config.worker_concurrency:
                running = db.execute(count.where(runs.c.status.in_(IN_FLIGHT), runs.c.queue_name == mine))
                room = self.config.worker_concurrency - (running.scalar() or 0)
            limit = db.execute(sa.select(_QUEUES.c.concurrency).where(_QUEUES.c.name == QUEUE)).scalar()
            if limit:
                room = min(room, limit - (db.execute(count.where(_in_flight_on_workers())).scalar() or 0))
            if room <= 0:
                return []
            busy = sa.select(runs.c.queue_partition_key).where(
                _in_flight_on_workers(), runs.c.queue_partition_key.is_not(None)
            )
            waiting = sa.and_(
                runs.c.queue_name == QUEUE,
                runs.c.status == "ENQUEUED",
                sa.or_(runs.c.application_version == __version__, runs.c.application_version.is_(None)),
                sa.or_(runs.c.application_name == APP_NAME, runs.c.application_name.is_(None)),
            )
            # The oldest waiting run of each session none of whose runs is claimed or running.
            first = (
                sa.select(runs.c.queue_partition_key, sa.func.min(runs.c.created_at).label("first"))
                .where(waiting, runs.c.queue_partition_key.not_in(busy))
                .group_by(runs.c.queue_partition_key)
                .subquery()
            )
            picked = db.execute(
                sa.select(runs.c.workflow_uuid)
                .join(
                    first,
                    sa.and_(
                        runs.c.queue_partition_key == first.c.queue_partition_key,
                        runs.c.created_at == first.c.first,
                    ),
                )
                .where(waiting)
                # Runs that started before (a dead worker's: DBOS counts each start) first, so
                # that work under way finishes before new work starts; then oldest first.
                .order_by(sa.case((runs.c.recovery_attempts > 0, 0), else_=1), runs.c.created_at)
                .limit(room)
            )
            ids = [row[0] for row in picked]
            if not ids:
                return []
            moved = db.execute(
                runs.update()
                .where(runs.c.workflow_uuid.in_(ids), waiting)
                .values(queue_name=mine, updated_at=_now_ms())
                .returning(runs.c.workflow_uuid)
            )
            return [row[0] for row in moved]

    def start(self) -> None:
        """Claim every ``CLAIM_SECONDS`` in a thread until ``stop()``."""
        self._thread = threading.Thread(target=self._loop, name="tether-claims", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        failures = 0
        while not self._stop.wait(CLAIM_SECONDS):
            try:
                self.claim()
                failures = 0
            except Exception as exc:
                # A database error is usually passing (an outage, which the heartbeat reports;
                # SQLite busy with another worker's claim): said once if it lasts.
                failures += 1
                if failures == (PERSISTENT_FAILURES if isinstance(exc, DBAPIError) else 1):
                    log.warning("claiming runs failed (trying again): %s", first_line(exc))

    def stop(self) -> None:
        """Claim no more (returns once a claim under way is done)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def release(self) -> list[str]:
        """Put the runs this worker claimed and has not started back on the shared queue."""
        return self.give_back(self.config.executor_id, running=False)

    def give_back(self, executor_id: str, *, running: bool, only: set[str] | None = None) -> list[str]:
        """Put the runs on ``executor_id``'s queue back on the shared queue (``running``: its
        started ones too, re-enqueued as DBOS recovers a dead executor's runs; ``only``: of those,
        just these ids, as the worker does with its own runs whose end was not recorded)."""
        runs = _RUNS
        statuses = IN_FLIGHT if running else ("ENQUEUED",)
        chosen = [runs.c.queue_name == own_queue(executor_id), runs.c.status.in_(statuses)]
        if only is not None:
            chosen.append(runs.c.workflow_uuid.in_(sorted(only)))
        with self._engine.begin() as db:
            moved = db.execute(
                runs.update()
                .where(*chosen)
                .values(
                    status="ENQUEUED",
                    queue_name=QUEUE,
                    owner_xid=None,
                    started_at_epoch_ms=None,
                    updated_at=_now_ms(),
                )
                .returning(runs.c.workflow_uuid)
            )
            return [row[0] for row in moved]

    def running_here(self) -> set[str]:
        """The runs DBOS has as running (``PENDING``) on this worker's queue."""
        runs = _RUNS
        with self._engine.connect() as db:
            rows = db.execute(
                sa.select(runs.c.workflow_uuid).where(
                    runs.c.queue_name == own_queue(self.config.executor_id), runs.c.status == "PENDING"
                )
            )
            return {row[0] for row in rows}

    def owners(self) -> set[str]:
        """The workers with runs claimed or running on their queues."""
        with self._engine.connect() as db:
            rows = db.execute(sa.select(_RUNS.c.queue_name).where(_in_flight_on_workers()).distinct())
            return {row[0].removeprefix(PREFIX) for row in rows}

    def close(self) -> None:
        self.stop()
        self._engine.dispose()
