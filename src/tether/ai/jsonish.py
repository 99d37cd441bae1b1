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


MAX_COUNT = 10**12
"""The largest token count believed: no reply uses a trillion tokens, and a session's sums of
counts below it stay within the stores' 64-bit integers."""


def as_int(value: object) -> int:
    """A token count: non-numbers (``null``, absent, a bool) read as 0, and so do counts no
    server means: negative, ``NaN`` (``int(nan)`` raised and lost the whole reply), infinite or
    above ``MAX_COUNT`` (priced and summed, they overflowed the session's stored totals)."""
    if type(value) is int:
        return value if 0 <= value <= MAX_COUNT else 0
    if isinstance(value, float) and 0 <= value <= MAX_COUNT:  # NaN fails the comparison
        return int(value)
    return 0


def as_index(value: object) -> int | None:
    """A position in a stream (a block or output index); a bool is none."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
