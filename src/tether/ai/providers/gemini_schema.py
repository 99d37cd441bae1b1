"""Tool parameter schemas reduced to the subset of OpenAPI 3.0 that Gemini's ``Schema`` accepts.

Tools are written in JSON Schema (pydantic models, MCP servers), and Gemini rejects a function
declaration with keys it does not know (``additionalProperties``, ``$ref``, ``const``, ``oneOf``,
type lists) or values it does not support (string ``format`` other than ``enum``/``date-time``,
an ``OBJECT`` with empty ``properties``). ``gemini_schema`` rewrites what has a Gemini equivalent
and drops the rest:

- ``$ref`` into ``$defs``/``definitions`` is inlined (a recursive reference becomes a plain
  ``object``: Gemini has no references);
- ``type: [T, "null"]`` and ``anyOf``/``oneOf`` with a ``null`` member become ``nullable: true``;
  other type lists and ``oneOf`` become ``anyOf``; ``allOf`` is merged into one schema;
- ``const`` becomes a one-value ``enum``; enums keep string values only (Gemini's rule);
- ``required`` keeps only names that are properties.

An empty parameter object is no parameters at all (``None``): Gemini refuses an empty one.
"""

from __future__ import annotations

from typing import Any, cast

ALLOWED_KEYS = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "maxItems",
        "minItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "example",
        "anyOf",
        "propertyOrdering",
        "default",
        "items",
        "minimum",
        "maximum",
    }
)
FORMATS = {"string": {"enum", "date-time"}, "number": {"float", "double"}, "integer": {"int32", "int64"}}
TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object"})


def gemini_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """``schema`` (a tool's JSON Schema for its arguments) as Gemini ``parameters``, or ``None``."""
    defs = {**_dict(schema.get("definitions")), **_dict(schema.get("$defs"))}
    reduced = _reduce(schema, defs, frozenset())
    if reduced.get("type") == "object" and not reduced.get("properties"):
        return None
    return reduced


def _reduce(schema: dict[str, Any], defs: dict[str, Any], seen: frozenset[str]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        target = defs.get(name)
        if not isinstance(target, dict) or name in seen:
            out: dict[str, Any] = {"type": "object"}
            if isinstance(schema.get("description"), str):
                out["description"] = schema["description"]
            return out
        merged = {**cast("dict[str, Any]", target), **{k: v for k, v in schema.items() if k != "$ref"}}
        return _reduce(merged, defs, seen | {name})
    schema = _merge_all_of(schema, defs)
    out = {}
    nullable = schema.get("nullable") is True
    types = schema.get("type")
    if isinstance(types, list):
        names = [t for t in cast("list[Any]", types) if isinstance(t, str)]
        nullable = nullable or "null" in names
        names = [t for t in names if t in TYPES]
        if len(names) == 1:
            out["type"] = names[0]
        elif names:
            out["anyOf"] = [{"type": t} for t in names]
    elif isinstance(types, str) and types in TYPES:
        out["type"] = types
    choices = schema.get("anyOf", schema.get("oneOf"))
    if isinstance(choices, list):
        members = [_dict(c) for c in cast("list[Any]", choices)]
        nullable = nullable or any(m.get("type") == "null" for m in members)
        rest = [_reduce(m, defs, seen) for m in members if m.get("type") != "null"]
        if len(rest) == 1:
            out.update({k: v for k, v in rest[0].items() if k not in out})
        elif rest:
            out["anyOf"] = rest
    if nullable:
        out["nullable"] = True
    if "const" in schema and isinstance(schema["const"], str):
        out["enum"] = [schema["const"]]
        out.setdefault("type", "string")
    for key, value in schema.items():
        if key not in ALLOWED_KEYS or key in out or key in ("type", "anyOf", "nullable"):
            continue
        if key == "properties":
            properties = {name: _reduce(_dict(sub), defs, seen) for name, sub in _dict(value).items()}
            if properties:
                out["properties"] = properties
        elif key == "items":
            if isinstance(value, dict):
                out["items"] = _reduce(cast("dict[str, Any]", value), defs, seen)
        elif key == "enum":
            values = (
                [v for v in cast("list[Any]", value) if isinstance(v, str)] if isinstance(value, list) else []
            )
            if values:
                out["enum"] = values
        elif key == "format":
            if value in FORMATS.get(str(out.get("type")), set()):
                out["format"] = value
        else:
            out[key] = value
    if "required" in out:
        names = set(out.get("properties", {}))
        required = (
            [r for r in cast("list[Any]", out["required"]) if r in names]
            if isinstance(out["required"], list)
            else []
        )
        if required:
            out["required"] = required
        else:
            del out["required"]
    return out


def _merge_all_of(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    parts = schema.get("allOf")
    if not isinstance(parts, list):
        return schema
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    for part in cast("list[Any]", parts):
        part_schema = _dict(part)
        ref = part_schema.get("$ref")
        if isinstance(ref, str):
            part_schema = {
                **_dict(defs.get(ref.rsplit("/", 1)[-1])),
                **{k: v for k, v in part_schema.items() if k != "$ref"},
            }
        for key, value in part_schema.items():
            if key == "properties":
                merged["properties"] = {**_dict(merged.get("properties")), **_dict(value)}
            elif key == "required" and isinstance(value, list):
                merged["required"] = [
                    *cast("list[Any]", merged.get("required") or []),
                    *cast("list[Any]", value),
                ]
            else:
                merged.setdefault(key, value)
    return merged


def _dict(value: object) -> dict[str, Any]:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}
