"""Outgoing text hygiene.

A Python ``str`` can hold a lone UTF-16 surrogate (e.g. decoded from a JSON ``"\\ud83d"`` that a
model cut in half). It cannot be encoded as UTF-8, and providers reject the request, so every
text we send passes through ``strip_surrogates``. Valid pairs never appear in a ``str`` (they
decode to one code point), so every surrogate code point found is a lone one.
"""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")


def strip_surrogates(text: str) -> str:
    """``text`` without lone surrogates (unchanged, and not copied, when it has none)."""
    if text.isascii():
        return text
    return _SURROGATE.sub("", text)
