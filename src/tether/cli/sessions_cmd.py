"""``tether sessions follow`` and ``tether sessions copy``, and the choice of the session store.

The store is chosen once, at the edge: ``--database URL``, else ``$TETHER_DATABASE_URL``, else the
``database`` setting, else the SQLite file. The choice is published as ``TETHER_DATABASE_URL``,
which every ``SessionManager()`` of this process (and of the processes it starts) reads.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO, cast

from tether.store.paths import DATABASE_ENV


def use_database(flag: str | None, cwd: Path | None = None) -> None:
    """Publish the store this run uses (see the module docstring); settings errors are left to
    the code that reads the settings for real, which reports them."""
    if flag:
        os.environ[DATABASE_ENV] = flag
        return
    if os.environ.get(DATABASE_ENV):
        return
    from tether.ai.paths import config_dir
    from tether.session.settings import SettingsError, load_settings

    try:
        settings = load_settings(config_dir(), cwd or Path.cwd())
    except SettingsError:
        return
    if settings.database:
        os.environ[DATABASE_ENV] = settings.database


def follow_session(session_id: str, *, as_json: bool, history: bool, out: TextIO = sys.stdout) -> int:
    """Print the session's entries as they land, until Ctrl-C or the session is deleted."""
    from tether.cli.session_files import say_skipped
    from tether.session import SessionManager
    from tether.store import SessionError
    from tether.store.follow import follow
    from tether.store.tree import CorruptSessionError, Node

    try:
        with SessionManager() as manager:
            entries = follow(manager.store, session_id, history=history)
            sys.stderr.write(f"following session {session_id} (Ctrl-C to stop)\n")
            sys.stderr.flush()
            for stored in entries:
                try:
                    entry = Node(*stored).entry
                except CorruptSessionError as exc:  # a row changed outside tether: the next goes on
                    say_skipped(str(exc))
                    continue
                out.write((json.dumps(entry, ensure_ascii=False) if as_json else entry_line(entry)) + "\n")
                out.flush()
    except KeyboardInterrupt:
        return 0
    except SessionError as err:  # no such session, or it was deleted while followed
        sys.stderr.write(f"tether: {err}\n")
        return 1
    return 0


def copy_to(target: str, session_ids: tuple[str, ...], *, out: TextIO = sys.stdout) -> int:
    """Copy sessions of the current store into the store at ``target``."""
    from tether.store import SessionError, open_store
    from tether.store.copy import copy_sessions
    from tether.store.paths import redact

    try:
        source = open_store()
        try:
            destination = open_store(target)
            try:
                report = copy_sessions(source, destination, session_ids or None)
            finally:
                destination.close()
        finally:
            source.close()
    except SessionError as err:
        sys.stderr.write(f"tether: {err}\n")
        return 1
    for session_id, why in report.skipped:
        sys.stderr.write(f"skipped {session_id}: {why}\n")
    out.write(f"copied {report.sessions} sessions ({report.entries} new entries) to {redact(target)}\n")
    return 1 if report.skipped else 0


TEXT_CHARS = 160


def entry_line(entry: dict[str, Any]) -> str:
    """One line per entry for people: time, type or role, and the gist."""
    clock = time.strftime("%H:%M:%S", time.localtime(int(entry.get("timestamp", 0)) / 1000))
    kind = str(entry.get("type"))
    if kind == "message":
        message = cast(dict[str, Any], entry.get("message") or {})
        role = str(message.get("role"))
        if role == "toolResult":
            return f"{clock}  {role} {message.get('toolName')}: {_gist(message.get('content'))}"
        return f"{clock}  {role}: {_gist(message.get('content'))}"
    details = {
        "model_change": lambda: f"{entry.get('provider')}/{entry.get('modelId')}",
        "thinking_level_change": lambda: str(entry.get("thinkingLevel")),
        "service_tier_change": lambda: str(entry.get("serviceTier")),
        "session_info": lambda: str(entry.get("title")),
        "compaction": lambda: _clip(str(entry.get("summary"))),
        "branch_summary": lambda: _clip(str(entry.get("summary"))),
        "label": lambda: f"{entry.get('targetId')} = {entry.get('label')}",
        "custom": lambda: str(entry.get("customType")),
    }
    detail = details.get(kind)
    return f"{clock}  [{kind}]" + (f" {detail()}" if detail else "")


def _gist(content: object) -> str:
    if isinstance(content, str):
        return _clip(content)
    parts: list[str] = []
    for block in cast(list[dict[str, Any]], content if isinstance(content, list) else []):
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text")))
        elif kind == "toolCall":
            parts.append(f"→ {block.get('name')}({json.dumps(block.get('arguments'), ensure_ascii=False)})")
        elif kind == "thinking":
            parts.append("(thinking)")
        elif kind == "image":
            parts.append("(image)")
    return _clip(" ".join(parts))


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= TEXT_CHARS else flat[: TEXT_CHARS - 1] + "…"
