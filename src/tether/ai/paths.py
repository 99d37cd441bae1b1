"""Where tether keeps the user's files: XDG base directories, or one folder under ``TETHER_HOME``.

- config (``models.json``, ``settings.json``): ``$XDG_CONFIG_HOME/tether``, default ``~/.config/tether``;
- data (sessions database, history): ``$XDG_DATA_HOME/tether``, default ``~/.local/share/tether``.

``TETHER_HOME`` overrides both: config is ``$TETHER_HOME/config`` and data ``$TETHER_HOME/data``,
so one variable moves (or isolates, in tests) everything tether reads and writes. As the XDG spec
says, an empty or relative ``XDG_*`` value is ignored. The environment is read on every call, so
a change (a test's ``monkeypatch.setenv``) takes effect at once; nothing is created here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

APP = "tether"


def tether_home(env: Mapping[str, str] | None = None) -> Path | None:
    """``$TETHER_HOME`` (``~`` expanded, made absolute), or ``None`` when unset or empty."""
    value = (os.environ if env is None else env).get("TETHER_HOME", "")
    return Path(value).expanduser().absolute() if value else None


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    """The folder of user configuration files."""
    return _dir("config", "XDG_CONFIG_HOME", Path(".config"), env)


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """The folder of user data (sessions, history)."""
    return _dir("data", "XDG_DATA_HOME", Path(".local") / "share", env)


def models_file(env: Mapping[str, str] | None = None) -> Path:
    """The user's model and provider definitions (``docs/models.md``)."""
    return config_dir(env) / "models.json"


def _dir(kind: str, xdg_var: str, fallback: Path, env: Mapping[str, str] | None) -> Path:
    environ = os.environ if env is None else env
    home = tether_home(environ)
    if home is not None:
        return home / kind
    xdg = environ.get(xdg_var, "")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / APP
    return Path.home() / fallback / APP
