"""API keys saved with ``/login``: ``auth.json`` in the data folder, as pi keeps its ``auth.json``.

The file is ``{"<provider>": {"type": "api_key", "key": "..."}}`` (pi's shape, so a pi user reads
it at a glance), created with mode 0600 in a folder the sandbox hides from tool processes. A key
here wins over the environment, as pi's ``auth.json`` does: ``/login`` is the user saying which
key to use. Reading it costs one ``stat`` per lookup: the parsed file is kept until its
modification time changes. A damaged file counts as empty (a lookup never raises); ``/login``
reports it when it writes.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any, cast

from tether.ai.paths import data_dir

FILE_NAME = "auth.json"

_cache: dict[Path, tuple[int, dict[str, Any]]] = {}


class AuthFileError(OSError):
    """``auth.json`` cannot be read or written; the message names the file."""


def auth_file() -> Path:
    return data_dir() / FILE_NAME


def stored_key(provider: str) -> str | None:
    """The key ``/login`` saved for ``provider``, if any."""
    entry = _entries(auth_file()).get(provider)
    if isinstance(entry, dict):
        key = cast(dict[str, Any], entry).get("key")
        if isinstance(key, str) and key:
            return key
    return None


def stored_providers() -> list[str]:
    """The providers with a saved key, for ``/logout``."""
    return sorted(name for name in _entries(auth_file()) if stored_key(name) is not None)


def save_key(provider: str, key: str) -> Path:
    """Save ``key`` for ``provider`` (replacing an older one); returns the file written."""
    return _write({**_read(auth_file()), provider: {"type": "api_key", "key": key}})


def remove_key(provider: str) -> bool:
    """Forget ``provider``'s saved key; whether there was one."""
    data = _read(auth_file())
    if provider not in data:
        return False
    del data[provider]
    _write(data)
    return True


def _entries(path: Path) -> dict[str, Any]:
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        return {}
    cached = _cache.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        data = _read(path)
    except AuthFileError:
        data = {}
    _cache[path] = (stamp, data)
    return data


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
        raise AuthFileError(f"{path}: cannot be read ({exc}); fix or remove it") from None
    if not isinstance(data, dict):
        raise AuthFileError(f"{path}: expected a JSON object; fix or remove it")
    return cast(dict[str, Any], data)


def _write(data: dict[str, Any]) -> Path:
    """Write through a 0600 temporary file renamed over the old one: the key is never readable
    by others, not even for a moment."""
    path = auth_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(json.dumps(data, indent=2) + "\n")
    os.replace(temporary, path)
    _cache.pop(path, None)
    return path
