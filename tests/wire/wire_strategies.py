"""Hypothesis strategies for valid wire values, built from the seed text (not from tether's types).

``pair(name)`` draws ``(value, expected)``: ``value`` is a valid JSON value of the seed
definition ``name`` in which every object carries a few unknown keys (with nested JSON values)
and each optional field is sometimes absent; ``expected`` is what decoding must return: the same
value, except that closed records (``modelDefs`` objects) lose their unknown keys.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import wire_seed
from hypothesis import strategies as st

Pair = tuple[Any, Any]

MAX_INT = 2**53  # JSON numbers that every reader (JavaScript too) keeps exact
text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-MAX_INT, MAX_INT)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)
json_objects = st.dictionaries(text, json_values, max_size=3)


def _same(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Pair]:
    return strategy.map(lambda v: (v, v))


def _primitive(expr: str) -> st.SearchStrategy[Pair] | None:
    if expr.startswith("'"):
        return st.just((expr[1:-1], expr[1:-1]))
    table: dict[str, st.SearchStrategy[Any]] = {
        "string": text,
        "boolean": st.booleans(),
        "number": st.integers(-MAX_INT, MAX_INT) | st.floats(allow_nan=False, allow_infinity=False),
        "number.integer": st.integers(-MAX_INT, MAX_INT),
        "null": st.none(),
        "Record": json_objects,
        "unknown": json_values,
    }
    strategy = table.get(expr)
    return None if strategy is None else _same(strategy)


def expression(expr: str) -> st.SearchStrategy[Pair]:
    """Strategy for a seed type expression (``string | UserContent[]``)."""
    alternatives = wire_seed.members(expr)
    if len(alternatives) > 1:
        return st.one_of([expression(a) for a in alternatives])
    if expr.endswith("[]"):
        items = expression(expr[:-2])
        return st.lists(items, max_size=3).map(lambda xs: ([a for a, _ in xs], [b for _, b in xs]))
    primitive = _primitive(expr)
    if primitive is not None:
        return primitive
    return st.deferred(lambda: pair(expr))


@cache
def pair(name: str) -> st.SearchStrategy[Pair]:
    """Strategy for the seed definition ``name``."""
    definition = wire_seed.by_name()[name]
    if definition.expr is not None:
        return expression(definition.expr)
    declared = {f.name for f in definition.fields}
    required = {f.name: expression(f.expr) for f in definition.fields if not f.optional}
    optional = {f.name: expression(f.expr) for f in definition.fields if f.optional}
    unknown = st.dictionaries(text.filter(lambda k: k not in declared), json_values, max_size=2)
    keeps_unknown = definition.group == "messageDefs"

    def build(parts: tuple[dict[str, Pair], dict[str, Any]]) -> Pair:
        fields, extra = parts
        value = {key: v for key, (v, _) in fields.items()} | extra
        expected = {key: e for key, (_, e) in fields.items()} | (extra if keeps_unknown else {})
        return value, expected

    return st.tuples(st.fixed_dictionaries(required, optional=optional), unknown).map(build)


def values(name: str) -> st.SearchStrategy[Any]:
    """Just the valid values of ``name`` (with unknown keys), without the expected decoding."""
    return pair(name).map(lambda p: p[0])
