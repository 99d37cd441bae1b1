"""A deep copy of a JSON value: what a caller hands over and may change afterwards (a tool call's
arguments, a hook's parts, a live model a session records) is copied once, so what tether keeps
does not change under it, and a writer thread never encodes a dict the caller is changing."""

from __future__ import annotations

from typing import Any


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON value (dicts and lists), much cheaper than ``copy.deepcopy``."""
    # Every tool call's arguments come through: a container is copied whole (in C) and only its
    # members that are containers themselves cost a call. No ``cast``: in 3.11 it is a call too.
    if isinstance(value, dict):
        members: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType] (a JSON object)
        copy = members.copy()
        for key, item in members.items():
            if isinstance(item, (dict, list)):
                copy[key] = copy_json(item)
        return copy
    if isinstance(value, list):
        items: list[Any] = value  # pyright: ignore[reportUnknownVariableType] (a JSON array)
        copied = items.copy()
        for index, item in enumerate(items):
            if isinstance(item, (dict, list)):
                copied[index] = copy_json(item)
        return copied
    return value
