"""The session errors, each message saying what and where.

A module of their own, without the store's records: the core catches ``SessionError`` on every
run, also with ``--no-session``, where nothing of the store should load.
"""

from __future__ import annotations

from tether.errors import TetherError


class SessionError(TetherError):
    """Base class of the session errors; each message says what and where."""


class SessionDatabaseError(SessionError):
    """The database itself failed (damaged, full disk, not writable); the message names the file
    and what to do about it."""


class SessionDatabaseUnreachableError(SessionError):
    """The session database cannot be reached now (refused, gone, restarting): it may come back, so
    a patient caller (a worker's store, a write riding out a restart) tries again. A server that
    answered and refused what was asked (no such role or database, a wrong password) raises a plain
    ``SessionError`` instead, said at once: waiting would not change its answer."""


class SessionNotFoundError(SessionError, LookupError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"no session {session_id!r}")
        self.session_id = session_id


class SessionExistsError(SessionError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} already exists")
        self.session_id = session_id


class SessionLockedError(SessionError):
    """Another writer (process or handle) holds the session."""

    def __init__(self, session_id: str, holder: str | None = None) -> None:
        who = f" by {holder}" if holder else ""
        super().__init__(
            f"session {session_id!r} is open for writing{who}; close it there first "
            f"(`tether sessions follow {session_id}` shows it as it grows, without writing)"
        )
        self.session_id = session_id
        self.holder = holder


class EntryNotFoundError(SessionError, LookupError):
    def __init__(self, session_id: str, entry_id: str) -> None:
        super().__init__(f"session {session_id!r} has no entry {entry_id!r}")
        self.session_id = session_id
        self.entry_id = entry_id


class SchemaVersionError(SessionError):
    """The database was written by a newer tether than this one."""
