"""User and project settings: ``<config dir>/settings.json`` overlaid by ``.tether/settings.json``.

Settings are small and hand-edited, so they are read with the stdlib ``json`` module and checked
by hand: a mistake is reported as ``<file>: "<key>": <what was expected>`` instead of a pydantic
dump, and nothing here pulls pydantic into the start-up path. The keys are documented in
``docs/settings.md``; unknown keys are rejected so a typo does not silently do nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar, cast

from tether.session.budget import CompactionSettings
from tether.tools.approval import APPROVAL_POLICIES, Approval

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")


class SettingsError(ValueError):
    """A settings file is unreadable or holds a bad value; the message names the file and key."""


@dataclass(frozen=True, slots=True)
class Retry:
    """Automatic retry of a reply that failed for a transient reason (overloaded, rate limit, 5xx)."""

    enabled: bool = True
    max_retries: int = 3
    base_delay_ms: int = 2_000
    """Delay before the first retry; it doubles for each further one."""


@dataclass(frozen=True, slots=True)
class Settings:
    model: str | None = None
    thinking: str | None = None
    tools: tuple[str, ...] | None = None
    approval: Approval = "ask"
    system_prompt: str | None = None
    """Replaces the built-in system prompt (project context files are still appended)."""
    append_system_prompt: str | None = None
    """Added after the built-in prompt and the project context."""
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    retry: Retry = field(default_factory=Retry)
    database: str | None = None
    """Where sessions are stored: a ``postgresql://`` URL or a SQLite file (``TETHER_DATABASE_URL``
    and ``--database`` win over it)."""
    sources: tuple[Path, ...] = ()
    """The files these settings were read from, lowest precedence first."""


def load_settings(config_dir: Path, cwd: Path) -> Settings:
    """User settings, then the nearest project's ``.tether/settings.json`` on top."""
    settings = Settings()
    for path in (config_dir / "settings.json", _project_settings(cwd)):
        if path is not None and path.is_file():
            settings = _apply(settings, _read(path), path)
    return settings


def _project_settings(cwd: Path) -> Path | None:
    for directory in (cwd, *cwd.parents):
        candidate = directory / ".tether" / "settings.json"
        if candidate.is_file():
            return candidate
    return None


def _read(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: expected a JSON object at the top level")
    return cast(dict[str, object], data)


def _apply(base: Settings, data: dict[str, object], path: Path) -> Settings:
    def bad(key: str, expected: str) -> SettingsError:
        return SettingsError(f'{path}: "{key}": expected {expected}, got {json.dumps(data[key])}')

    changes: dict[str, object] = {}
    for key, value in data.items():
        if key in ("model", "systemPrompt", "appendSystemPrompt", "database"):
            if not isinstance(value, str):
                raise bad(key, "a string")
            changes[_FIELD[key]] = value
        elif key == "thinking":
            if value not in THINKING_LEVELS:
                raise bad(key, "one of " + ", ".join(THINKING_LEVELS))
            changes["thinking"] = value
        elif key == "approval":
            if value not in APPROVAL_POLICIES:
                raise bad(key, "one of " + ", ".join(APPROVAL_POLICIES))
            changes["approval"] = value
        elif key == "tools":
            items = cast(list[object], value) if isinstance(value, list) else None
            if items is None or not all(isinstance(v, str) for v in items):
                raise bad(key, "a list of tool names")
            changes["tools"] = tuple(cast(list[str], items))
        elif key == "compaction":
            changes["compaction"] = _compaction(base.compaction, value, path)
        elif key == "retry":
            changes["retry"] = _retry(base.retry, value, path)
        elif key == "$schema":
            continue
        else:
            known = ", ".join(sorted([*_FIELD, "thinking", "approval", "tools", "compaction", "retry"]))
            raise SettingsError(f'{path}: unknown key "{key}" (known keys: {known})')
    sources = (*base.sources, path)
    return replace(base, **changes, sources=sources)  # type: ignore[arg-type]


_FIELD = {
    "model": "model",
    "systemPrompt": "system_prompt",
    "appendSystemPrompt": "append_system_prompt",
    "database": "database",
}


_Section = TypeVar("_Section", CompactionSettings, Retry)


def _compaction(base: CompactionSettings, value: object, path: Path) -> CompactionSettings:
    counts = {"reserveTokens": "reserve_tokens", "keepRecentTokens": "keep_recent_tokens"}
    return _section(base, value, path, "compaction", counts)


def _retry(base: Retry, value: object, path: Path) -> Retry:
    return _section(base, value, path, "retry", {"maxRetries": "max_retries", "baseDelayMs": "base_delay_ms"})


def _section(base: _Section, value: object, path: Path, name: str, counts: dict[str, str]) -> _Section:
    """An object of ``enabled`` plus non-negative integers; ``counts`` maps each wire key to its field."""
    if not isinstance(value, dict):
        raise SettingsError(f'{path}: "{name}": expected an object')
    result = base
    for key, item in cast(dict[str, object], value).items():
        where = f'{path}: "{name}.{key}"'
        if key == "enabled":
            if not isinstance(item, bool):
                raise SettingsError(f"{where}: expected true or false")
            result = replace(result, enabled=item)
        elif key in counts:
            if not isinstance(item, int) or isinstance(item, bool) or item < 0:
                raise SettingsError(f"{where}: expected a non-negative integer")
            result = replace(result, **{counts[key]: item})
        else:
            raise SettingsError(f"{where}: unknown key (known: {', '.join(['enabled', *counts])})")
    return result
