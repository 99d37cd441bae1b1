"""A PostgreSQL writer lease whose lock died with its connection (``postgres_store``): its holder
takes the lock again (``lock_again``) while the session row still holds its token
(``holds_token``), and a writer that finds such an orphaned lease asks whether its holder on this
host is alive (``pid_alive``)."""

from __future__ import annotations

import os
from typing import Any

import psycopg

Connection = psycopg.Connection[tuple[Any, ...]]

RELOCK_WAIT_SECONDS = 10
"""How long taking a lease back waits for its lock while the session row still holds the lease's
token: someone holds the lock only for a moment then. A write's fence check (``LOCK_HELD``) holds
it, shared, until that write's transaction ends, and after a restart one thread of a process may
be writing a session while another takes every lease back; or another writer is looking, and
refuses (the holder is alive). Trying once marked such a lease lost, under a run that was riding
out the restart."""


def lock_again(db: Connection, key: int, session_id: str, token: str) -> bool:
    """Whether a lease's lock ``key`` is taken on ``db`` (see ``RELOCK_WAIT_SECONDS``): at once, or
    once its holder lets go while the session row still holds the lease's ``token``."""
    row = db.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
    if row is not None and row[0]:
        return True
    if not holds_token(db, session_id, token):
        return False
    try:
        with db.transaction():  # the bound holds for this wait only
            db.execute("SELECT set_config('lock_timeout', %s, true)", (f"{RELOCK_WAIT_SECONDS}s",))
            db.execute("SELECT pg_advisory_lock(%s)", (key,))
    except psycopg.errors.LockNotAvailable:
        return False
    return True


def holds_token(db: Connection, session_id: str, token: str) -> bool:
    """Whether the session row still holds the lease's ``token``: no other writer took the
    session over and no one deleted it, so the lease is still this holder's to keep or take back."""
    row = db.execute(
        "SELECT 1 FROM tether_sessions WHERE id = %s AND writer_token = %s", (session_id, token)
    ).fetchone()
    return row is not None


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host is alive (a zombie is not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
