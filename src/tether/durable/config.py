"""Where durable runs keep their state and how many run at once; no DBOS import here.

A durable run needs two databases: the session store (where transcripts live, as for every
tether run) and DBOS's *system database* (workflow status, step outputs, queues, event streams).
With a PostgreSQL session store both live in the same database (DBOS uses its own ``dbos``
schema); with the SQLite store the system database is ``durable.sqlite`` next to it, which is
for one machine only.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

from tether.own_files import create_own_file
from tether.session.settings import Settings
from tether.store.database import is_postgres_url
from tether.store.paths import data_dir, database_url

QUEUE = "tether_runs"
"""The DBOS queue submitted runs wait in."""
WORKFLOW = "tether.durable.run"
"""The registered name of the run workflow: submitters enqueue it by name."""
EVENTS = "events"
"""The DBOS stream key a run's events are written to."""
APP_NAME = "tether"

DURABLE_DATABASE_ENV = "TETHER_DURABLE_DATABASE_URL"
"""The system database to use instead of the settings' (``--durable-database`` wins)."""
ANSWER_WAIT = 60.0
"""Seconds ``tether runs``, ``tether submit`` and serve's runs API wait for the system database's
answer (``tether.durable.client.answer``): a server frozen after connecting (a hung host, a
paused machine) never answers, and its kernel still acknowledges, so TCP keepalives do not end
the wait."""
ANSWER_WAIT_ENV = "TETHER_DURABLE_ANSWER_WAIT"
"""Seconds to use instead of ``ANSWER_WAIT``."""


@dataclass(frozen=True, slots=True)
class DurableConfig:
    """Everything a worker or a submitter needs to agree on, and a worker's own limits."""

    system_database: str
    """DBOS's system database URL (``postgresql://…`` or ``sqlite:///…``)."""
    sessions: str | None = None
    """The session store (``tether.store.database.open_store``); ``None``: the default."""
    worker_concurrency: int = 4
    global_concurrency: int = 0
    """0: no global limit."""
    rerun_tools: tuple[str, ...] = ()
    """Tools that may run again after a crash, beyond the read-only built-ins."""
    name: str = ""
    """This worker's DBOS executor id: give a worker the same name when it restarts and it
    resumes its own unfinished runs at once. Default: ``host-pid``."""
    heartbeat_seconds: float = 2.0
    """How often a worker records that it is alive."""
    dead_after_seconds: float = 10.0
    """A worker silent this long is dead: a live worker recovers its runs."""
    keep_runs_days: int = 30
    """Finished runs older than this are pruned (``tether.durable.runs.prune``; 0: never)."""
    run_timeout_seconds: int = 0
    """Submitted runs are cancelled this long after they start (0: no limit)."""
    lock_wait_seconds: float = 60.0
    """How long a run waits for its session's writer lock (held by a dead worker's lingering
    database connection, or by a person's open ``tether``) before it fails."""
    answer_wait_seconds: float = ANSWER_WAIT
    """How long a submitter or an operator's command waits for the system database's answer."""

    @property
    def executor_id(self) -> str:
        return self.name or f"{socket.gethostname()}-{os.getpid()}"


def config_from_settings(
    settings: Settings,
    *,
    database: str | None = None,
    durable_database: str | None = None,
    name: str = "",
    worker_concurrency: int | None = None,
    global_concurrency: int | None = None,
) -> DurableConfig:
    """The durable configuration of ``settings``, with a front end's flags on top.

    Args:
        settings: Loaded settings (their ``durable`` section and ``database``).
        database: The session store (``--database``); default: ``$TETHER_DATABASE_URL``, then
            the ``database`` setting, then the SQLite file.
        durable_database: The system database (``--durable-database``); default:
            ``$TETHER_DURABLE_DATABASE_URL``, then ``durable.database``, then the session store's
            PostgreSQL database, then ``durable.sqlite`` in the data dir.
        name: The worker's name (its DBOS executor id).
        worker_concurrency: Runs at once in this worker (default: the setting).
        global_concurrency: Runs at once over every worker (default: the setting).
    """
    durable = settings.durable
    sessions = database or database_url() or settings.database
    system = durable_database or os.environ.get(DURABLE_DATABASE_ENV) or durable.database
    if not system:
        if sessions is not None and is_postgres_url(sessions):
            system = sessions
        else:
            system = "sqlite:///" + str(data_dir() / "durable.sqlite")
    check_system_database(system)
    answer_wait = _answer_wait()
    file = sqlite_file(system)
    if file is not None:  # private, as the session store's file (DBOS's is 0644)
        folder = file.parent
        try:
            create_own_file(file)
        except OSError as exc:
            raise ValueError(
                f"durable database {system!r}: cannot create its folder {folder}: {exc.strerror or exc}"
            ) from None
    return DurableConfig(
        system_database=system,
        sessions=sessions,
        worker_concurrency=durable.worker_concurrency if worker_concurrency is None else worker_concurrency,
        global_concurrency=durable.global_concurrency if global_concurrency is None else global_concurrency,
        rerun_tools=durable.rerun_tools,
        keep_runs_days=durable.keep_runs_days,
        run_timeout_seconds=durable.run_timeout_seconds,
        answer_wait_seconds=answer_wait,
        name=name,
    )


def _answer_wait() -> float:
    """``$TETHER_DURABLE_ANSWER_WAIT`` in seconds, else ``ANSWER_WAIT``; ``ValueError`` for
    anything but a positive number."""
    text = os.environ.get(ANSWER_WAIT_ENV)
    if not text:
        return ANSWER_WAIT
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds < float("inf"):
        raise ValueError(f"{ANSWER_WAIT_ENV}={text!r}: expected a number of seconds above 0")
    return seconds


def sqlite_file(url: str) -> Path | None:
    """The file a ``sqlite:///`` URL names as SQLAlchemy, and so DBOS, reads it (``?timeout=…``
    left out, ``%20`` unquoted), or ``None`` for another scheme or no file: read otherwise,
    ``sqlite:///a%20b.db`` made a stray 0600 ``a%20b.db`` and left DBOS's ``a b.db`` 0644.
    SQLAlchemy is imported here, only for a SQLite URL: DBOS imports it anyway."""
    if not url.startswith("sqlite:///"):
        return None
    from sqlalchemy.engine import make_url

    database = make_url(url).database
    return Path(database) if database else None


def check_system_database(url: str) -> None:
    """``ValueError`` (one line, without the password) for a system database URL DBOS would choke
    on with its own words or a traceback: another scheme, a SQLite URL without a file or naming
    a folder, a PostgreSQL URL that does not parse."""
    from urllib.parse import urlsplit

    from tether.store.paths import redact

    safe = redact(url) if "@" in url else url  # any scheme's password: mysql://u:pw@… too
    shown = f"durable database {safe!r}"
    if url.startswith("sqlite:///"):
        file = sqlite_file(url)
        if file is None or file.is_dir():
            raise ValueError(f"{shown}: name a file: sqlite:///relative/path or sqlite:////absolute/path")
        return
    if not is_postgres_url(url):
        raise ValueError(f"{shown}: use postgresql://… or sqlite:///path")
    try:
        parts = urlsplit(url)
        _ = parts.port
    except ValueError as exc:
        raise ValueError(f"{shown}: not a valid URL ({exc})") from None


def first_line(exc: BaseException) -> str:
    """The driver's own message, when a database error wraps one, on one line."""
    return message_lines(exc)[0]


def message_lines(exc: BaseException) -> list[str]:
    """The lines of ``first_line``'s message (its error's name when it has none), not one."""
    cause = getattr(exc, "orig", None) or exc
    return str(cause).strip().splitlines() or [type(cause).__name__]
