"""Which label each entry carries, folded once from a session's label entries.

A label entry names its target and a label, or ``None`` to take the label away; the newest entry
naming a target wins. The session's ``labels()``, the tree navigator (which also shows when each
label was set) and the HTML export all read labels this way, so the fold lives here once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple


class Label(NamedTuple):
    text: str
    set_at: int
    """When the label entry was written (Unix ms; 0 when the entry has no timestamp)."""


def fold_labels(entries: Iterable[Mapping[str, Any]]) -> dict[str, Label]:
    """Entry id → its current label, from ``entries`` in append order (other types are skipped)."""
    labels: dict[str, Label] = {}
    for entry in entries:
        if entry.get("type") == "label" and isinstance(target := entry.get("targetId"), str):
            text = entry.get("label")
            if isinstance(text, str):
                labels[target] = Label(text, int(entry.get("timestamp") or 0))
            else:
                labels.pop(target, None)
    return labels
