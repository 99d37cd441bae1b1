"""A worker process: DBOS launched on the system database, taking runs from the queue, and
watching the other workers so the runs of a dead one are finished.

DBOS recovers a worker's own unfinished runs when it launches under the same executor id (a
restarted worker with the same ``--name``): it puts them back in their queue at once. Runs of a worker that never comes back are
recovered by the live ones: every worker records a heartbeat (``tether_workers`` in the system
database) every ``heartbeat_seconds``; when a run is still pending under an executor whose
heartbeat is older than ``dead_after_seconds`` (or that has none), a live worker asks DBOS to
recover that executor's runs. DBOS re-enqueues them and exactly one live worker dequeues each;
the replay then skips every checkpointed step. Several workers noticing the same death at once
is harmless: recovery is idempotent.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable

import sqlalchemy as sa
from dbos import DBOS

from tether._version import __version__
from tether.durable.config import APP_NAME, QUEUE, WORKFLOW, DurableConfig
from tether.durable.workflow import Runtime, install

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


def launch(runtime: Runtime) -> None:
    """Install ``runtime``, launch DBOS in this process and declare the run queue."""
    config = runtime.config
    install(runtime)
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
    DBOS.launch()
    DBOS.register_queue(
        QUEUE,
        worker_concurrency=config.worker_concurrency or None,
        global_concurrency=config.global_concurrency or None,
        partition_concurrency=1,  # one run at a time per session: the session has one writer
        polling_interval_sec=0.5,
        on_conflict="always_update",
    )


class Heartbeats:
    """This worker's heartbeat row, and the others' (see the module docstring)."""

    def __init__(self, config: DurableConfig) -> None:
        self.config = config
        url = sa.make_url(config.system_database)
        if url.drivername in ("postgresql", "postgres"):
            url = url.set(drivername="postgresql+psycopg")
        self._engine = sa.create_engine(url)
        _METADATA.create_all(self._engine)

    def beat(self) -> None:
        me = self.config.executor_id
        with self._engine.begin() as db:
            db.execute(_WORKERS.delete().where(_WORKERS.c.executor_id == me))
            db.execute(
                _WORKERS.insert().values(
                    executor_id=me, host=socket.gethostname(), pid=os.getpid(), seen=time.time()
                )
            )

    def live(self) -> set[str]:
        """Executors heard from within ``dead_after_seconds``."""
        since = time.time() - self.config.dead_after_seconds
        with self._engine.connect() as db:
            rows = db.execute(sa.select(_WORKERS.c.executor_id).where(_WORKERS.c.seen >= since))
            return {row[0] for row in rows}

    def forget(self, executor_id: str) -> None:
        with self._engine.begin() as db:
            db.execute(_WORKERS.delete().where(_WORKERS.c.executor_id == executor_id))

    def close(self) -> None:
        self.forget(self.config.executor_id)
        self._engine.dispose()


def recover_dead(heartbeats: Heartbeats) -> list[str]:
    """Ask DBOS to recover the pending runs of every silent executor; returns the run ids."""
    live = heartbeats.live() | {heartbeats.config.executor_id}
    pending = DBOS.list_workflows(status="PENDING", name=WORKFLOW, load_input=False, load_output=False)
    dead = sorted({w.executor_id for w in pending if w.executor_id and w.executor_id not in live})
    recovered: list[str] = []
    for executor in dead:
        handles = DBOS._recover_pending_workflows([executor])  # pyright: ignore[reportPrivateUsage]
        recovered.extend(h.get_workflow_id() for h in handles)
        heartbeats.forget(executor)
    return recovered


def serve(runtime: Runtime, stop: threading.Event, on_ready: Callable[[], None] | None = None) -> None:
    """Run a worker until ``stop`` is set: heartbeat first (so no live worker takes this one for
    dead), then DBOS, then a heartbeat and a look for dead workers every ``heartbeat_seconds``."""
    heartbeats = Heartbeats(runtime.config)
    heartbeats.beat()
    launch(runtime)
    if on_ready is not None:
        on_ready()
    try:
        while not stop.wait(runtime.config.heartbeat_seconds):
            heartbeats.beat()
            for run_id in recover_dead(heartbeats):
                log.warning("recovering run %s of a dead worker", run_id)
    finally:
        DBOS.destroy()
        install(None)
        heartbeats.close()
