"""API keys saved with ``/login``: ``auth.json`` in the data folder, as pi keeps its ``auth.json``.

The file is ``{"<provider>": {"type": "api_key", "key": "..."}}`` (pi's shape, so a pi user reads
it at a glance), created with mode 0600 in a folder the sandbox hides from tool processes. A key
here wins over the environment, as pi's ``auth.json`` does: ``/login`` is the user saying which
key to use. Reading it costs one ``stat`` per lookup: the parsed file is kept until its
modification time changes.

A lookup never raises: a damaged file gives no key, and a bad entry is skipped while the good
ones are used. What was left out is not silent, though: ``auth_file_problems`` gives one line
for each (front ends show them as notes, as ``models.json``'s), and the "no API key" error says
why the provider's saved key was not used. Those lines name the file, the entry and the field,
never a value: the file holds secrets, and a line reaches the terminal, logs and transcripts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

from tether.ai.paths import data_dir
from tether.own_files import RefusedFile, make_own_folder, read_own_file, write_own_file

FILE_NAME = "auth.json"

_NAME_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


class _Loaded:
    """The usable keys of one version of the file, and what was left out. (A plain class: this
    module loads on every start, and a dataclass costs milliseconds to make.)"""

    __slots__ = ("keys", "problem", "skipped")

    def __init__(
        self,
        keys: dict[str, str] | None = None,
        problem: str | None = None,
        skipped: dict[str, str] | None = None,
    ) -> None:
        self.keys = keys or {}
        self.problem = problem
        """The whole file's problem (not JSON, not an object, unreadable): no key is used."""
        self.skipped = skipped or {}
        """A bad entry's line, by its name."""


_cache: dict[Path, tuple[int, _Loaded]] = {}


class AuthFileError(OSError):
    """``auth.json`` cannot be read or written; the message names the file."""


def auth_file() -> Path:
    return data_dir() / FILE_NAME


def stored_key(provider: str) -> str | None:
    """The key ``/login`` saved for ``provider``, if any."""
    return _load(auth_file()).keys.get(provider)


def stored_providers() -> list[str]:
    """The providers with a saved key, for ``/logout``."""
    return sorted(_load(auth_file()).keys)


def auth_file_problems() -> list[str]:
    """What of ``auth.json`` is not used, one line each naming the file and the entry or the
    place of the mistake (never a value); none for a sound or missing file."""
    loaded = _load(auth_file())
    return [loaded.problem] if loaded.problem is not None else list(loaded.skipped.values())


def unused_key_reason(provider: str) -> str | None:
    """Why no key saved for ``provider`` is used, when the file or its entry is damaged: the
    line to add to a "no API key" error, whose reader would otherwise look everywhere else."""
    loaded = _load(auth_file())
    return loaded.problem or loaded.skipped.get(provider)


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


def _load(path: Path) -> _Loaded:
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        return _Loaded()
    cached = _cache.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        loaded = _entries(path, _read(path))
    except AuthFileError as exc:
        loaded = _Loaded(problem=str(exc))
    _cache[path] = (stamp, loaded)
    return loaded


def _entries(path: Path, data: dict[str, Any]) -> _Loaded:
    """The entries with a usable key; a line for each other one."""
    keys: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for position, (name, entry) in enumerate(data.items(), 1):
        label = repr(name) if _shown(name) else f"entry {position} (its name is not shown)"
        if not isinstance(entry, dict):
            skipped[name] = (
                f'{path}: {label}: expected an object {{"type": "api_key", "key": "..."}}, '
                f"got {_kind(entry)} (skipped)"
            )
            continue
        key = cast(dict[str, Any], entry).get("key")
        if isinstance(key, str) and key:
            keys[name] = key
        else:
            got = "nothing" if "key" not in entry else "an empty string" if key == "" else _kind(key)
            skipped[name] = f'{path}: {label}: "key": expected the API key as a string, got {got} (skipped)'
    return _Loaded(keys=keys, skipped=skipped)


def _read(path: Path) -> dict[str, Any]:
    """The file's JSON object. Read as tether reads the files it finds (``tether.own_files``):
    a FIFO or a device there must not block or fill memory. The errors say where the mistake is
    (line and column, a byte's position) but not what is there."""
    fix = "fix or remove it (/login writes a new one)"
    try:
        data = json.loads(read_own_file(path, None).decode("utf-8"))
    except FileNotFoundError:
        return {}
    except RefusedFile as exc:
        raise AuthFileError(f"{path}: cannot read: {exc}; {fix}") from None
    except OSError as exc:
        raise AuthFileError(f"{path}: cannot read: {exc.strerror or type(exc).__name__}; {fix}") from None
    except UnicodeDecodeError as exc:
        raise AuthFileError(f"{path}: not UTF-8 text (byte {exc.start}); {fix}") from None
    except json.JSONDecodeError as exc:
        raise AuthFileError(
            f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}; {fix}"
        ) from None
    except RecursionError:
        raise AuthFileError(f"{path}: invalid JSON: nested too deeply; {fix}") from None
    except ValueError:  # an integer too long to convert, and the like
        raise AuthFileError(f"{path}: invalid JSON: a value cannot be read; {fix}") from None
    if not isinstance(data, dict):
        raise AuthFileError(f"{path}: expected a JSON object at the top level, got {_kind(data)}; {fix}")
    return cast(dict[str, Any], data)


def _shown(name: str) -> bool:
    """Whether an entry's name may appear in a line: a provider's name does. Anything else (a
    key pasted where the name goes is long, or holds other characters) is shown by its
    position only."""
    return 0 < len(name) <= 40 and all(c in _NAME_CHARACTERS for c in name)


def _kind(value: object) -> str:
    """What a JSON value is, without what it holds."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def _write(data: dict[str, Any]) -> Path:
    """Write through a new 0600 temporary file renamed over the old one (``write_own_file``): the
    key is never readable by others, not even for a moment, and two tethers saving at once each
    write their own temporary file."""
    path = auth_file()
    make_own_folder(path.parent)
    write_own_file(path, [(json.dumps(data, indent=2) + "\n").encode()])
    _cache.pop(path, None)
    return path
