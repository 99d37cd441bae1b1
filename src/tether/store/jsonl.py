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
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from tether.own_files import write_own_file
from tether.store.entries import EntryDict, encode_entry
from tether.store.store import SessionError, SessionRecord, StoredEntry
from tether.store.tree import CorruptSessionError, Node
from tether.wire import WireError, decode_message, dumps
from tether.wire.json_line import finite, load_line

FORMAT = "tether.session"
VERSION = 1


ID_PATTERN = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]{0,63}")
"""What an imported session or entry id may be (tether's own are 26 base32 characters). Ids name
files (``/export``, the RPC export's default path, SQLite's lock files) and go out as SSE ``id:``
lines: a file from elsewhere must not bring ``../`` or a line break in one."""


class ImportFormatError(SessionError, ValueError):
    """An import file is not a tether session export (or is damaged); names the line."""


@dataclass(frozen=True, slots=True)
class SessionExport:
    header: dict[str, Any]
    entries: list[EntryDict]


def header_of(record: SessionRecord) -> dict[str, Any]:
    return {"type": "session", "format": FORMAT, "version": VERSION, **record.identity()}


_REFERENCES = {"compaction": "firstKeptEntryId", "branch_summary": "fromId"}
"""Per entry type, the field naming an earlier entry that the context reads: where a compaction's
kept part starts, the leaf a branch summary was left from."""


def sound_entries(
    record: SessionRecord, entries: list[StoredEntry], on_skip: Callable[[str], None]
) -> tuple[SessionRecord, list[tuple[EntryDict, bytes]]]:
    """The session's header and its entries for an export (each as a dict and as its payload),
    without the entries whose stored row is no JSON object (changed outside tether) or a session
    header (``_STORED_HEADER``), each told to ``on_skip`` ("entry 'ID': payload is not JSON
    (...)"): copied as they were, the file was one the import refused at that line, and the
    entries after it with it. An entry whose parent was left out hangs from that parent's parent
    (the row's own column, intact), and so does the leaf, so the file imports whole. A
    compaction whose kept part started at an entry left out starts at that entry's nearest sound
    ancestor (one entry more kept, where pointing at nothing kept none of them: the context
    starts at no entry it cannot find), or, with none, at the first sound entry of its path
    after it (the nearest the compaction kept), and a branch summary's ``fromId`` moves up the
    same way ("" for none, as it is stored); a label of an entry left out stays as it is (moved,
    it would name another entry)."""
    moved: dict[str, str | None] = {}
    parents: dict[str, str | None] = {}  # each sound entry's parent in the file
    kept: list[tuple[EntryDict, bytes]] = []
    for stored in entries:
        node = Node(*stored)
        try:
            if stored.type == "session":
                raise CorruptSessionError(f"entry {stored.id!r}: {_STORED_HEADER}")
            entry = node.entry
        except CorruptSessionError as exc:
            on_skip(str(exc))
            parent = stored.parent_id
            moved[stored.id] = parent if parent is None else moved.get(parent, parent)
            continue
        repaired: dict[str, Any] = {}
        parent = moved.get(stored.parent_id, stored.parent_id) if stored.parent_id else None
        if stored.parent_id in moved:
            repaired["parentId"] = parent
        parents[stored.id] = parent
        key = _REFERENCES.get(stored.type)
        if key is not None and isinstance(target := entry.get(key), str) and target in moved:
            if key == "firstKeptEntryId":
                repaired[key] = moved[target] or _topmost(parent, parents)
            else:
                repaired[key] = moved[target] or ""
        if repaired:
            entry = {**entry, **repaired}
            kept.append((entry, encode_entry(entry)))
        else:
            kept.append((entry, stored.payload))
    if record.leaf_id in moved:
        record = replace(record, leaf_id=moved[record.leaf_id])
    return record, kept


_STORED_HEADER = "a session header stored as an entry (an older import's), left out"
"""Why an export leaves out an entry of type ``session``: an older import took a second header
in the file for an entry; written out, it is a line the import refuses (``read_export``)."""


def _topmost(at: str | None, parents: dict[str, str | None]) -> str | None:
    """The first entry of the path ending at ``at`` (``None`` for none); bounded, as rows changed
    outside tether may make a cycle."""
    top = at
    for _ in range(len(parents) + 1):
        if at is None:
            break
        top, at = at, parents.get(at)
    return top


def write_export(path: Path, record: SessionRecord, payloads: list[bytes]) -> None:
    """Write the header and the stored entry payloads (already compact JSON) to ``path``."""
    write_lines(path, [dumps(header_of(record)).encode(), *payloads], export=True)


def write_lines(path: Path, lines: Iterable[bytes], *, export: bool = False) -> None:
    """Write ``lines`` to ``path``, each ended by a newline, whole or not at all, as tether writes
    its own files (``write_own_file``: a new 0600 temporary file renamed over it, no link
    followed); an ``export`` (a file the user named) is written through a link at ``path``, into
    the file it points to. Failure raises ``OSError`` naming ``path``."""
    write_own_file(path, (part for line in lines for part in (line, b"\n")), through_link=export)


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
                value: Any = load_line(line)
            except ValueError as err:
                raise ImportFormatError(f"{where}: invalid JSON: {err}") from None
            if not isinstance(value, dict):
                raise ImportFormatError(f"{where}: expected a JSON object")
            obj = cast(dict[str, Any], value)
            if b"NaN" in line or b"Infinity" in line:  # an export of an older tether's: stored null
                obj = cast(dict[str, Any], finite(obj))
            if header is None:
                header = _check_header(obj, where)
                continue
            if obj.get("type") == "session":
                raise ImportFormatError(f"{where}: a second session header, not an entry")
            entries.append(_check_entry(obj, where, seen))
    if header is None:
        raise ImportFormatError(f"{path.name}: empty file, expected a session header")
    leaf = header.get("leafId")
    if leaf is not None and (not isinstance(leaf, str) or leaf not in seen):
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
    for key in ("created", "updated"):
        if obj[key] not in INT64:
            raise ImportFormatError(f"{where}: header.{key} must be a time in Unix ms, not {obj[key]}")
    if not ID_PATTERN.fullmatch(obj["id"]):
        raise ImportFormatError(
            f"{where}: header.id {obj['id']!r} is not a session id (letters, digits, - and _)"
        )
    return obj


def _check_entry(obj: dict[str, Any], where: str, seen: set[str]) -> EntryDict:
    for key, kind in (("type", str), ("id", str), ("timestamp", int)):
        if not isinstance(obj.get(key), kind):
            raise ImportFormatError(f"{where}: entry.{key} must be a {kind.__name__}")
    if not ID_PATTERN.fullmatch(obj["id"]):
        raise ImportFormatError(
            f"{where}: entry.id {obj['id']!r} is not an entry id (letters, digits, - and _)"
        )
    parent = obj.get("parentId")
    if parent is not None and (not isinstance(parent, str) or parent not in seen):
        raise ImportFormatError(f"{where}: entry {obj['id']!r} has parentId {parent!r}, not an earlier entry")
    if obj["id"] in seen:
        raise ImportFormatError(f"{where}: duplicate entry id {obj['id']!r}")
    if obj["type"] == "message":
        try:
            decode_message(obj.get("message"), "message")
        except WireError as err:
            raise ImportFormatError(f"{where}: {err}") from None
    problem = entry_problem(obj)
    if problem is not None:
        raise ImportFormatError(f"{where}: {problem}")
    check_storable(obj, where)
    seen.add(obj["id"])
    return obj


_Kinds = tuple[type, ...]
_TEXT: _Kinds = (str,)
_TEXT_OR_NONE: _Kinds = (str, type(None))
_NUMBER: _Kinds = (int, float)

ENTRY_FIELDS: dict[str, dict[str, tuple[_Kinds, bool]]] = {
    "model_change": {"provider": (_TEXT, True), "modelId": (_TEXT, True)},
    "thinking_level_change": {"thinkingLevel": (_TEXT, True)},
    "service_tier_change": {"serviceTier": (_TEXT_OR_NONE, False)},
    "system_prompt_change": {"systemPrompt": (_TEXT, True)},
    "compaction": {
        "summary": (_TEXT, True),
        "firstKeptEntryId": (_TEXT_OR_NONE, False),
        "tokensBefore": (_NUMBER, False),
        "tokensAfter": (_NUMBER, False),
    },
    "branch_summary": {"summary": (_TEXT, True), "fromId": (_TEXT_OR_NONE, False)},
    "label": {"targetId": (_TEXT, True), "label": (_TEXT_OR_NONE, False)},
    "session_info": {"title": (_TEXT, False)},
    "custom": {"customType": (_TEXT, True)},
}
"""Per entry type, the fields tether reads (field → accepted kinds, required): an imported file
is checked against them so a damaged one is refused at the line that is wrong, instead of being
stored and failing each time the session is opened."""


def entry_problem(entry: dict[str, Any]) -> str | None:
    """What is wrong with the type's own fields of ``entry`` (``ENTRY_FIELDS``), or ``None``."""
    kind = entry["type"]
    for name, (kinds, required) in ENTRY_FIELDS.get(kind, {}).items():
        if name not in entry:
            if required:
                return f"a {kind} entry needs {name!r}"
            continue
        value: object = entry[name]
        if not isinstance(value, kinds) or isinstance(value, bool):
            expected = " or ".join(dict.fromkeys(_json_kind(k) for k in kinds))
            return f"{kind}.{name} must be {expected}, not {_json_kind(type(value))}"
    return None


def _json_kind(kind: type) -> str:
    names = {str: "a string", int: "a number", float: "a number", bool: "true or false", list: "a list"}
    return "null" if kind is type(None) else names.get(kind, "an object")


_CHECK = json.JSONEncoder(ensure_ascii=False, check_circular=False)
"""``check_storable``'s encoder: the store's (``encode_entry``) but for ``NaN``, which an import
lets through to be stored ``null``."""

INT64 = range(-(2**63), 2**63)
"""What the store's integer columns hold: times (Unix ms) and the listing's token sums."""

_USAGE_COUNTS = ("input", "output", "cacheRead", "cacheWrite")
"""A reply's usage fields the store sums into its 64-bit columns (``count_entries``)."""


def check_storable(value: dict[str, Any], where: str) -> None:
    """Entries are stored as JSON text, which holds neither a value nested deeper than the
    encoder goes (~1,000 levels) nor a lone surrogate (``"\\ud800"`` is valid JSON, not valid
    UTF-8); and their time and a reply's usage go to the store's 64-bit columns. Such a line is
    refused here, by its number, rather than by the store without one, or cut (what a live
    session's append does: ``encode_entry``). Other integers are kept at any size (a model's
    arguments: JSON has no limit) and ``NaN`` and the infinities are stored ``null``, as a
    session stores them."""
    try:
        _CHECK.encode(value).encode()
    except RecursionError:
        raise ImportFormatError(f"{where}: cannot be stored (nested deeper than tether stores)") from None
    except UnicodeEncodeError:
        raise ImportFormatError(
            f"{where}: cannot be stored (a lone surrogate, which UTF-8 has no form for)"
        ) from None
    numbers: list[object] = [value.get("timestamp")]
    message = value.get("message")
    usage = cast(dict[str, Any], message).get("usage") if isinstance(message, dict) else None
    if isinstance(usage, dict):
        numbers += [cast(dict[str, Any], usage).get(key) for key in _USAGE_COUNTS]
    if any(isinstance(n, int) and n not in INT64 for n in numbers):
        raise ImportFormatError(f"{where}: holds a number beyond 64 bits, which tether cannot store")
