"""Whether a tool can be offered to a model at all: its name and its parameters' JSON Schema.

The tools of a request go to the provider with every turn. A tool whose name a provider refuses
(``^[A-Za-z0-9_-]{1,64}$`` is what OpenAI, Anthropic and Google all accept) or whose schema is
not a JSON Schema of an object fails the *whole request* there, every turn, whatever the model
meant to do; and the loop's own argument check fails on it at each call. So a tool from an
extension or an MCP server is checked once, when it is registered or listed, and one that
fails is left out with one line saying which and why; the others stay.

The schema check is a walk of the keywords whose shape is fixed (``type``, ``properties``,
``items``, ``required``, ``enum``, the combinators, ``$defs``), cheap enough for a server
listing thousands of tools, and it does not load ``jsonschema`` at start-up.
"""

from __future__ import annotations

import re
from typing import Any, cast

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
JSON_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMAS = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames")
_WALK_MAX = 100_000
"""Subschemas looked at at most (a pathological schema is refused, not walked for ever)."""


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot be a tool's name, or ``None``."""
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        return f"the name {name!r} is not 1-64 letters, digits, '_' or '-'"
    return None


def parameters_problem(parameters: object) -> str | None:
    """Why ``parameters`` (a JSON Schema as a dict) cannot describe a tool's arguments, or
    ``None``. A pydantic model class is fine (pydantic makes its schema)."""
    if isinstance(parameters, type):
        return None
    if not isinstance(parameters, dict):
        return f"its parameters must be a JSON Schema object, not {type(parameters).__name__}"
    root = cast(dict[str, Any], parameters)
    if root.get("type", "object") != "object":
        return f"its parameters schema must have type 'object', not {root.get('type')!r}"
    pending: list[tuple[str, object]] = [("parameters", root)]
    walked = 0
    while pending:
        where, schema = pending.pop()
        walked += 1
        if walked > _WALK_MAX:
            return "its parameters schema is too large"
        if isinstance(schema, bool):
            continue
        if not isinstance(schema, dict):
            return f"{where} must be a schema (an object), not {type(schema).__name__}"
        node = cast(dict[str, Any], schema)
        kind = node.get("type")
        kinds = cast(list[object], kind) if isinstance(kind, list) else [kind] if "type" in node else []
        bad = next((k for k in kinds if not isinstance(k, str) or k not in JSON_TYPES), None)
        if (kinds and bad is not None) or (isinstance(kind, list) and not kinds):
            return f"{where}.type {kind!r} is not a JSON type"
        required = node.get("required", [])
        if not isinstance(required, list) or not all(
            isinstance(r, str) for r in cast(list[object], required)
        ):
            return f"{where}.required must be a list of names"
        if "enum" in node and not isinstance(node["enum"], list):
            return f"{where}.enum must be a list"
        for key in _SCHEMA_MAPS:
            if key in node:
                value = node[key]
                if not isinstance(value, dict):
                    return f"{where}.{key} must be an object of schemas"
                pending += [(f"{where}.{key}.{k}", v) for k, v in cast(dict[str, object], value).items()]
        for key in _SCHEMA_LISTS:
            if key in node:
                value = node[key]
                if not isinstance(value, list):
                    return f"{where}.{key} must be a list of schemas"
                pending += [(f"{where}.{key}[{i}]", v) for i, v in enumerate(cast(list[object], value))]
        for key in _SCHEMAS:
            if key in node:
                value = node[key]
                if key == "items" and isinstance(value, list):  # draft 7's tuple form
                    pending += [(f"{where}.items[{i}]", v) for i, v in enumerate(cast(list[object], value))]
                else:
                    pending.append((f"{where}.{key}", value))
    return None
