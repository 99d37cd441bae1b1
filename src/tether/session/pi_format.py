"""pi's session entries (``docs/session-format.md`` of pi 1.6): tether entries to pi's and back.

pi keeps a session as JSONL: a ``session`` header, then entries that form a tree through
``id``/``parentId``, with ISO 8601 entry timestamps; the leaf is the last entry. tether's entries
are the same tree with a few differences this module bridges, so that ``get_entries``/``get_tree``
answer in pi's shapes and a session moves between the two without losing anything either side
puts in the model's context:

- timestamps: Unix ms in tether, ISO strings in pi;
- ids: tether's are time-sortable (the store orders by them), pi's are short random hex. An
  imported entry gets a tether id and keeps pi's as ``piId``; export writes ``piId`` where there
  is one, so pi → tether → pi keeps pi's ids (a branch summary's ``fromId`` is model context);
- names: ``session_info.name`` is tether's ``title``; a retain-none compaction points
  ``firstKeptEntryId`` at itself in pi and is ``None`` in tether;
- a ``custom_message`` entry is tether's ``custom``-role message (marked ``piType`` so it goes
  back as one; other ``custom`` messages stay ``message`` entries, as v3 allows);
- entry types and message roles only one side has travel as the other side's opaque ``custom``
  entries (``pi.<type>`` / ``tether.<type>``; a tether-only message role as a ``custom_message``
  that shows its text to pi's model) and come back as they were. So pi's ``system`` messages and
  ``usage`` entries are kept by tether but do not shape tether's context; its ``context_edit``
  entries (kept as ``pi.context_edit``) do, as in pi (``context``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from tether.session.events import message_text
from tether.session.labels import fold_labels
from tether.store.entries import EntryDict

PI_SESSION_VERSION = 3
"""The newest pi session format (v1 linear, v2 tree, v3 ``hookMessage`` renamed ``custom``)."""

PI_ROLES = frozenset(
    {"user", "assistant", "toolResult", "bashExecution", "custom", "branchSummary", "compactionSummary"}
)
"""Message roles both sides store as ``message`` entries."""

PI_TYPES = frozenset(
    {
        "message",
        "model_change",
        "thinking_level_change",
        "compaction",
        "branch_summary",
        "label",
        "session_info",
        "custom",
    }
)
"""Entry types both sides have (``custom_message`` is handled on its own)."""

_BASE = ("type", "id", "parentId", "timestamp")
_TETHER_PREFIX = "tether."
_PI_PREFIX = "pi."


_LATEST_MS = 8_640_000_000_000_000
"""The largest JavaScript ``Date`` (±100 million days), in ms."""


def iso_timestamp(ms: int | float) -> str:
    """``1733234400000`` -> ``2024-12-03T14:00:00.000Z`` (JavaScript's ``toISOString``)."""
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def ms_timestamp(iso: object) -> int:
    """An ISO 8601 entry timestamp as Unix ms (``0`` when missing or unreadable: a number beyond
    JavaScript's dates, infinity and NaN too)."""
    if isinstance(iso, int | float):
        return int(iso) if abs(iso) <= _LATEST_MS else 0  # NaN fails the comparison
    if not isinstance(iso, str):
        return 0
    try:
        moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return round(moment.timestamp() * 1000)


# -- tether -> pi ---------------------------------------------------------------------------------


def to_pi_entry(entry: EntryDict, pi_ids: dict[str, str] | None = None) -> dict[str, Any]:
    """One tether entry in pi's shape. ``pi_ids`` maps tether ids to the pi ids to write."""
    ids = pi_ids or {}

    def pid(value: object) -> str | None:
        return ids.get(value, value) if isinstance(value, str) else None

    kind: str = entry["type"]
    rest = {k: v for k, v in entry.items() if k not in _BASE and k not in ("piId", "piType")}
    out: dict[str, Any] = {
        "type": kind,
        "id": pid(entry["id"]),
        "parentId": pid(entry.get("parentId")),
        "timestamp": iso_timestamp(entry["timestamp"]),
    }
    if kind == "message":
        message = cast(dict[str, Any], entry["message"])
        role = message.get("role")
        if role == "custom" and entry.get("piType") == "custom_message":
            out["type"] = "custom_message"
            out.update({k: v for k, v in message.items() if k not in ("role", "timestamp")})
            return out
        if role == "hookMessage":
            out["message"] = {**message, "role": "custom"}
            return out
        if role not in PI_ROLES:
            out["type"] = "custom_message"
            out.update(
                customType=f"{_TETHER_PREFIX}{role}",
                content=message_text(cast(Any, message)),
                display=True,
                details={"message": message},
            )
            return out
        out["message"] = message
        return out
    if kind == "custom" and str(entry.get("customType", "")).startswith(_PI_PREFIX):
        # a pi entry tether kept as it was: give it back its own type
        data = cast(dict[str, Any], entry.get("data") or {})
        out["type"] = str(entry["customType"])[len(_PI_PREFIX) :]
        out.update(_remap(data, pid))
        return out
    if kind not in PI_TYPES:
        out["type"] = "custom"
        out.update(customType=f"{_TETHER_PREFIX}{kind}", data=rest)
        return out
    if kind == "session_info":
        rest = {("name" if k == "title" else k): v for k, v in rest.items()}
    out.update(rest)
    for key in ("firstKeptEntryId", "fromId", "targetId"):
        if key in out:
            out[key] = pid(out[key])
    if kind == "compaction" and out.get("firstKeptEntryId") is None:
        out["firstKeptEntryId"] = out["id"]
    return out


def _remap(data: dict[str, Any], pid: Any) -> dict[str, Any]:
    out = dict(data)
    if isinstance(out.get("targetId"), str):
        out["targetId"] = pid(out["targetId"])
    return out


def pi_ids_of(entries: list[EntryDict]) -> dict[str, str]:
    """tether id -> pi id, for entries imported from pi (the others keep their tether id)."""
    return {e["id"]: e["piId"] for e in entries if isinstance(e.get("piId"), str)}


def pi_tree(entries: list[EntryDict]) -> list[dict[str, Any]]:
    """``get_tree``'s answer: ``{entry, children, label?, labelTimestamp?}`` nodes, roots first
    (an entry whose parent is missing is a root too), children in append order."""
    ids = pi_ids_of(entries)
    labels = fold_labels(entries)
    nodes: dict[str, dict[str, Any]] = {}
    roots: list[dict[str, Any]] = []
    for entry in entries:
        node: dict[str, Any] = {"entry": to_pi_entry(entry, ids), "children": []}
        label = labels.get(entry["id"])
        if label is not None:
            node["label"] = label.text
            node["labelTimestamp"] = iso_timestamp(label.set_at)
        nodes[entry["id"]] = node
        parent = nodes.get(entry.get("parentId") or "")
        (parent["children"] if parent is not None else roots).append(node)
    return roots


# -- pi -> tether ---------------------------------------------------------------------------------


def migrate_pi_entries(header: dict[str, Any], entries: list[dict[str, Any]]) -> None:
    """Bring v1/v2 entries to v3 in place, as pi does on load (``migrate_pi_entry`` for each)."""
    version = pi_version(header)
    for index, entry in enumerate(entries):
        migrate_pi_entry(version, index, entry)
    header["version"] = PI_SESSION_VERSION


def pi_version(header: dict[str, Any]) -> int:
    """The header's format version (pi's v1 files have none)."""
    version = header.get("version")
    return version if isinstance(version, int) and not isinstance(version, bool) and version else 1


def migrate_pi_entry(version: int, index: int, entry: dict[str, Any]) -> None:
    """Bring the ``index``-th (from 0) entry of a version ``version`` file to v3 in place, as pi
    does on load: v1 entries get ids and a linear ``parentId`` chain (and ``firstKeptEntryIndex``
    becomes ``firstKeptEntryId``); v2's ``hookMessage`` role becomes ``custom``. One entry at a
    time, so that a large file is read as it streams in."""
    if version < 2:
        entry["id"] = f"{index + 1:08x}"
        entry["parentId"] = f"{index:08x}" if index else None
        at = entry.pop("firstKeptEntryIndex", None) if entry.get("type") == "compaction" else None
        # pi's index counts the header line as entry 0, and pi converts it in the same pass
        # that gives out the ids: an index past the compaction finds no id yet (keeps none)
        if isinstance(at, int) and not isinstance(at, bool) and 1 <= at <= index + 1:
            entry["firstKeptEntryId"] = f"{at:08x}"  # the id entry ``at - 1`` got above
    if version < 3:
        message = entry.get("message") if entry.get("type") == "message" else None
        if isinstance(message, dict) and cast(dict[str, Any], message).get("role") == "hookMessage":
            message["role"] = "custom"


def from_pi_entry(entry: dict[str, Any], new_id: str, tether_ids: dict[str, str]) -> EntryDict:
    """One (v3) pi entry as a tether entry with id ``new_id``; ``tether_ids`` maps the pi ids
    seen so far to their tether ids (a reference to an unknown id is kept as it is)."""

    def tid(value: object) -> str | None:
        return tether_ids.get(value, value) if isinstance(value, str) else None

    kind = str(entry.get("type"))
    pi_id = entry.get("id")
    rest = {k: v for k, v in entry.items() if k not in _BASE}
    out: EntryDict = {
        "type": kind,
        "id": new_id,
        "parentId": tid(entry.get("parentId")),
        "timestamp": ms_timestamp(entry.get("timestamp")),
    }
    if isinstance(pi_id, str):
        out["piId"] = pi_id
    if kind == "message":
        message = cast(dict[str, Any], rest.get("message") or {})
        if message.get("role") in PI_ROLES:
            out["message"] = message
            return out
        return _kept(out, kind, rest, tid)
    if kind == "custom_message":
        custom_type = str(rest.get("customType", ""))
        details = rest.get("details")
        inner = cast(dict[str, Any], details).get("message") if isinstance(details, dict) else None
        if custom_type.startswith(_TETHER_PREFIX) and isinstance(inner, dict):
            out.update(type="message", message=inner)  # a tether-only role, back as it was
            return out
        message: dict[str, Any] = {"role": "custom", **rest, "timestamp": out["timestamp"]}
        message.setdefault("content", [])
        message.setdefault("display", False)
        out.update(type="message", piType="custom_message", message=message)
        return out
    if kind == "custom" and str(rest.get("customType", "")).startswith(_TETHER_PREFIX):
        data = cast(dict[str, Any], rest.get("data") or {})
        out["type"] = str(rest["customType"])[len(_TETHER_PREFIX) :]
        out.update(data)
        return out
    if kind not in PI_TYPES:
        return _kept(out, kind, rest, tid)
    if kind == "session_info":
        rest = {("title" if k == "name" else k): v for k, v in rest.items()}
        rest.setdefault("title", "")
    out.update(rest)
    for key in ("firstKeptEntryId", "fromId", "targetId"):
        if key in out:
            out[key] = tid(out[key])
    if kind == "compaction" and entry.get("firstKeptEntryId") in (None, pi_id):
        out["firstKeptEntryId"] = None  # pi's retain-none compaction points at itself
    if kind == "label":
        out.setdefault("label", None)
    return out


def _kept(out: EntryDict, kind: str, rest: dict[str, Any], tid: Any) -> EntryDict:
    """An entry tether has no use for, kept as an opaque ``custom`` entry for the way back."""
    data = dict(rest)
    if kind != "message" and isinstance(data.get("targetId"), str):
        data["targetId"] = tid(data["targetId"])
    out.update(type="custom", customType=f"{_PI_PREFIX}{kind}", data=data)
    return out
