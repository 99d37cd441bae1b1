"""Appending deltas to a block's text in amortized O(1).

``block["text"] += delta`` is quadratic in CPython: the dict keeps a reference to the old string,
so every append copies the whole text (40,000 deltas: ~2 s; 160,000: ~50 s). Taking the string
out of the dict first leaves it with a single reference, which lets CPython resize it in place.
The key keeps its position, so the block's JSON shape is unchanged.
"""

from __future__ import annotations

from typing import Any


def append_text(block: Any, key: str, delta: str) -> None:
    """``block[key] += delta`` without copying ``block[key]``."""
    text: str = block[key]
    block[key] = ""
    text += delta
    block[key] = text
