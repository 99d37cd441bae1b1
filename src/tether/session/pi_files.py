"""pi session files (JSONL, formats v1–v3) into tether's store, and tether sessions out as pi files.

Reading follows pi 1.6's loader: blank and unreadable lines are skipped, the first record must be
a ``session`` header with a string ``id``, and older formats are migrated as pi migrates them
(``pi_format.migrate_pi_entry``). The imported session is a new tether session (its own id;
pi's ids stay on the entries as ``piId``) whose leaf is the file's last entry, as in pi.

Writing gives pi a version 3 file in append order. pi opens a file at its last entry, so when
tether's leaf is not the last entry (the user went back in the tree and has not written since)
the file ends with a ``custom`` entry (``tether.leaf``) hanging under the leaf: it keeps pi on the
same path and puts nothing in the model's context. Importing such a file drops the marker and puts
the leaf back where it was.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, cast

from tether.session.manager import SessionManager
from tether.session.pi_format import (
    PI_SESSION_VERSION,
    from_pi_entry,
    iso_timestamp,
    migrate_pi_entry,
    ms_timestamp,
    pi_ids_of,
    pi_version,
    to_pi_entry,
)
from tether.session.session import now_ms
from tether.store.entries import ENTRY_FORMAT, EntryDict
from tether.store.ids import new_id
from tether.store.jsonl import ImportFormatError, check_storable, entry_problem, write_lines
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


def read_pi_session(
    path: Path, problems: list[str] | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the (v3) entries of a pi session file. A bad entry raises
    ``ImportFormatError`` naming the file and line, or with ``problems`` is left out and
    reported there (``pi_entries``)."""
    reader = PiFileReader(path, problems)
    entries = [entry for _, entry in reader.entries()]
    return reader.header, entries


class PiFileReader:
    """A pi session file read one line at a time (a file of a million entries is not held as
    parsed JSON all at once). The first record must be the ``session`` header; then each entry
    is migrated to v3 (``pi_format.migrate_pi_entry``) and checked (``_check_entry``).

    pi skips a line it cannot parse (a half-written last line); so does this reader, and it
    says so. With ``problems`` given, an entry tether cannot store is left out in the same way
    (``FILE:LINE: skipped: why`` goes to ``problems``) and the rest still comes in: an entry whose
    parent was left out hangs under that entry's parent instead, and an entry whose parent is
    not an earlier entry (missing, later, itself) becomes a root, as pi reads it (its context
    stops there). Without ``problems`` the first bad entry raises ``ImportFormatError``."""

    def __init__(self, path: Path, problems: list[str] | None) -> None:
        self.path = path
        self.problems = problems
        self.header: dict[str, Any] = {}
        self._seen: set[str] = set()
        self._moved: dict[str, str | None] = {}
        """pi ids of entries left out -> the parent their children hang under instead."""

    def _report(self, where: str, what: str) -> None:
        if self.problems is None:
            raise ImportFormatError(f"{where}: {what}")
        self.problems.append(f"{where}: skipped: {what}")

    def _records(self) -> Iterator[tuple[int, dict[str, Any]]]:
        with self.path.open("rb") as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                try:
                    value: Any = json.loads(line)
                except RecursionError:  # valid JSON to pi, but deeper than tether can store
                    what = "nested too deeply to import"
                except ValueError:
                    what = "not a JSON line"
                else:
                    if isinstance(value, dict):
                        yield number, cast(dict[str, Any], value)
                        continue
                    what = "not a JSON object"
                if self.problems is not None or what == "nested too deeply to import":
                    self._report(f"{self.path.name}:{number}", what)
                # without ``problems`` an unreadable line is skipped unsaid, as pi skips it

    def entries(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(line number, v3 entry)`` for each entry tether can store, in file order; the
        header is read first (``header``), a bad one raises."""
        name = self.path.name
        records = self._records()
        first = next(records, None)
        if first is None or first[1].get("type") != "session" or not isinstance(first[1].get("id"), str):
            raise ImportFormatError(
                f"{name}: not a pi session file (its first record must be a session header)"
            )
        header_line, self.header = first
        version = self.header.get("version")
        if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
            raise ImportFormatError(f"{name}:{header_line}: the header's version must be a number")
        version = pi_version(self.header)
        self.header["version"] = PI_SESSION_VERSION
        for index, (number, entry) in enumerate(records):
            where = f"{name}:{number}"
            migrate_pi_entry(version, index, entry)
            parent = entry.get("parentId")
            if parent is None or (isinstance(parent, str) and parent in self._seen):
                pass
            elif isinstance(parent, str) and parent in self._moved:
                entry["parentId"] = self._moved[parent]
            else:
                what = f"entry {entry.get('id')!r} has parentId {parent!r}, not an earlier entry"
                if self.problems is None:
                    raise ImportFormatError(f"{where}: {what}")
                self.problems.append(f"{where}: {what}: kept as a root")
                entry["parentId"] = None  # pi's context stops at an unknown parent too
            try:
                _check_entry(entry, where, self._seen)
            except ImportFormatError as err:
                if self.problems is None:
                    raise
                self.problems.append(f"{where}: skipped: {str(err).removeprefix(where + ': ')}")
                entry_id = entry.get("id")
                if isinstance(entry_id, str) and entry_id not in self._seen:
                    self._moved[entry_id] = cast(str | None, entry.get("parentId"))
                continue
            self._seen.add(entry["id"])
            yield number, entry


def _check_entry(entry: dict[str, Any], where: str, seen: set[str]) -> None:
    """An entry tether can store and open again: the fields tether reads of its type, a valid
    message; ``seen`` holds the ids so far (the tree link was checked by the reader)."""
    entry_id, kind = entry.get("id"), entry.get("type")
    if kind == "session":  # two files joined: pi's loader reads no entry of this type either
        raise ImportFormatError(f"{where}: a second session header, not an entry")
    if not isinstance(entry_id, str) or not isinstance(kind, str):
        raise ImportFormatError(f"{where}: an entry needs a string id and type")
    if entry_id in seen:
        raise ImportFormatError(f"{where}: duplicate entry id {entry_id!r}")
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


_BATCH = 1000
"""Entries stored in one transaction while importing: memory stays bounded by the batch, not
the file."""


def import_pi_session(
    manager: SessionManager, path: str | os.PathLike[str], problems: list[str] | None = None
) -> SessionRecord:
    """Store a pi session file as a new tether session; returns its record. A bad entry raises
    ``ImportFormatError`` (nothing is stored), or with ``problems`` is left out and reported
    there (``PiFileReader``)."""
    reader = PiFileReader(Path(path), problems)
    entries = reader.entries()
    first = next(entries, None)  # reads the header (or raises) before anything is stored
    header = reader.header
    created = ms_timestamp(header.get("timestamp")) or now_ms()
    cwd = header.get("cwd")
    store = manager.store
    record = store.create_session(
        new_id(), cwd if isinstance(cwd, str) else str(Path.cwd()), created, version=ENTRY_FORMAT
    )
    lease = store.acquire_writer(record.id)
    try:
        tether_ids: dict[str, str] = {}
        batch: list[EntryDict] = []
        last: dict[str, Any] | None = None  # the newest pi entry, held back: it may be the leaf marker
        updated = created
        for _, pi_entry in itertools.chain([first] if first else [], entries):
            if last is not None:
                batch.append(_converted(last, tether_ids))
                updated = max(updated, batch[-1]["timestamp"])
            last = pi_entry
            if len(batch) >= _BATCH:
                record = store.append(lease, batch, batch[-1]["id"], updated)
                batch = []
        marker = last if last is not None and last.get("customType") == LEAF_MARKER else None
        if last is not None and (marker is None or marker["type"] != "custom"):
            batch.append(_converted(last, tether_ids))
            updated = max(updated, batch[-1]["timestamp"])
            marker = None
        if batch:
            record = store.append(lease, batch, batch[-1]["id"], updated)
        if marker is not None:
            record = store.set_leaf(lease, tether_ids.get(marker.get("parentId") or ""), updated)
    except BaseException:
        store.delete_session(lease)
        raise
    finally:
        lease.release()
    return record


def _converted(pi_entry: dict[str, Any], tether_ids: dict[str, str]) -> EntryDict:
    """``pi_entry`` as a tether entry with a new id, which ``tether_ids`` now maps its pi id to."""
    entry = from_pi_entry(pi_entry, new_id(), tether_ids)
    tether_ids[pi_entry["id"]] = entry["id"]
    return entry


def export_pi_session(
    manager: SessionManager,
    session_id: str,
    path: str | os.PathLike[str],
    *,
    on_skip: Callable[[str], None] | None = None,
) -> Path:
    """Write the session (every branch) as a pi version 3 session file that pi opens and continues.
    The entries are the ones tether's own export writes (``SessionManager.sound_entries``): an
    entry whose row is damaged is left out, told to ``on_skip``, its children hung from its
    parent; the export stopped at it."""
    record, kept = manager.sound_entries(session_id, on_skip)
    entries, leaf = [entry for entry, _ in kept], record.leaf_id
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
    write_lines(out, (line.encode() for line in lines), export=True)
    return out
