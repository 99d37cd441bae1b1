"""A compiled validity check for the JSON Schema that tool parameters use in practice.

Validating every tool call with ``jsonschema`` costs tens of microseconds, most of it in the
library's generic machinery. Tool schemas almost always use a small subset (types, properties,
required, enums, bounds, unions), so ``compile_check`` turns such a schema into nested closures
that answer "valid or not" in a few microseconds. A schema using anything else gets ``None`` and
the caller falls back to ``jsonschema``, which also produces the error messages; the two agree on
every schema of the subset (see the property test).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, cast

from tether.wire.json_copy import copy_json

Check = Callable[[Any], bool]
CheckCopy = Callable[[Any], Any]
"""A valid value's copy (as ``copy_json`` copies it), else what the caller asked for."""

UNSUPPORTED = frozenset(
    {
        "$ref",
        "$dynamicRef",
        "$recursiveRef",
        "additionalItems",
        "contains",
        "dependencies",
        "dependentRequired",
        "dependentSchemas",
        "if",
        "then",
        "else",
        "format",
        "maxContains",
        "minContains",
        "multipleOf",
        "patternProperties",
        "prefixItems",
        "propertyNames",
        "unevaluatedItems",
        "unevaluatedProperties",
        "uniqueItems",
    }
)
"""Validating keywords this module does not implement: a schema using one is not compiled."""


class _Unsupported(Exception):
    pass


def compile_check(schema: object) -> Check | None:
    """A fast ``is_valid`` for ``schema`` (draft 2020-12 semantics), or ``None`` if unsupported."""
    try:
        return _compile(schema)
    except _Unsupported:
        return None


def compile_check_copy(schema: object, invalid: Callable[[Any], Any]) -> CheckCopy | None:
    """``copy_json(value)`` for a value ``schema`` accepts, else ``invalid(value)``, in one call;
    ``None`` if the schema is unsupported.

    Every tool call's arguments are checked, then copied so the tool cannot change what the
    transcript holds. The usual parameters (an object of named members, nothing else) get one walk
    that copies while it checks, its scalar members tested inline (no call per member); any other
    schema gets the check, then the copy. Same verdict, same copy (see the property test).
    """
    check = compile_check(schema)
    if check is None:
        return None
    if isinstance(schema, dict):
        node = cast(dict[str, Any], schema)
        if node.get("type") == "object" and _PLAIN_OBJECT.issuperset(node):
            fused = _object_check_copy(node, invalid)
            if fused is not None:
                return fused

    def check_then_copy(value: Any) -> Any:
        return copy_json(value) if check(value) else invalid(value)

    return check_then_copy


_PLAIN_OBJECT = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "title",
        "description",
        "default",
        "examples",
        "$comment",
        "$schema",
        "$id",
    }
)
"""The keywords of an object schema that ``_object_check_copy`` walks in one pass: the object
keywords and annotations (which never change a verdict)."""


def _object_check_copy(node: dict[str, Any], invalid: Callable[[Any], Any]) -> CheckCopy | None:
    """The one walk for a plain object schema (``None`` if its ``required`` is not names): what
    ``_add_objects``' check checks (an object, the required names, each member valid against its
    property or ``additionalProperties``) while copying."""
    required: object = node.get("required", [])
    if not isinstance(required, list) or not all(isinstance(n, str) for n in cast(list[Any], required)):
        return None
    wanted = tuple(dict.fromkeys(cast(list[str], required)))
    properties = cast(dict[str, Any], node.get("properties", {}))
    checks = {name: _compile(sub) for name, sub in properties.items()}
    scalars = {name: _SCALARS[check] for name, check in checks.items() if check in _SCALARS}
    rest = _compile(node.get("additionalProperties", True))

    def check_copy(value: Any) -> Any:
        if not isinstance(value, dict):
            return invalid(value)
        members: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType] (a JSON object)
        for name in wanted:
            if name not in members:
                return invalid(value)
        copy = members.copy()
        for key, item in members.items():
            scalar = scalars.get(key)
            if scalar is not None:
                if not isinstance(item, scalar):
                    return invalid(value)
            elif not checks.get(key, rest)(item):
                return invalid(value)
            elif isinstance(item, (dict, list)):
                copy[key] = copy_json(item)
        return copy

    if len(scalars) == len(checks) and properties.keys() >= set(wanted):
        return _compile_scalar_members(scalars, check_copy)
    return check_copy


_MISSING = object()
"""What a member the arguments lack reads as in ``_compile_scalar_members``' code (no type has it)."""


def _compile_scalar_members(scalars: dict[str, type], walk: CheckCopy) -> CheckCopy:
    """``walk`` behind a test of the usual arguments, as Python code made for this schema (once
    per tool): an object with exactly the schema's members, each a string, boolean or null
    (``scalars``), is valid and its copy is a shallow one; anything else is walked.

    Every tool call's arguments pass here. The walk costs a loop over the members and a look-up
    of each one's check (about 50 bytecodes for one string member); the test written out for the
    members' names and types costs 30 (P2: 50 -> 30 bytecodes a call).
    A required name is a property (the caller makes sure), so having every property is having
    every required name, and having exactly as many members has no other member."""
    namespace: dict[str, Any] = {"walk": walk, "MISSING": _MISSING}
    tests = ["type(value) is dict", f"len(value) == {len(scalars)}"]
    for index, (name, kind) in enumerate(scalars.items()):
        namespace[f"kind{index}"] = kind
        tests.append(f"isinstance(value.get({name!r}, MISSING), kind{index})")
    # The names go in as literals (``repr``), the types through the namespace: no text of the
    # schema is code.
    source = (
        f"def check_copy(value):\n    if {' and '.join(tests)}:\n"
        "        return value.copy()\n    return walk(value)\n"
    )
    exec(compile(source, "<tool arguments check>", "exec"), namespace)
    return namespace["check_copy"]


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_integer(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and value.is_integer()


_TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": _is_number,
    "integer": _is_integer,
}

_SCALARS: dict[Check, type] = {_TYPES["string"]: str, _TYPES["boolean"]: bool, _TYPES["null"]: type(None)}
"""The type checks that are one ``isinstance`` of a type that is not a container."""


def json_equal(a: object, b: object) -> bool:
    """JSON equality: ``1 == 1.0`` but ``True != 1``, element-wise for arrays and objects."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        left, right = cast(dict[str, Any], a), cast(dict[str, Any], b)
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    if isinstance(a, list) and isinstance(b, list):
        left_items, right_items = cast(list[Any], a), cast(list[Any], b)
        return len(left_items) == len(right_items) and all(
            json_equal(x, y) for x, y in zip(left_items, right_items, strict=True)
        )
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return False
    return a == b


def _compile(schema: object) -> Check:
    if schema is True:
        return lambda _v: True
    if schema is False:
        return lambda _v: False
    if not isinstance(schema, dict):
        raise _Unsupported
    node = cast(dict[str, Any], schema)
    if UNSUPPORTED.intersection(node):
        raise _Unsupported
    checks: list[Check] = []
    # A tool's parameters are an object: its member check also checks the type, so the usual
    # schema compiles to one closure (no ``check_all``, no type closure; the order of checks
    # does not change the verdict).
    if not _add_objects(node, checks, node.get("type") == "object"):
        _add_type(node, checks)
    _add_values(node, checks)
    _add_numbers(node, checks)
    _add_strings(node, checks)
    _add_arrays(node, checks)
    _add_combinators(node, checks)
    if not checks:
        return lambda _v: True
    if len(checks) == 1:
        return checks[0]

    def check_all(value: Any) -> bool:
        for check in checks:  # noqa: SIM110 (all() over a generator costs a frame per call)
            if not check(value):
                return False
        return True

    return check_all


def _add_type(node: dict[str, Any], checks: list[Check]) -> None:
    declared = node.get("type")
    if declared is None:
        return
    names = [declared] if isinstance(declared, str) else cast(list[Any], declared)
    try:
        tests = [_TYPES[name] for name in names]
    except (KeyError, TypeError):
        raise _Unsupported from None
    if len(tests) == 1:
        checks.append(tests[0])
    else:
        checks.append(lambda v: any(test(v) for test in tests))


def _add_values(node: dict[str, Any], checks: list[Check]) -> None:
    if "enum" in node:
        options = node["enum"]
        if not isinstance(options, list):
            raise _Unsupported
        allowed = cast(list[Any], options)
        checks.append(lambda v: any(json_equal(v, option) for option in allowed))
    if "const" in node:
        constant = node["const"]
        checks.append(lambda v: json_equal(v, constant))


def _bound(node: dict[str, Any], key: str) -> float | None:
    value = node.get(key)
    if value is None:
        return None
    if not _is_number(value):
        raise _Unsupported
    return value


def _add_numbers(node: dict[str, Any], checks: list[Check]) -> None:
    low, high = _bound(node, "minimum"), _bound(node, "maximum")
    low_open, high_open = _bound(node, "exclusiveMinimum"), _bound(node, "exclusiveMaximum")
    if low is not None:
        checks.append(lambda v: not _is_number(v) or v >= low)
    if high is not None:
        checks.append(lambda v: not _is_number(v) or v <= high)
    if low_open is not None:
        checks.append(lambda v: not _is_number(v) or v > low_open)
    if high_open is not None:
        checks.append(lambda v: not _is_number(v) or v < high_open)


def _add_strings(node: dict[str, Any], checks: list[Check]) -> None:
    shortest, longest = _bound(node, "minLength"), _bound(node, "maxLength")
    if shortest is not None:
        checks.append(lambda v: not isinstance(v, str) or len(v) >= shortest)
    if longest is not None:
        checks.append(lambda v: not isinstance(v, str) or len(v) <= longest)
    if "pattern" in node:
        try:
            pattern = re.compile(node["pattern"])
        except (re.error, TypeError):
            raise _Unsupported from None
        checks.append(lambda v: not isinstance(v, str) or pattern.search(v) is not None)


def _add_arrays(node: dict[str, Any], checks: list[Check]) -> None:
    fewest, most = _bound(node, "minItems"), _bound(node, "maxItems")
    if fewest is not None:
        checks.append(lambda v: not isinstance(v, list) or len(cast(list[Any], v)) >= fewest)
    if most is not None:
        checks.append(lambda v: not isinstance(v, list) or len(cast(list[Any], v)) <= most)
    if "items" in node:
        items: object = node["items"]
        if not isinstance(items, dict | bool):
            raise _Unsupported  # draft 7 tuple form
        item = _compile(cast(object, items))
        checks.append(lambda v: not isinstance(v, list) or all(item(x) for x in cast(list[Any], v)))


def _add_objects(node: dict[str, Any], checks: list[Check], must_be_object: bool) -> bool:
    """Add the object keywords' checks; ``True`` if one of them also checks that the value is an
    object (when ``must_be_object``), so the type needs no check of its own."""
    fewest, most = _bound(node, "minProperties"), _bound(node, "maxProperties")
    if fewest is not None:
        checks.append(lambda v: not isinstance(v, dict) or len(cast(dict[str, Any], v)) >= fewest)
    if most is not None:
        checks.append(lambda v: not isinstance(v, dict) or len(cast(dict[str, Any], v)) <= most)
    required = node.get("required")
    wanted: frozenset[str] = frozenset()
    if required is not None:
        if not isinstance(required, list):
            raise _Unsupported
        names = cast(list[Any], required)
        if all(isinstance(name, str) for name in names):
            wanted = frozenset(cast(list[str], names))
        else:
            checks.append(lambda v: not isinstance(v, dict) or all(name in v for name in names))
    properties = node.get("properties", {})
    if not isinstance(properties, dict):
        raise _Unsupported
    compiled = {name: _compile(sub) for name, sub in cast(dict[str, Any], properties).items()}
    additional = node.get("additionalProperties", True)
    rest = _compile(additional)
    if not compiled and additional is True:
        if wanted:
            checks.append(lambda v: not isinstance(v, dict) or v.keys() >= wanted)
        return False

    # The required names and every member in one call, and no ``cast`` at run time (in 3.11 it
    # is a call too, after building its ``dict[str, Any]``): validation runs on every tool call.
    def check_object(value: Any) -> bool:
        if not isinstance(value, dict):
            return not must_be_object
        members: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType] (a JSON object)
        if not members.keys() >= wanted:
            return False
        for key, item in members.items():
            sub = compiled.get(key, rest)
            if not sub(item):
                return False
        return True

    checks.append(check_object)
    return must_be_object


def _add_combinators(node: dict[str, Any], checks: list[Check]) -> None:
    for key in ("allOf", "anyOf", "oneOf"):
        if key not in node:
            continue
        members = node[key]
        if not isinstance(members, list) or not members:
            raise _Unsupported
        subs = [_compile(member) for member in cast(list[Any], members)]
        if key == "allOf":
            checks.append(lambda v, subs=subs: all(sub(v) for sub in subs))
        elif key == "anyOf":
            checks.append(lambda v, subs=subs: any(sub(v) for sub in subs))
        else:
            checks.append(lambda v, subs=subs: sum(1 for sub in subs if sub(v)) == 1)
    if "not" in node:
        negated = _compile(node["not"])
        checks.append(lambda v: not negated(v))
