"""The problems of an invalid tool call, listed as the reference lists them.

A failed validation goes back to the model as text, one ``  - path: message`` line per problem.
The reference builds those lines from TypeBox's error walk (TypeBox 1.4, English messages), so a
model sees e.g. ``  - count: must be integer``. This module walks a schema the same way:

- keywords in TypeBox's order: ``type``; for an object ``required``, ``additionalProperties``
  (each extra key first fails the ``false`` schema: ``schema is false``), ``properties`` in schema
  order; for an array ``items``, ``minItems``, ``maxItems``; for a string ``minLength``,
  ``maxLength``, ``format``, ``pattern``; for a number the exclusive bounds, the bounds,
  ``multipleOf``; then ``const``, ``enum``, ``allOf``, ``anyOf`` (each member's problems, then the
  union's), ``oneOf`` (the members' problems only when none matched);
- at most 8 problems per walk (TypeBox's ``maxErrors``); each union member has its own walk;
- a path is the instance path joined with dots, ``root`` for the arguments themselves; a missing
  required property is named after the first one missing.

A schema with a keyword this module does not know gets ``None``: the caller lists jsonschema's
problems instead, each worded by ``jsonschema_problem``.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from tether.agent.validation._formats import FORMATS
from tether.agent.validation._js import is_number, js_number_text

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError as SchemaError

MAX_ERRORS = 8

_KNOWN = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "format",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "const",
        "enum",
        "allOf",
        "anyOf",
        "oneOf",
        # annotations
        "$schema",
        "$id",
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
    }
)


class _Unsupported(Exception):
    pass


class _Walk:
    """One error context: the problems found so far, up to ``MAX_ERRORS``."""

    def __init__(self) -> None:
        self.problems: list[tuple[list[str], str]] = []

    @property
    def full(self) -> bool:
        return len(self.problems) >= MAX_ERRORS

    def add(self, path: list[str], message: str) -> bool:
        if not self.full:
            self.problems.append((path, message))
        return False


def schema_problems(schema: dict[str, Any], value: Any) -> list[str] | None:
    """``path: message`` for each problem of ``value``, or ``None`` for an unsupported schema."""
    walk = _Walk()
    try:
        _schema(walk, schema, [], value)
    except _Unsupported:
        return None
    return [f"{'.'.join(path) or 'root'}: {message}" for path, message in walk.problems]


def _schema(walk: _Walk, schema: Any, path: list[str], value: Any) -> bool:
    if walk.full:
        return False
    if schema is True:
        return True
    if schema is False:
        return walk.add(path, "schema is false")
    if not isinstance(schema, dict):
        raise _Unsupported
    node = cast(dict[str, Any], schema)
    if any(key not in _KNOWN for key in node):
        raise _Unsupported
    ok = True
    if "type" in node:
        ok &= _type(walk, node["type"], path, value)
    if isinstance(value, dict):
        ok &= _object(walk, node, path, cast(dict[str, Any], value))
    if isinstance(value, list):
        ok &= _array(walk, node, path, cast(list[Any], value))
    if isinstance(value, str):
        ok &= _string(walk, node, path, value)
    if is_number(cast(object, value)):
        ok &= _number(walk, node, path, cast(float, value))
    if "const" in node and not _equal(value, node["const"]):
        ok = walk.add(path, "must be equal to constant")
    if "enum" in node and not any(_equal(value, option) for option in cast(list[Any], node["enum"])):
        ok = walk.add(path, "must be equal to one of the allowed values")
    if "allOf" in node:
        for member in cast(list[Any], node["allOf"]):
            ok &= _schema(walk, member, path, value)
    if "anyOf" in node:
        ok &= _any_of(walk, cast(list[Any], node["anyOf"]), path, value)
    if "oneOf" in node:
        ok &= _one_of(walk, cast(list[Any], node["oneOf"]), path, value)
    return ok


_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": is_number,
    "integer": lambda v: is_number(v) and float(cast(float, v)).is_integer(),
}


def _type(walk: _Walk, declared: Any, path: list[str], value: Any) -> bool:
    names = cast(list[str], declared) if isinstance(declared, list) else [cast(str, declared)]
    if any(name not in _TYPE_CHECKS for name in names):
        raise _Unsupported
    if any(_TYPE_CHECKS[name](value) for name in names):
        return True
    if isinstance(declared, list):
        return walk.add(path, f"must be either {' or '.join(names)}")
    return walk.add(path, f"must be {declared}")


def _object(walk: _Walk, node: dict[str, Any], path: list[str], value: dict[str, Any]) -> bool:
    ok = True
    properties = cast(dict[str, Any], node.get("properties", {}))
    if "required" in node:
        missing = [key for key in cast(list[str], node["required"]) if key not in value]
        if missing:
            ok = walk.add([*path, missing[0]], f"must have required properties {', '.join(missing)}")
    if "additionalProperties" in node:
        extra_ok = True
        for key, item in value.items():
            if key not in properties:
                extra_ok &= _schema(walk, node["additionalProperties"], [*path, key], item)
        if not extra_ok:
            ok = walk.add(path, "must not have additional properties")
    for key, sub in properties.items():
        if key in value:
            ok &= _schema(walk, sub, [*path, key], value[key])
    return ok


def _array(walk: _Walk, node: dict[str, Any], path: list[str], value: list[Any]) -> bool:
    ok = True
    items = node.get("items")
    if items is not None:
        if isinstance(items, list):
            raise _Unsupported
        for index, item in enumerate(value):
            ok &= _schema(walk, items, [*path, str(index)], item)
    if "minItems" in node and len(value) < node["minItems"]:
        ok = walk.add(path, f"must not have fewer than {_num(node['minItems'])} items")
    if "maxItems" in node and len(value) > node["maxItems"]:
        ok = walk.add(path, f"must not have more than {_num(node['maxItems'])} items")
    return ok


def _string(walk: _Walk, node: dict[str, Any], path: list[str], value: str) -> bool:
    ok = True
    length = len(value.encode("utf-16-le")) // 2  # JavaScript counts UTF-16 code units
    if "minLength" in node and length < node["minLength"]:
        ok = walk.add(path, f"must not have fewer than {_num(node['minLength'])} characters")
    if "maxLength" in node and length > node["maxLength"]:
        ok = walk.add(path, f"must not have more than {_num(node['maxLength'])} characters")
    check = FORMATS.get(node.get("format", ""))
    if check is not None and not check(value):
        ok = walk.add(path, f'must match format "{node["format"]}"')
    if "pattern" in node and re.search(node["pattern"], value) is None:
        ok = walk.add(path, f'must match pattern "{node["pattern"]}"')
    return ok


def _number(walk: _Walk, node: dict[str, Any], path: list[str], value: float) -> bool:
    ok = True
    bounds: tuple[tuple[str, str, Callable[[float, float], bool]], ...] = (
        ("exclusiveMinimum", ">", operator.gt),
        ("exclusiveMaximum", "<", operator.lt),
        ("minimum", ">=", operator.ge),
        ("maximum", "<=", operator.le),
    )
    for keyword, comparison, holds in bounds:
        if keyword in node and not holds(value, node[keyword]):
            ok = walk.add(path, f"must be {comparison} {_num(node[keyword])}")
    if "multipleOf" in node and not float(value / node["multipleOf"]).is_integer():
        ok = walk.add(path, f"must be multiple of {_num(node['multipleOf'])}")
    return ok


def _any_of(walk: _Walk, members: list[Any], path: list[str], value: Any) -> bool:
    failed: list[_Walk] = []
    for member in members:
        inner = _Walk()
        if _schema(inner, member, path, value):
            return True
        failed.append(inner)
    for inner in failed:
        for problem_path, message in inner.problems:
            walk.add(problem_path, message)
    return walk.add(path, "must match a schema in anyOf")


def _one_of(walk: _Walk, members: list[Any], path: list[str], value: Any) -> bool:
    failed: list[_Walk] = []
    for member in members:
        inner = _Walk()
        if not _schema(inner, member, path, value):
            failed.append(inner)
    passing = len(members) - len(failed)
    if passing == 1:
        return True
    if passing == 0:
        for inner in failed:
            for problem_path, message in inner.problems:
                walk.add(problem_path, message)
    return walk.add(path, "must match exactly one schema in oneOf")


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: booleans are not numbers, ``1 == 1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if is_number(a) and is_number(b):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        left, right = cast(list[Any], a), cast(list[Any], b)
        return len(left) == len(right) and all(_equal(x, y) for x, y in zip(left, right, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        left_map, right_map = cast(dict[str, Any], a), cast(dict[str, Any], b)
        return left_map.keys() == right_map.keys() and all(
            _equal(v, right_map[k]) for k, v in left_map.items()
        )
    return type(cast(object, a)) is type(cast(object, b)) and a == b


def jsonschema_problem(error: SchemaError) -> str:
    """One of jsonschema's errors as a problem line, for a schema the walk does not know."""
    path = ".".join(str(part) for part in error.absolute_path)
    instance: object = error.instance
    if error.validator == "required" and isinstance(instance, dict):
        required = cast(list[str], error.validator_value)
        instance = cast(dict[str, Any], instance)
        missing = next((name for name in required if name not in instance), None)
        if missing is not None:
            return f"{f'{path}.' if path else ''}{missing}: required property is missing"
    return f"{path or 'root'}: {error.message}"


def _num(value: Any) -> str:
    return js_number_text(value) if is_number(value) else str(value)
