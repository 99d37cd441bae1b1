"""Where the session database lives (XDG data dir; ``TETHER_HOME`` overrides; a database URL
in ``TETHER_DATABASE_URL`` replaces the file, see ``tether.store.database``).

Also ``redact``: a database URL without its password, for every message that names one.

A tiny local helper: the catalog branch owns the shared ``tether.ai.paths``, not merged here
yet; this module follows its rules exactly (data in ``$TETHER_HOME/data``, else
``$XDG_DATA_HOME/tether`` when that is absolute, else ``~/.local/share/tether``), so switching
``data_dir`` to ``tether.ai.paths.data_dir`` changes nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

DB_ENV = "TETHER_SESSIONS_DB"
"""Environment override for the database file itself."""
DATABASE_ENV = "TETHER_DATABASE_URL"
"""The store to use instead of the file: a PostgreSQL URL (or a ``sqlite:`` URL, or a path)."""


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$TETHER_HOME/data``, else ``$XDG_DATA_HOME/tether``, else ``~/.local/share/tether``."""
    env = os.environ if env is None else env
    home = env.get("TETHER_HOME", "")
    if home:
        try:
            return Path(home).expanduser().absolute() / "data"
        except RuntimeError:  # ~nosuchuser: as tether.ai.paths takes it
            return Path(home).absolute() / "data"
    xdg = env.get("XDG_DATA_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg) / "tether"
    user = env.get("HOME", "")
    return (Path(user) if user else Path.home()) / ".local" / "share" / "tether"


def default_db_path(env: Mapping[str, str] | None = None) -> Path:
    """``$TETHER_SESSIONS_DB``, else ``sessions.db`` in ``data_dir()``."""
    env = os.environ if env is None else env
    override = env.get(DB_ENV)
    if override:
        return Path(override)
    return data_dir(env) / "sessions.db"


def database_url(env: Mapping[str, str] | None = None) -> str | None:
    """``$TETHER_DATABASE_URL`` when set (and not empty)."""
    env = os.environ if env is None else env
    return env.get(DATABASE_ENV) or None


# compiled on first use (re's cache): the default SQLite store never needs them
_PASSWORD_PARAM = r"(?i)((?:^|&)password=)[^&]*"
_USER_PASSWORD = r"(//[^/@:]*:)[^/@]*@"


def redact(url: str) -> str:
    """``url`` without its password (in the user part or a ``password=`` parameter), for messages.

    A URL too broken to parse (``postgresql://u:p@[::1``) is redacted by pattern instead: the
    message about it must not fail, nor show the password."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # parsing the port raises for a broken one
    except ValueError:
        return re.sub(_PASSWORD_PARAM, r"\1***", re.sub(_USER_PASSWORD, r"\1***@", url))
    if parts.password is not None:
        host = parts.netloc.rsplit("@", 1)[1]
        parts = parts._replace(netloc=f"{parts.username or ''}:***@{host}")
    return urlunsplit(parts._replace(query=re.sub(_PASSWORD_PARAM, r"\1***", parts.query)))
