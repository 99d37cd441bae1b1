"""``WireError`` and the translation of pydantic's validation errors into it.

Pydantic reports every failed union alternative, with locations that mix real input keys with
its own labels (``str``, ``list[tagged-union[...]]``, discriminator tags). People reading a
transcript error want one sentence about *their* data: where (``messages[3].content[1].type``),
what was expected, what was found. So the translation follows pydantic's location through the
input itself, keeps the error that got deepest into it, and words it in JSON terms.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast, get_args

from tether.errors import TetherError
from tether.wire.messages import AssistantContent, AssistantMessageEvent

if TYPE_CHECKING:
    from pydantic_core import ValidationError


def _type_tags(union: object) -> frozenset[str]:
    """The ``type`` values of an ``Annotated`` union of ``TypedDict``s."""
    members: tuple[Any, ...] = get_args(get_args(union)[0])
    return frozenset(tag for member in members for tag in get_args(member.__annotations__["type"]))


CONTENT_TYPES = _type_tags(AssistantContent)
"""Every content block ``type`` (assistant content is a superset of user content)."""
EVENT_TYPES = _type_tags(AssistantMessageEvent)

_TYPE_PHRASES = {
    "string_type": "a string",
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "a boolean",
    "none_required": "null",
    "list_type": "an array",
    "dict_type": "an object",
    "model_attributes_type": "an object",
    "model_type": "an object",
}


class WireError(TetherError, ValueError):
    """A wire value failed to decode. ``path`` names where, ``reason`` says what was wrong."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


def wire_error(err: ValidationError, value: object, root: str) -> WireError:
    """Restate ``err`` (raised while validating ``value``) as one ``WireError`` under ``root``."""
    located = [(_input_path(value, d["loc"]), d) for d in err.errors(include_url=False)]
    steps, first = max(located, key=lambda item: len(item[0]))
    here = [d for s, d in located if s == steps]
    path = root + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in steps)
    kind, ctx = first["type"], first.get("ctx") or {}

    if kind in ("union_tag_invalid", "union_tag_not_found"):
        field = str(ctx.get("discriminator", "")).strip("'")
        if kind == "union_tag_not_found":
            return WireError(f"{path}.{field}", f"missing discriminator '{field}'")
        tag = cast(dict[str, object], _follow(value, steps)).get(field)
        if not isinstance(tag, str):
            return WireError(f"{path}.{field}", f"expected a string (got {_show(tag)})")
        return WireError(
            f"{path}.{field}", f"unknown {_tag_kind(field, str(ctx.get('expected_tags')))} {tag!r}"
        )
    if kind == "missing":
        return WireError(f"{path}.{first['loc'][-1]}", "required field is missing")
    if kind == "literal_error":
        return WireError(path, f"expected {ctx.get('expected')} (got {_show(first['input'])})")
    expected = [_TYPE_PHRASES.get(d["type"]) for d in here]
    if all(expected):
        return WireError(path, f"expected {_either(cast(list[str], expected))} (got {_show(first['input'])})")
    return WireError(path, f"{first['msg']} (got {_show(first['input'])})")


def _either(phrases: list[str]) -> str:
    """``a string or an array``; an integer-or-number alternative is just ``a number``."""
    unique = list(dict.fromkeys(phrases))
    if "an integer" in unique and "a number" in unique:
        unique.remove("an integer")
    return " or ".join(unique)


def _tag_kind(field: str, expected_tags: str) -> str:
    if field == "role":
        return "message role"
    tags = {t.strip().strip("'") for t in expected_tags.split(",")}
    if tags <= CONTENT_TYPES:
        return "content type"
    return "event type" if tags <= EVENT_TYPES else "type"


def _input_path(value: object, loc: Sequence[int | str]) -> list[int | str]:
    """Follow pydantic's ``loc`` through the input, skipping union labels and tags.

    A loc entry is a real step when the current value has that key (or index); otherwise it is
    a union member label (``str``, ``list[...]``) or a discriminator tag, which the input does
    not contain. A tag that is also a key (``{"type": "text", "text": ...}``) is recognised by
    comparing it with the value's own discriminator first.
    """
    current: object = value
    steps: list[int | str] = []
    tag_seen = False  # a value has at most one tag in the loc, right before its own keys
    for i, step in enumerate(loc):
        if isinstance(current, dict):
            obj = cast(dict[str, object], current)
            if not tag_seen and i + 1 < len(loc) and step in (obj.get("type"), obj.get("role")):
                tag_seen = True
            elif isinstance(step, str) and step in obj:
                current, tag_seen = obj[step], False
                steps.append(step)
        elif isinstance(current, list) and isinstance(step, int):
            items = cast(list[object], current)
            if 0 <= step < len(items):
                current, tag_seen = items[step], False
                steps.append(step)
    return steps


def _follow(value: object, steps: Sequence[int | str]) -> object:
    for step in steps:
        value = (
            cast(dict[str, object], value)[step] if isinstance(step, str) else cast(list[object], value)[step]
        )
    return value


def _show(value: object) -> str:
    """The offending value as JSON text, shortened: users wrote JSON, not Python."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


__all__ = ["CONTENT_TYPES", "EVENT_TYPES", "WireError", "wire_error"]
