"""Where the session database lives (XDG data dir; ``TETHER_HOME`` overrides; a database URL
in ``TETHER_DATABASE_URL`` replaces the file, see ``tether.store.database``).

A tiny local helper: the catalog branch owns the shared ``tether.ai.paths``, not merged here
yet; this module follows its rules exactly (data in ``$TETHER_HOME/data``, else
``$XDG_DATA_HOME/tether`` when that is absolute, else ``~/.local/share/tether``), so switching
``data_dir`` to ``tether.ai.paths.data_dir`` changes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

DB_ENV = "TETHER_SESSIONS_DB"
"""Environment override for the database file itself."""
DATABASE_ENV = "TETHER_DATABASE_URL"
"""The store to use instead of the file: a PostgreSQL URL (or a ``sqlite:`` URL, or a path)."""


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$TETHER_HOME/data``, else ``$XDG_DATA_HOME/tether``, else ``~/.local/share/tether``."""
    env = os.environ if env is None else env
    home = env.get("TETHER_HOME", "")
    if home:
        return Path(home).expanduser().absolute() / "data"
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
