"""The entry tree: what a session stores, one append-only record per event.

Every entry has a store-assigned ``id`` (time-sortable, see ``ids``), the ``parentId`` of the
entry that was the leaf when it was appended, a ``type`` and a store-assigned ``timestamp``
(Unix ms). Branching never rewrites anything: it only moves the session's leaf, and the next
entry hangs off the new leaf.

Execution settings (model, thinking level, service tier, system prompt) are entries of their own
instead of fields on every user message; the context rebuild folds them (``context``). The
stored JSON of an entry is exactly one of these dicts, with camelCase keys like the wire types,
and like them they are *open records*: readers use ``.get`` for optional keys and keep entry
types they do not know, so a database or export written by a newer tether still opens.
"""

# No ``from __future__ import annotations`` here: with it, each field of these TypedDicts becomes
# a ForwardRef whose string is compiled at class creation, a third of this module's import time,
# which every stored ``tether -p`` pays. Every name below is defined before it is used.

import json
import logging
import re
from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

from tether.wire import AgentMessage, ModelInfo
from tether.wire.codec import dumpb_fast
from tether.wire.json_line import CUT_DEPTH, mended_json

EntryType = Literal[
    "message",
    "model_change",
    "thinking_level_change",
    "service_tier_change",
    "system_prompt_change",
    "compaction",
    "branch_summary",
    "label",
    "session_info",
    "custom",
]
ENTRY_TYPES: frozenset[str] = frozenset(EntryType.__args__)  # type: ignore[attr-defined]

SETTINGS_TYPES = frozenset(
    {"model_change", "thinking_level_change", "service_tier_change", "system_prompt_change"}
)
"""Entries the context rebuild folds into the current settings (newest wins)."""

ENTRY_FORMAT = 1
"""Version of the entry shapes; recorded per session and in exports."""

CUSTOM_TYPE = re.compile(r"^[A-Za-z0-9_-]+(?:[.:/][A-Za-z0-9_-]+)+$")
"""A custom entry's type must be namespaced (``myext.bookmark``, ``acme:todo``)."""


class MessageEntry(TypedDict):
    type: Literal["message"]
    id: str
    parentId: str | None
    timestamp: int
    message: AgentMessage


class ModelChangeEntry(TypedDict):
    type: Literal["model_change"]
    id: str
    parentId: str | None
    timestamp: int
    provider: str
    modelId: str
    model: NotRequired[ModelInfo]
    """Full descriptor at the time of the change, so a resume works without the catalog."""


class ThinkingLevelChangeEntry(TypedDict):
    type: Literal["thinking_level_change"]
    id: str
    parentId: str | None
    timestamp: int
    thinkingLevel: str


class ServiceTierChangeEntry(TypedDict):
    type: Literal["service_tier_change"]
    id: str
    parentId: str | None
    timestamp: int
    serviceTier: str | None


class SystemPromptChangeEntry(TypedDict):
    type: Literal["system_prompt_change"]
    id: str
    parentId: str | None
    timestamp: int
    systemPrompt: str


class CompactionEntry(TypedDict):
    type: Literal["compaction"]
    id: str
    parentId: str | None
    timestamp: int
    summary: str
    firstKeptEntryId: str | None
    """First entry of the path kept verbatim after the summary; ``None`` keeps nothing."""
    tokensBefore: int
    tokensAfter: NotRequired[int]
    details: NotRequired[Any]


class BranchSummaryEntry(TypedDict):
    type: Literal["branch_summary"]
    id: str
    parentId: str | None
    timestamp: int
    fromId: str
    """The leaf of the branch that was left and summarised."""
    summary: str
    details: NotRequired[Any]


class LabelEntry(TypedDict):
    type: Literal["label"]
    id: str
    parentId: str | None
    timestamp: int
    targetId: str
    label: str | None
    """``None`` removes the target's label."""


class SessionInfoEntry(TypedDict):
    type: Literal["session_info"]
    id: str
    parentId: str | None
    timestamp: int
    title: str


class CustomEntry(TypedDict):
    """Opaque host data (``customType`` namespaced); never sent to the model."""

    type: Literal["custom"]
    id: str
    parentId: str | None
    timestamp: int
    customType: str
    data: Any


Entry = (
    MessageEntry
    | ModelChangeEntry
    | ThinkingLevelChangeEntry
    | ServiceTierChangeEntry
    | SystemPromptChangeEntry
    | CompactionEntry
    | BranchSummaryEntry
    | LabelEntry
    | SessionInfoEntry
    | CustomEntry
)
"""A stored entry. Readers may also meet types written by a newer tether: see ``EntryDict``."""

EntryDict = dict[str, Any]
"""An entry as read back, whatever its type: the open-record view of ``Entry``."""


def encode_entry(entry: EntryDict, *, many: bool = False) -> bytes:
    """An entry's stored JSON: compact UTF-8, keys in insertion order.

    The standard library's encoder unless ``many``: a short run stores a handful of entries, and
    importing pydantic-core for them would cost more than all its encoding. ``many`` (a writer
    committing several sessions' appends at once: a service) takes pydantic-core's
    (``tether.wire.dumpb_fast``), which encodes a message entry in a quarter of the time and is
    imported once, by the writer's thread. The two write the same JSON but for how a float is
    spelled (``4e-05`` against ``0.00004``: the same number when read). Values JSON has no type
    for (a tool's ``details`` holding a set, bytes or a dataclass) are converted as ``dumpb``
    converts them.

    What JSON text cannot hold as it is goes the slow way (``mended_json``), instead of failing
    this append and every later one: ``NaN`` and the infinities (a model's arguments) are stored
    ``null``, as pi stores them (PostgreSQL refused them, and SQLite's were an export no import
    took); a lone surrogate (a file name that is not UTF-8, read through ``os.fsdecode``; an MCP
    server's or an extension's ``"\\ud800"``) is stored as U+FFFD, as a UTF-8 decoder reads bad
    bytes; an entry nested deeper than the encoder goes (~1,000 levels) is stored cut at
    ``CUT_DEPTH`` levels, told by one warning.
    """
    try:
        return dumpb_fast(entry) if many else _ENCODER.encode(entry).encode()
    except (ValueError, RecursionError):  # UnicodeEncodeError; NaN; pydantic-core's error
        text, cut = mended_json(entry, _ENCODER)
        if cut:
            logging.getLogger("tether.store").warning(
                "entry %s (%s) is nested deeper than tether can store: stored cut at %d levels",
                entry.get("id"),
                entry.get("type"),
                CUT_DEPTH,
            )
        return text.encode()


def _jsonable(value: object) -> object:
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value)


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_jsonable)
