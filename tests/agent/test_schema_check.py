"""The compiled fast check agrees with ``jsonschema`` on every schema of its subset."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings, strategies as st
from jsonschema import Draft202012Validator

from tether.agent.validation._coercion import coerce, has_union
from tether.agent.validation._schema_check import compile_check, json_equal

TYPES = ["object", "array", "string", "boolean", "null", "number", "integer"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.sampled_from([0.0, 1.0, 2.5, -1.5]),
    st.sampled_from(["", "a", "ab", "abc", "B1"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3)
    ),
    max_leaves=6,
)


def _leaf_schema() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "type": st.one_of(
                st.sampled_from(TYPES), st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True)
            ),
            "enum": st.lists(scalars, min_size=1, max_size=3),
            "const": scalars,
            "minimum": st.integers(-2, 2),
            "maximum": st.integers(-2, 2),
            "exclusiveMinimum": st.integers(-2, 2),
            "exclusiveMaximum": st.integers(-2, 2),
            "minLength": st.integers(0, 2),
            "maxLength": st.integers(0, 2),
            "pattern": st.sampled_from(["^a", "b$", "[0-9]"]),
            "minItems": st.integers(0, 2),
            "maxItems": st.integers(0, 2),
            "minProperties": st.integers(0, 2),
            "maxProperties": st.integers(0, 2),
        },
    )


schemas = st.recursive(
    st.one_of(_leaf_schema(), st.booleans()),
    lambda inner: st.one_of(
        st.builds(
            lambda base, props, required, additional: {
                **base,
                "properties": props,
                **({"required": required} if required else {}),
                **({"additionalProperties": additional} if additional is not None else {}),
            },
            _leaf_schema(),
            st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
            st.lists(st.sampled_from(["a", "b", "c"]), max_size=2, unique=True),
            st.one_of(st.none(), inner),
        ),
        st.builds(lambda base, items: {**base, "items": items}, _leaf_schema(), inner),
        st.builds(
            lambda key, members: {key: members},
            st.sampled_from(["anyOf", "oneOf", "allOf"]),
            st.lists(inner, min_size=1, max_size=3),
        ),
        st.builds(lambda negated: {"not": negated}, inner),
    ),
    max_leaves=5,
)


@settings(max_examples=150, deadline=None)
@given(schemas, values)
def test_fast_check_agrees_with_jsonschema(schema: Any, value: Any) -> None:
    check = compile_check(schema)
    assert check is not None, "every schema of the subset compiles"
    assert check(value) == Draft202012Validator(schema).is_valid(value)


def _valid(value: Any, schema: dict[str, Any]) -> bool:
    check = compile_check(schema)
    return check is not None and check(value)


def same(a: Any, b: Any) -> bool:
    """Equal values of the same types all the way down (``True`` is not ``1``, ``1`` is not ``1.0``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@settings(max_examples=150, deadline=None)
@given(schemas, values)
def test_coercion_leaves_valid_values_alone_without_unions(schema: Any, value: Any) -> None:
    """What lets validation skip coercion for valid arguments of a union-free schema."""
    check = compile_check(schema)
    assert check is not None
    if has_union(schema) or not check(value):
        return
    assert same(coerce(value, schema, _valid), value)


def test_unsupported_keywords_fall_back() -> None:
    assert compile_check({"$ref": "#/$defs/x"}) is None
    assert compile_check({"type": "object", "properties": {"a": {"uniqueItems": True}}}) is None
    assert compile_check({"items": [{"type": "string"}]}) is None
    assert compile_check({"type": "date"}) is None


def test_json_equality_keeps_booleans_apart() -> None:
    assert json_equal(1, 1.0)
    assert not json_equal(True, 1)
    assert not json_equal([0], [False])
    assert json_equal({"a": [1, 2.0]}, {"a": [1.0, 2]})
