"""Each JSON Schema compiled once and cached by identity.

A tool passes the same parameters dict on every call (and a union the same member dicts), so only
the first call compiles: an entry holds the fast check (``_schema_check``) and, built on first
need, the ``jsonschema`` validator with the reference's formats. jsonschema and the formats load
with that first validator (both are slow to import), not with this module.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any, cast

from tether.agent.validation._coercion import has_union
from tether.agent.validation._schema_check import compile_check

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

_CACHE_SIZE = 512


class CompiledSchema:
    """A schema's fast check (``None`` when it uses keywords the fast path lacks) and its
    ``jsonschema`` validator, built on first need (errors, unsupported keywords)."""

    __slots__ = ("_validator", "check", "has_union", "schema")

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.check = compile_check(schema)
        self.has_union = has_union(schema)
        self._validator: Validator | None = None

    @property
    def validator(self) -> Validator:
        if self._validator is None:
            from jsonschema import Draft7Validator, Draft202012Validator, validators

            # the format patterns compile on import (~7 ms): load them with the first validator
            from tether.agent.validation._formats import format_checker

            default = Draft7Validator if _uses_tuple_items(self.schema) else Draft202012Validator
            cls = validators.validator_for(self.schema, default=default)
            self._validator = cls(self.schema, format_checker=format_checker())
        return self._validator

    def is_valid(self, value: Any) -> bool:
        return self.check(value) if self.check is not None else self.validator.is_valid(value)


class _Cache:
    """Compiled schemas keyed by identity. Each entry keeps its schema alive, so an ``id``
    cannot be reused by another schema while cached; the oldest entry goes first."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[int, CompiledSchema] = OrderedDict()

    def get(self, schema: dict[str, Any]) -> CompiledSchema:
        entry = self._entries.get(id(schema))
        if entry is not None and entry.schema is schema:
            return entry
        entry = CompiledSchema(schema)
        self._entries[id(schema)] = entry
        if len(self._entries) > self._size:
            self._entries.popitem(last=False)
        return entry


COMPILED = _Cache(_CACHE_SIZE)
"""Every schema validated lately, compiled."""


def _uses_tuple_items(schema: object) -> bool:
    """Whether a schema without ``$schema`` is written in draft 7 style (``items`` as a list),
    which draft 2020-12 (the default, like the reference's TypeBox) spells ``prefixItems``."""
    if isinstance(schema, dict):
        node = cast(dict[str, Any], schema)
        if isinstance(node.get("items"), list):
            return True
        return any(_uses_tuple_items(child) for child in node.values())
    if isinstance(schema, list):
        return any(_uses_tuple_items(child) for child in cast(list[Any], schema))
    return False


def is_valid(value: Any, schema: dict[str, Any]) -> bool:
    """Whether ``value`` is valid against a (sub)schema: how a union picks its member."""
    try:
        return COMPILED.get(schema).is_valid(value)
    except Exception:  # a broken subschema cannot select a union member
        return False
