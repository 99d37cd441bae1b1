"""Primitive coercion of tool arguments against a JSON Schema, as the reference does it.

Models often send ``"5"`` for a number or ``"true"`` for a boolean. Before validating, the
reference (pi-ai's ``validateToolArguments``) converts such primitives towards the type the schema
asks for, using JavaScript's rules; tether reproduces those rules so a tool call that works
against pi works here too:

- number / integer: ``Number(text)`` for non-blank strings (trims, exponents, ``0x``/``0o``/``0b``),
  booleans to 1/0, ``null`` to 0; integers only when the result is integral;
- boolean: ``"true"``/``"false"`` and 1/0, ``null`` to false;
- string: numbers and booleans to their JavaScript text, ``null`` to ``""``;
- null: ``""``, 0 and false to ``null``;
- objects, arrays, ``allOf``, ``anyOf`` and ``oneOf`` are walked; a union takes the first member
  whose coerced value then validates.

Values are never mutated: a coerced container is a new one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

from tether.agent.validation._js import is_number, js_number, js_number_to_python, js_string

_UNCHANGED: Any = object()
"""Sentinel for "no coercion applies". Equality cannot tell: in Python ``True == 1``."""

SubschemaCheck = Callable[[Any, dict[str, Any]], bool]
"""Whether a value is valid against a (sub)schema; unions need it to pick their member."""


def _matches_type(value: object, schema_type: str) -> bool:
    match schema_type:
        case "number":
            return is_number(value)
        case "integer":
            return is_number(value) and float(cast(float, value)).is_integer()
        case "boolean":
            return isinstance(value, bool)
        case "string":
            return isinstance(value, str)
        case "null":
            return value is None
        case "array":
            return isinstance(value, list)
        case "object":
            return isinstance(value, dict)
        case _:
            return False


def _coerce_primitive(value: Any, schema_type: str) -> Any:
    """The coerced value, or ``_UNCHANGED`` when this type does not coerce ``value``."""
    match schema_type:
        case "number" | "integer":
            if value is None:
                return 0
            if isinstance(value, bool):
                return 1 if value else 0
            if isinstance(value, str) and value.strip() != "":
                parsed = js_number(value)
                if (
                    parsed is not None
                    and math.isfinite(parsed)
                    and (schema_type == "number" or parsed.is_integer())
                ):
                    return js_number_to_python(parsed)
            return _UNCHANGED
        case "boolean":
            if value is None:
                return False
            if value == "true":
                return True
            if value == "false":
                return False
            if is_number(value) and value in (0, 1):
                return value == 1
            return _UNCHANGED
        case "string":
            if value is None:
                return ""
            if isinstance(value, bool) or is_number(value):
                return js_string(value)
            return _UNCHANGED
        case "null":
            if value == "" or (is_number(value) and value == 0) or value is False:
                return None
            return _UNCHANGED
        case _:
            return _UNCHANGED


def _schema_types(schema: dict[str, Any]) -> list[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list):
        return [t for t in cast(list[object], declared) if isinstance(t, str)]
    return []


def coerce(value: Any, schema: Any, check: SubschemaCheck) -> Any:
    """``value`` with its primitives coerced towards ``schema`` (see the module docstring)."""
    if not isinstance(schema, dict):
        return value
    schema = cast(dict[str, Any], schema)
    all_of = schema.get("allOf")
    if isinstance(all_of, list):
        for nested in cast(list[Any], all_of):
            value = coerce(value, nested, check)
    for key in ("anyOf", "oneOf"):
        members = schema.get(key)
        if isinstance(members, list):
            value = _coerce_union(value, cast(list[Any], members), check)

    types = _schema_types(schema)
    matches_union_member = len(types) > 1 and any(_matches_type(value, t) for t in types)
    if types and not matches_union_member:
        for schema_type in types:
            candidate = _coerce_primitive(value, schema_type)
            if candidate is not _UNCHANGED:
                value = candidate
                break

    if "object" in types and isinstance(value, dict):
        value = _coerce_object(cast(dict[str, Any], value), schema, check)
    if "array" in types and isinstance(value, list):
        value = _coerce_array(cast(list[Any], value), schema, check)
    return value


def _coerce_union(value: Any, members: list[Any], check: SubschemaCheck) -> Any:
    for member in members:
        if not isinstance(member, dict):
            continue
        candidate = coerce(value, member, check)
        if check(candidate, cast(dict[str, Any], member)):
            return candidate
    return value


def _coerce_object(value: dict[str, Any], schema: dict[str, Any], check: SubschemaCheck) -> dict[str, Any]:
    properties = schema.get("properties")
    defined: dict[str, Any] = cast(dict[str, Any], properties) if isinstance(properties, dict) else {}
    additional = schema.get("additionalProperties")
    result = dict(value)
    for key, item in value.items():
        if key in defined:
            result[key] = coerce(item, defined[key], check)
        elif isinstance(additional, dict):
            result[key] = coerce(item, additional, check)
    return result


def _coerce_array(value: list[Any], schema: dict[str, Any], check: SubschemaCheck) -> list[Any]:
    items = schema.get("items")
    if isinstance(items, list):
        positional = cast(list[Any], items)
        return [
            coerce(item, positional[i], check) if i < len(positional) else item
            for i, item in enumerate(value)
        ]
    if isinstance(items, dict):
        return [coerce(item, items, check) for item in value]
    return value


def has_union(schema: object) -> bool:
    """Whether ``anyOf``/``oneOf`` appears anywhere in ``schema``: the only place where coercion
    may change a value that already matches its schema (a union picks its first fitting member)."""
    if isinstance(schema, dict):
        node = cast(dict[str, Any], schema)
        return "anyOf" in node or "oneOf" in node or any(has_union(child) for child in node.values())
    if isinstance(schema, list):
        return any(has_union(child) for child in cast(list[Any], schema))
    return False
