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
import math
import re
import sys
from typing import Any, cast

_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\]]', re.DOTALL)
"""A JSON string or a bracket; matching strings whole keeps brackets inside them out of the count."""
_ID_VALUE = re.compile(rb'\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)')


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
"""The only way a surrogate gets into a parsed line: bad UTF-8 bytes fail decoding instead."""
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""A surrogate left in a ``str`` once the parser has joined every pair: one that came alone."""


def replace_lone_surrogates(text: str) -> str:
    """``text`` with each lone surrogate as U+FFFD, as a UTF-8 decoder reads bytes that are not
    UTF-8 (``text`` itself when it has none). A ``str`` holds one when it came from a JSON
    ``"\\ud800"`` escape or from a file name that is not UTF-8 (``os.fsdecode``); UTF-8 has no
    form for it, so what is stored or sent to a peer takes the replacement character instead.
    The two halves of a pair side by side (an emoji a stream cut between two events, its deltas
    joined again) are first joined into their character (a UTF-16 round trip), so a reply
    shows, prints and stores the emoji, not two U+FFFD. (Text sent to a model drops lone
    surrogates instead: ``tether.ai.sanitize``.)"""
    if text.isascii() or _LONE_SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


CUT_DEPTH = 200
"""How many levels of a value too deep for the encoder are kept (``mended_json``): past what a
parser of another language takes by default (jiter: 254, pydantic-core's encoder: 254)."""
CUT_MARK = f"[cut: nested deeper than {CUT_DEPTH} levels]"
"""What stands in for each container below ``CUT_DEPTH`` in a value ``mended_json`` cut."""


def finite(value: Any) -> Any:
    """``value`` with ``NaN`` and the infinities as ``null``, as ``JSON.stringify`` (pi) writes
    them: they are no JSON. A model may write ``NaN`` in a tool call's arguments (the stream's
    parser reads it), and Python's encoder wrote it back as ``NaN``: each later request of the
    conversation was refused by its provider (a 400), PostgreSQL refused the entry (and the
    session stored nothing more), and an RPC client's ``JSON.parse`` refused the frame. A copy
    of the containers on the way down; anything else is returned as it is."""
    return _mended(value, None)


def _mended(value: Any, depth: int | None) -> Any:
    """``finite(value)``, each container ``depth`` levels down (``None``: none) as ``CUT_MARK``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict | list | tuple):
        if depth == 0:
            return CUT_MARK
        below = None if depth is None else depth - 1
        if isinstance(value, dict):
            return {key: _mended(item, below) for key, item in cast("dict[Any, Any]", value).items()}
        return [_mended(item, below) for item in cast("list[Any]", value)]
    return value


def mended_json(value: object, encoder: json.JSONEncoder) -> tuple[str, bool]:
    """The JSON text of ``value`` by ``encoder`` (one with ``allow_nan=False``), whatever it holds,
    and whether it was cut: ``NaN`` and the infinities as ``null`` (``finite``), each lone
    surrogate as U+FFFD (``replace_lone_surrogates``) and, for a value nested deeper than the
    encoder goes (~1,000 levels: its ``RecursionError``), every container past ``CUT_DEPTH``
    levels as ``CUT_MARK``. The slow path of the writers of values from anywhere (a model's
    arguments, a tool's details, an extension's data): failing, they failed the session's
    append and every later one, or the event's frame. ``ValueError`` still for what the
    encoder's ``default`` cannot convert."""
    try:
        try:
            text = encoder.encode(value)
        except ValueError:  # NaN or an infinity (allow_nan=False); the same again for another reason
            text = encoder.encode(_mended(value, None))
        cut = False
    except RecursionError:
        text, cut = encoder.encode(_mended(value, CUT_DEPTH)), True
    return replace_lone_surrogates(text), cut


def load_line(line: bytes | str) -> object:
    """The JSON value of ``line`` (a line, or a whole file's text); ``ValueError`` for anything
    that is not JSON (``json.JSONDecodeError``, with its position, for a syntax error)."""
    return _loads(line)


def load_message(line: bytes | str) -> object:
    """A protocol message's JSON value (RPC, ACP lines), as ``load_line`` reads it, and fit to be
    answered: whatever a peer sends comes back to it (an id is echoed, a name stored and shown),
    and a frame holding ``Infinity`` or a lone surrogate is no JSON a peer reads, nor UTF-8 a
    store keeps. So ``NaN``, ``Infinity`` (not JSON, which Python's parser takes) and numbers past
    a float's range are refused (``ValueError``), and a lone surrogate escape (JSON allows it)
    becomes U+FFFD, as a UTF-8 decoder reads bytes that are not UTF-8."""
    value = _loads(line, parse_constant=_not_json, parse_float=_finite)
    if _SURROGATE_ESCAPE.search(line.encode() if isinstance(line, str) else line):
        return _without_lone_surrogates(value)
    return value


def _loads(line: bytes | str, **hooks: Any) -> object:
    try:
        return json.loads(line, **hooks)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # Python's own limit on digits: its message gives Python advice
        if "digits" not in str(exc):
            raise
        raise ValueError(f"a number of more than {sys.get_int_max_str_digits()} digits") from None


def _not_json(constant: str) -> object:
    raise ValueError(f"{constant} is not JSON")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"a number out of range: {text[:40]}")
    return number


def _without_lone_surrogates(value: object) -> object:
    if isinstance(value, str):
        return replace_lone_surrogates(value)
    if isinstance(value, list):
        return [_without_lone_surrogates(item) for item in cast(list[object], value)]
    if isinstance(value, dict):
        fields = cast(dict[str, object], value)
        return {replace_lone_surrogates(k): _without_lone_surrogates(v) for k, v in fields.items()}
    return value


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
            if isinstance(parsed, float) and not math.isfinite(parsed):
                return None  # echoed, it would be ``Infinity``: no JSON
            if isinstance(parsed, str):
                return replace_lone_surrogates(parsed)
            return parsed if isinstance(parsed, int | float) else None
    return None
