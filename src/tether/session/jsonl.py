"""The session export format: versioned JSONL, one header line then one entry per line.

```
{"type":"session","format":"tether.session","version":1,"id":…,"cwd":…,"title":…,"created":…,
 "updated":…,"leafId":…,"parentSessionId":…,"parentEntryId":…}
{"type":"message","id":…,"parentId":…,"timestamp":…,"message":{…}}
…
```

Entries are written in append order, every branch included, as the exact stored JSON, so
``export(import(f)) == f`` byte for byte. Reading checks the header, every entry's common keys
and every message (``tether.wire``); errors name the line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from tether.session.entries import EntryDict
from tether.session.store import SessionError, SessionRecord
from tether.wire import WireError, decode_message, dumps

FORMAT = "tether.session"
VERSION = 1


class ImportFormatError(SessionError, ValueError):
    """An import file is not a tether session export (or is damaged); names the line."""


@dataclass(frozen=True, slots=True)
class SessionExport:
    header: dict[str, Any]
    entries: list[EntryDict]


def header_of(record: SessionRecord) -> dict[str, Any]:
    return {
        "type": "session",
        "format": FORMAT,
        "version": VERSION,
        "id": record.id,
        "cwd": record.cwd,
        "title": record.title,
        "created": record.created,
        "updated": record.updated,
        "leafId": record.leaf_id,
        "parentSessionId": record.parent_session_id,
        "parentEntryId": record.parent_entry_id,
    }


def write_export(path: Path, record: SessionRecord, payloads: list[bytes]) -> None:
    """Write the header and the stored entry payloads (already compact JSON) to ``path``."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as out:
        out.write(dumps(header_of(record)).encode())
        out.write(b"\n")
        for payload in payloads:
            out.write(payload)
            out.write(b"\n")
    tmp.replace(path)


def read_export(path: Path) -> SessionExport:
    header: dict[str, Any] | None = None
    entries: list[EntryDict] = []
    seen: set[str] = set()
    with path.open("rb") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"{path.name}:{number}"
            try:
                value: Any = json.loads(line)
            except ValueError as err:
                raise ImportFormatError(f"{where}: invalid JSON: {err}") from None
            if not isinstance(value, dict):
                raise ImportFormatError(f"{where}: expected a JSON object")
            obj = cast(dict[str, Any], value)
            if header is None:
                header = _check_header(obj, where)
                continue
            entries.append(_check_entry(obj, where, seen))
    if header is None:
        raise ImportFormatError(f"{path.name}: empty file, expected a session header")
    leaf = header.get("leafId")
    if leaf is not None and leaf not in seen:
        raise ImportFormatError(f"{path.name}: header leafId {leaf!r} is not an entry of the file")
    return SessionExport(header, entries)


def _check_header(obj: dict[str, Any], where: str) -> dict[str, Any]:
    if obj.get("type") != "session" or obj.get("format") != FORMAT:
        raise ImportFormatError(f"{where}: not a {FORMAT} export (first line must be its header)")
    version = obj.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise ImportFormatError(f"{where}: export version {version!r} is not supported (max {VERSION})")
    for key, kind in (("id", str), ("cwd", str), ("created", int), ("updated", int)):
        if not isinstance(obj.get(key), kind):
            raise ImportFormatError(f"{where}: header.{key} must be a {kind.__name__}")
    return obj


def _check_entry(obj: dict[str, Any], where: str, seen: set[str]) -> EntryDict:
    for key, kind in (("type", str), ("id", str), ("timestamp", int)):
        if not isinstance(obj.get(key), kind):
            raise ImportFormatError(f"{where}: entry.{key} must be a {kind.__name__}")
    parent = obj.get("parentId")
    if parent is not None and parent not in seen:
        raise ImportFormatError(f"{where}: entry {obj['id']!r} has parentId {parent!r}, not an earlier entry")
    if obj["id"] in seen:
        raise ImportFormatError(f"{where}: duplicate entry id {obj['id']!r}")
    if obj["type"] == "message":
        try:
            decode_message(obj.get("message"), "message")
        except WireError as err:
            raise ImportFormatError(f"{where}: {err}") from None
    seen.add(obj["id"])
    return obj
