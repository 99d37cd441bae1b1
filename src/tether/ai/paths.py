"""Where tether keeps the user's files: XDG base directories, or one folder under ``TETHER_HOME``.

- config (``models.json``, ``settings.json``): ``$XDG_CONFIG_HOME/tether``, default ``~/.config/tether``;
- data (sessions database, history): ``$XDG_DATA_HOME/tether``, default ``~/.local/share/tether``.

``TETHER_HOME`` overrides both: config is ``$TETHER_HOME/config`` and data ``$TETHER_HOME/data``,
so one variable moves (or isolates, in tests) everything tether reads and writes. As the XDG spec
says, an empty or relative ``XDG_*`` value is ignored. The environment is read on every call, so
a change (a test's ``monkeypatch.setenv``) takes effect at once; nothing is created here.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path

APP = "tether"


def tether_home(env: Mapping[str, str] | None = None) -> Path | None:
    """``$TETHER_HOME`` (``~`` expanded, made absolute), or ``None`` when unset or empty."""
    value = (os.environ if env is None else env).get("TETHER_HOME", "")
    if not value:
        return None
    try:
        return Path(value).expanduser().absolute()
    except RuntimeError:  # ~nosuchuser: the folder it spells, not a traceback on every command
        return Path(value).absolute()


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    """The folder of user configuration files."""
    return _folders(*_key(env))[0]


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """The folder of user data (sessions, history)."""
    return _folders(*_key(env))[1]


def models_file(env: Mapping[str, str] | None = None) -> Path:
    """The user's model and provider definitions (``docs/models.md``)."""
    return _folders(*_key(env))[2]


def _key(env: Mapping[str, str] | None) -> tuple[str, str, str, str]:
    """The variables the folders depend on (a relative ``TETHER_HOME`` made absolute first)."""
    get = (os.environ if env is None else env).get
    home = get("TETHER_HOME", "")
    if home and not os.path.isabs(home) and not home.startswith("~"):
        home = os.path.abspath(home)
    return home, get("XDG_CONFIG_HOME", ""), get("XDG_DATA_HOME", ""), get("HOME", "")


@functools.lru_cache(maxsize=64)
def _folders(home: str, xdg_config: str, xdg_data: str, user_home: str) -> tuple[Path, Path, Path]:
    """(config, data, models file), cached on the variables: model lookups ask on every call."""
    base = tether_home({"TETHER_HOME": home})
    if base is not None:
        config, data = base / "config", base / "data"
    else:
        user = Path(user_home) if user_home else Path.home()
        config = Path(xdg_config) / APP if os.path.isabs(xdg_config) else user / ".config" / APP
        data = Path(xdg_data) / APP if os.path.isabs(xdg_data) else user / ".local" / "share" / APP
    return config, data, config / "models.json"
