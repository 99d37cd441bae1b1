"""Which store a database location names: a PostgreSQL URL, a SQLite URL or a SQLite file path.

    postgresql://user:pass@host:5432/dbname?sslmode=require   → PostgresStore
    postgres://…                                               → PostgresStore
    sqlite:///absolute/path/sessions.db, sqlite:relative.db    → SQLiteStore
    /any/path/sessions.db                                      → SQLiteStore

With no location, ``$TETHER_DATABASE_URL`` decides, else the default SQLite file (see
``paths``). The PostgreSQL driver is imported only when a PostgreSQL URL is opened, so the
embedded default costs nothing extra at start-up.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote

from tether.store.paths import database_url, redact
from tether.store.store import SessionError, SessionStore

POSTGRES_SCHEMES = ("postgresql", "postgres")
_SCHEME = r"^([a-zA-Z][a-zA-Z0-9+.-]*):"  # compiled on first use (re's cache)


def open_store(location: str | os.PathLike[str] | None = None, *, patient: bool = False) -> SessionStore:
    """Open the store at ``location`` (see the module docstring); errors are ``SessionError``.

    ``patient``: a PostgreSQL server that cannot be reached now is waited for, as a statement
    waits out a restart (``PostgresStore.outage_seconds``): what a worker opening the store in
    the middle of its runs needs. Otherwise (a person's command) that fails at once."""
    if location is None:
        location = database_url()
    if location is None:
        from tether.store.sqlite_store import SQLiteStore

        return SQLiteStore()
    if isinstance(location, str) and is_postgres_url(location):
        from tether.store.postgres_store import PostgresStore

        return PostgresStore(location, patient=patient)
    from tether.store.sqlite_store import SQLiteStore

    return SQLiteStore(sqlite_path(location))


def is_postgres_url(location: str) -> bool:
    match = re.match(_SCHEME, location)
    return match is not None and match.group(1).lower() in POSTGRES_SCHEMES


def sqlite_path(location: str | os.PathLike[str]) -> Path:
    """The file a SQLite location names; a URL of another scheme is a ``SessionError``."""
    if not isinstance(location, str):
        return Path(location)
    match = re.match(_SCHEME, location)
    if match is None or len(match.group(1)) == 1:  # a Windows drive letter is not a scheme
        return Path(location)
    scheme = match.group(1).lower()
    if scheme != "sqlite":
        raise SessionError(
            f"unsupported database URL scheme {scheme!r} in {redact(location)}: "
            "use postgresql://…, sqlite:///path or a file path"
        )
    rest = location[len(match.group(0)) :]
    if rest.startswith("//"):  # sqlite:///abs/path → /abs/path; sqlite://./rel → ./rel
        rest = rest[2:]
    if not rest:
        raise SessionError(f"no file in the database URL {location!r}")
    return Path(unquote(rest))
