"""pi session files (JSONL, formats v1–v3) into tether's store, and tether sessions out as pi files.

Reading follows pi 1.6's loader: blank and unreadable lines are skipped, the first record must be
a ``session`` header with a string ``id``, and older formats are migrated as pi migrates them
(``pi_format.migrate_pi_entries``). The imported session is a new tether session (its own id;
pi's ids stay on the entries as ``piId``) whose leaf is the file's last entry, as in pi.

Writing gives pi a version 3 file in append order. pi opens a file at its last entry, so when
tether's leaf is not the last entry (the user went back in the tree and has not written since)
the file ends with a ``custom`` entry (``tether.leaf``) hanging under the leaf: it keeps pi on the
same path and puts nothing in the model's context. Importing such a file drops the marker and puts
the leaf back where it was.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal, cast

from tether.session.manager import SessionManager
from tether.session.pi_format import (
    PI_SESSION_VERSION,
    from_pi_entry,
    iso_timestamp,
    migrate_pi_entries,
    ms_timestamp,
    pi_ids_of,
    to_pi_entry,
)
from tether.session.session import now_ms
from tether.store.entries import ENTRY_FORMAT, EntryDict
from tether.store.ids import new_id
from tether.store.jsonl import ImportFormatError, check_storable, entry_problem
from tether.store.store import SessionRecord
from tether.wire import WireError, decode_message, dumps

LEAF_MARKER = "tether.leaf"

_CHECKED_ROLES = frozenset(
    {"user", "assistant", "toolResult", "bashExecution", "custom", "branchSummary", "compactionSummary"}
)
"""Roles tether checks on import; messages of other roles (pi's ``system``, roles an extension
added) are kept as they are."""


def session_file_kind(path: Path) -> Literal["pi", "tether"] | None:
    """``pi`` or ``tether`` by the first record's header (a tether export names its ``format``);
    ``None`` when the first record is not a session header."""
    with path.open("rb") as lines:
        for line in lines:
            if not line.strip():
                continue
            try:
                first: Any = json.loads(line)
            except (ValueError, RecursionError):
                return None
            if not isinstance(first, dict) or cast(dict[str, Any], first).get("type") != "session":
                return None
            return "tether" if "format" in first else "pi"
    return None


def read_pi_session(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the (v3) entries of a pi session file; errors name the file and line."""
    records: list[tuple[int, dict[str, Any]]] = []
    with path.open("rb") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                value: Any = json.loads(line)
            except RecursionError:  # valid JSON to pi, but deeper than tether can store
                raise ImportFormatError(f"{path.name}:{number}: nested too deeply to import") from None
            except ValueError:
                continue  # pi skips a damaged line (e.g. a half-written last one)
            if isinstance(value, dict):
                records.append((number, cast(dict[str, Any], value)))
    if not records or records[0][1].get("type") != "session" or not isinstance(records[0][1].get("id"), str):
        raise ImportFormatError(
            f"{path.name}: not a pi session file (its first record must be a session header)"
        )
    header_line, header = records[0]
    version = header.get("version")
    if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
        raise ImportFormatError(f"{path.name}:{header_line}: the header's version must be a number")
    entries = [record for _, record in records[1:]]
    migrate_pi_entries(header, entries)
    seen: set[str] = set()
    for number, entry in records[1:]:  # migrated in place
        _check_entry(entry, f"{path.name}:{number}", seen)
    return header, entries


def _check_entry(entry: dict[str, Any], where: str, seen: set[str]) -> None:
    """An entry tether can store and open again: a tree link to an earlier entry, the fields
    tether reads of its type, a valid message; ``seen`` collects the ids so far."""
    entry_id, kind = entry.get("id"), entry.get("type")
    if not isinstance(entry_id, str) or not isinstance(kind, str):
        raise ImportFormatError(f"{where}: an entry needs a string id and type")
    if entry_id in seen:
        raise ImportFormatError(f"{where}: duplicate entry id {entry_id!r}")
    parent = entry.get("parentId")
    if parent is not None and (not isinstance(parent, str) or parent not in seen):
        raise ImportFormatError(f"{where}: entry {entry_id!r} has parentId {parent!r}, not an earlier entry")
    seen.add(entry_id)
    if kind == "message" and not isinstance(entry.get("message"), dict):
        raise ImportFormatError(f"{where}: a message entry needs a message object")
    if kind == "message" and not isinstance(entry["message"].get("role"), str):
        raise ImportFormatError(f"{where}: message.role must be a string")
    if kind == "custom_message" and not isinstance(entry.get("details", {}), dict | None):
        raise ImportFormatError(f"{where}: custom_message.details must be an object")
    if kind == "custom" and not isinstance(entry.get("data", {}), dict | None):
        raise ImportFormatError(f"{where}: custom.data must be an object")
    converted = from_pi_entry(entry, entry_id, {})
    problem = entry_problem(converted)
    if problem is not None:
        raise ImportFormatError(f"{where}: {problem}")
    message = cast(dict[str, Any] | None, entry.get("message") if kind == "message" else None)
    if message is not None and message.get("role") in _CHECKED_ROLES:
        try:
            decode_message(message, "message")
        except WireError as err:
            raise ImportFormatError(f"{where}: {err}") from None
    check_storable(entry, where)


def import_pi_session(manager: SessionManager, path: str | os.PathLike[str]) -> SessionRecord:
    """Store a pi session file as a new tether session; returns its record."""
    header, pi_entries = read_pi_session(Path(path))
    marker = pi_entries[-1] if pi_entries and pi_entries[-1].get("customType") == LEAF_MARKER else None
    if marker is not None and marker["type"] == "custom":
        pi_entries = pi_entries[:-1]
    tether_ids: dict[str, str] = {}
    entries: list[EntryDict] = []
    for pi_entry in pi_entries:
        entry_id = new_id()
        entries.append(from_pi_entry(pi_entry, entry_id, tether_ids))
        tether_ids[pi_entry["id"]] = entry_id
    created = ms_timestamp(header.get("timestamp")) or now_ms()
    updated = max([created, *(e["timestamp"] for e in entries)])
    cwd = header.get("cwd")
    store = manager.store
    record = store.create_session(
        new_id(), cwd if isinstance(cwd, str) else str(Path.cwd()), created, version=ENTRY_FORMAT
    )
    lease = store.acquire_writer(record.id)
    try:
        if entries:
            record = store.append(lease, entries, entries[-1]["id"], updated)
        if marker is not None:
            record = store.set_leaf(lease, tether_ids.get(marker.get("parentId") or ""), updated)
    except BaseException:
        store.delete_session(lease)
        raise
    finally:
        lease.release()
    return record


def export_pi_session(manager: SessionManager, session_id: str, path: str | os.PathLike[str]) -> Path:
    """Write the session (every branch) as a pi version 3 session file that pi opens and continues."""
    session = manager.open(session_id, readonly=True)
    try:
        record, entries, leaf = session.record, session.entries(), session.leaf_id
    finally:
        session.close()
    ids = pi_ids_of(entries)
    header = {
        "type": "session",
        "version": PI_SESSION_VERSION,
        "id": record.id,
        "timestamp": iso_timestamp(record.created),
        "cwd": record.cwd,
    }
    lines = [dumps(header)]
    lines.extend(dumps(to_pi_entry(entry, ids)) for entry in entries)
    if entries and leaf != entries[-1]["id"]:
        marker: EntryDict = {
            "type": "custom",
            "id": new_id(),
            "parentId": leaf,
            "timestamp": record.updated,
            "customType": LEAF_MARKER,
            "data": {},
        }
        lines.append(dumps(to_pi_entry(marker, ids)))
    out = Path(path)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp.replace(out)
    return out
