"""Typed access to provider JSON, which is untyped and sometimes not what the docs promise.

Parsers read fields through these helpers instead of trusting shapes: a field of the wrong type
reads as absent, so odd provider output is skipped rather than crashing the stream.
"""

from __future__ import annotations

from typing import Any


# No ``cast`` in these two: it is a function call at run time, and they run several times for
# every streamed chunk; the ignore says what the cast would (a JSON object's keys are strings).
def as_dict(value: object) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None  # pyright: ignore[reportUnknownVariableType]


def as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []  # pyright: ignore[reportUnknownVariableType]


def as_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def as_int(value: object) -> int:
    """A token count: non-numbers (``null``, absent) read as 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    return 0


def as_index(value: object) -> int | None:
    """A position in a stream (a block or output index); a bool is none."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
