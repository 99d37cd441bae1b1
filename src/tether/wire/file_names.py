"""File names as text: what the tools show the model, what a session stores, what a protocol sends.

A POSIX name is bytes, and one that is not UTF-8 (``b"\\xff.txt"``, ``os.mkdir(b"x\\xff")``)
reaches Python as lone surrogates (``os.fsdecode``), which neither a request (whose builder strips
them: the model saw a name that does not exist) nor JSON output nor the store (a
``UnicodeEncodeError``) can take. ``path_text`` writes its odd bytes ``\\xff`` instead: the same
name always gives the same text, so a directory's sessions are found again and the model can
name the file it was shown; ``path_from_text`` takes that text back to the name.

The text is not unique: a name holding a real backslash, ``\\xff.txt`` typed on a keyboard,
reads the same. So ``path_from_text`` is the second reading, tried only when the text, taken as
it is, names nothing (``tether.tools.workspace``).
"""

from __future__ import annotations

import os
import re

_BYTE = re.compile(r"\\x([89a-f][0-9a-f])")
"""What ``backslashreplace`` writes for a byte that is not UTF-8: always 0x80 or above."""


def path_text(path: str | os.PathLike[str]) -> str:
    """``path`` as text, each byte that is not UTF-8 written ``\\xff`` (``path`` itself when it
    has none)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def path_from_text(text: str) -> str:
    """The name ``path_text`` wrote as ``text``: each ``\\xff`` back to its byte (``text``
    itself when it has none)."""
    if "\\x" not in text:
        return text
    parts = _BYTE.split(text)  # literal text, then a byte's hex digits, then text, ...
    raw = b"".join(bytes.fromhex(p) if i % 2 else os.fsencode(p) for i, p in enumerate(parts))
    return os.fsdecode(raw)
