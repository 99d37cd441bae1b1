"""What PostgreSQL's failures mean to the session store, and how they are said.

A failure is either an outage (the server cannot be reached now: gone, restarting, a broken
connection), which the store rides out by trying again (``tether.store.outage``), or a statement
or its data that is wrong, which is said at once. Either is said in one line: the server's or
libpq's message without psycopg's multi-line decoration.

While the server is unreachable, the pool's own reconnection attempts would log a line each (32
in 15 s on an RPC client's stderr): ``OutageLog`` lets the first of an outage through, naming
the database, and holds back the rest until a statement succeeds again.
"""

from __future__ import annotations

import logging

import psycopg
from psycopg_pool import PoolClosed, PoolTimeout

from tether.store.errors import SessionDatabaseUnreachableError


class OutageLog(logging.Filter):
    """On the pool's logger: one line per outage, not one per reconnection attempt (32 lines in
    15 s were seen on stderr, in the middle of an RPC client's terminal)."""

    def __init__(self) -> None:
        super().__init__()
        self._reported = False
        self._installed = False
        self._where = "(unknown)"

    def install(self, where: str) -> None:
        """Filter the pool's logger; ``where``: the database (redacted) its lines are about."""
        self._where = where
        if not self._installed:
            self._installed = True
            logging.getLogger("psycopg.pool").addFilter(self)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        if self._reported:
            return False
        self._reported = True
        detail = " ".join(record.getMessage().split())
        record.msg = (
            "tether: session database %s: %s (further connection errors are not shown until it is back)"
        )
        record.args = (self._where, detail)
        return True

    def recovered(self) -> None:
        if self._reported:
            self._reported = False


OUTAGE_LOG = OutageLog()
"""The one filter on psycopg's pool logger (``install``), shared by every store of the process."""


def describe(err: BaseException) -> str:
    return message(err) if isinstance(err, psycopg.Error) else str(err)


def unreachable(err: BaseException) -> bool:
    """Whether ``err`` says the server cannot be reached now (gone, restarting, a broken
    connection) rather than that the statement or its data is wrong."""
    if isinstance(err, PoolTimeout):
        return True
    if isinstance(err, PoolClosed):  # our own close, not the server's absence: say so at once
        return False
    if isinstance(err, SessionDatabaseUnreachableError):  # ``connect``'s, by this function
        return True
    if not isinstance(err, psycopg.OperationalError):
        return False
    state = err.sqlstate
    if state is None:  # no statement ran: a connection refused, lost, or answered with a verdict
        return not _refused_by_server(str(err))
    return state.startswith("08") or state in ("57P01", "57P02", "57P03")


_NOT_YET = (
    "the database system is",
    "too many clients",
    "remaining connection slots",
    "terminating connection",
)
"""The server's ``FATAL`` answers to a connection that a moment may change: starting up, shutting
down, in recovery; no slot free; this connection ended by a restart."""


def _refused_by_server(text: str) -> bool:
    """Whether libpq's connection failure ``text`` is the server's verdict on what was asked (no
    such role or database, authentication failed, no ``pg_hba.conf`` entry) or libpq's own
    (no password to send): waiting changes neither, and a worker whose store was opened with a
    wrong role waited out the whole outage bound (60 s) logging the database as unreachable. No
    SQLSTATE comes with a failed connection, so its words are all there is to read."""
    if "fe_sendauth" in text:
        return True
    return "FATAL:" in text and not any(words in text for words in _NOT_YET)


READ_ONLY = "25006"
"""SQLSTATE read_only_sql_transaction: a write on a hot standby (a failover's old primary come
back as one, a connection string pointing at a replica) or under ``default_transaction_read_only``.
Not an outage: waiting would not make the database writable, so it is said at once."""


def message(err: psycopg.Error) -> str:
    """The server's or libpq's message on one line, without psycopg's multi-line decoration; for a
    write refused because the database is read-only, first what that means (the server's own
    words name only the statement)."""
    text = str(err).strip() or type(err).__name__
    text = " ".join(line.strip() for line in text.splitlines() if line.strip())
    if err.sqlstate == READ_ONLY:
        return f"the database is read-only (a standby, or default_transaction_read_only is on): {text}"
    return text
