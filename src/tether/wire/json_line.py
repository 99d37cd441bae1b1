"""Reading one JSON value from a peer or a file that may hold anything, including JSON nested 100k deep.

Python's ``json`` parser recurses, so deeply nested input raises ``RecursionError`` rather than a
``ValueError``; a server that only catches the latter dies, or answers nothing, and a command
reading a damaged file prints a traceback. ``load_line`` turns every failure into ``ValueError``
with a short reason: it reads protocol lines (RPC, ACP), the lines of session files and whole
small files (settings-like JSON files of the user and of projects). ``top_level_id`` recovers a
request's ``id`` from a line that could not be parsed, so the error response can still carry it.
"""

from __future__ import annotations

import json
import re

_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\]]', re.DOTALL)
"""A JSON string or a bracket; matching strings whole keeps brackets inside them out of the count."""
_ID_VALUE = re.compile(rb'\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)')


def load_line(line: bytes | str) -> object:
    """The JSON value of ``line`` (a line, or a whole file's text); ``ValueError`` for anything
    that is not JSON (``json.JSONDecodeError``, with its position, for a syntax error)."""
    try:
        return json.loads(line)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None


def top_level_id(line: bytes) -> str | int | float | None:
    """The string or number ``"id"`` of the top-level object of ``line``, even when the rest of
    the line is not valid JSON; ``None`` when there is none. Linear in the line's length."""
    if not line.lstrip().startswith(b"{"):
        return None
    depth = 0
    for match in _TOKEN.finditer(line):
        token = match.group()
        if token in (b"{", b"["):
            depth += 1
        elif token in (b"}", b"]"):
            depth -= 1
        elif depth == 1 and token == b'"id"':
            value = _ID_VALUE.match(line, match.end())
            if value is None:
                return None
            try:
                parsed: object = json.loads(value.group(1))
            except ValueError:
                return None
            return parsed if isinstance(parsed, str | int | float) else None
    return None
