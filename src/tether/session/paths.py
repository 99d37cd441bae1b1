"""Where the session database lives (XDG data dir; ``TETHER_HOME`` overrides).

A tiny local helper: the catalog branch owns the shared ``tether.ai.paths``; this module follows
the same rules so both agree, and can delegate to it once that lands.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

DB_ENV = "TETHER_SESSIONS_DB"
"""Environment override for the database file itself."""


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$TETHER_HOME``, else ``$XDG_DATA_HOME/tether``, else ``~/.local/share/tether``."""
    env = os.environ if env is None else env
    home = env.get("TETHER_HOME")
    if home:
        return Path(home)
    xdg = env.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "tether"


def default_db_path(env: Mapping[str, str] | None = None) -> Path:
    """``$TETHER_SESSIONS_DB``, else ``sessions.db`` in ``data_dir()``."""
    env = os.environ if env is None else env
    override = env.get(DB_ENV)
    if override:
        return Path(override)
    return data_dir(env) / "sessions.db"
