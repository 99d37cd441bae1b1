"""The compiled fast check agrees with ``jsonschema`` on every schema of its subset."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings, strategies as st
from jsonschema import Draft202012Validator
from jsonschema.protocols import Validator

from narrowing import is_json_array, is_json_object
from tether.agent.validation._coercion import coerce, has_union
from tether.agent.validation._schema_check import compile_check, compile_check_copy, json_equal
from tether.wire.json_copy import copy_json

Schema = dict[str, Any] | bool
"""A JSON Schema: an object of keywords, or ``true`` / ``false``."""

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


def _object_schema(
    base: dict[str, Any], props: dict[str, Schema], required: list[str], additional: Schema | None
) -> Schema:
    return {
        **base,
        "properties": props,
        **({"required": required} if required else {}),
        **({"additionalProperties": additional} if additional is not None else {}),
    }


def _array_schema(base: dict[str, Any], items: Schema) -> Schema:
    return {**base, "items": items}


def _combined_schema(key: str, members: list[Schema]) -> Schema:
    return {key: members}


def _negated_schema(negated: Schema) -> Schema:
    return {"not": negated}


def _nested_schemas(inner: st.SearchStrategy[Schema]) -> st.SearchStrategy[Schema]:
    return st.one_of(
        st.builds(
            _object_schema,
            _leaf_schema(),
            st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
            st.lists(st.sampled_from(["a", "b", "c"]), max_size=2, unique=True),
            st.one_of(st.none(), inner),
        ),
        st.builds(_array_schema, _leaf_schema(), inner),
        st.builds(
            _combined_schema,
            st.sampled_from(["anyOf", "oneOf", "allOf"]),
            st.lists(inner, min_size=1, max_size=3),
        ),
        st.builds(_negated_schema, inner),
    )


schemas: st.SearchStrategy[Schema] = st.recursive(
    st.one_of(_leaf_schema(), st.booleans()), _nested_schemas, max_leaves=5
)


def _reference(schema: Schema) -> Validator:
    """jsonschema's validator for ``schema``, typed as the library's protocol: its class leaves
    ``is_valid`` partly unknown."""
    return Draft202012Validator(schema)


@settings(max_examples=150, deadline=None)
@given(schemas, values)
def test_fast_check_agrees_with_jsonschema(schema: Any, value: Any) -> None:
    check = compile_check(schema)
    assert check is not None, "every schema of the subset compiles"
    assert check(value) == _reference(schema).is_valid(value)


def _valid(value: Any, schema: dict[str, Any]) -> bool:
    check = compile_check(schema)
    return check is not None and check(value)


def same(a: Any, b: Any) -> bool:
    """Equal values of the same types all the way down (``True`` is not ``1``, ``1`` is not ``1.0``)."""
    if type(a) is not type(b):
        return False
    if is_json_object(a):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if is_json_array(a):
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


# Tool parameters as tools write them: an object of named members (often scalars), annotated.
def _plain_object(
    props: dict[str, Schema], required: list[str], additional: Schema | None, described: bool
) -> Schema:
    return {
        "type": "object",
        "properties": props,
        **({"required": required} if required else {}),
        **({"additionalProperties": additional} if additional is not None else {}),
        **({"description": "d"} if described else {}),
    }


def _typed(kind: str) -> Schema:
    return {"type": kind}


plain_objects = st.builds(
    _plain_object,
    st.dictionaries(
        st.sampled_from(["a", "b", "c"]),
        st.one_of(st.builds(_typed, st.sampled_from(TYPES)), schemas),
        max_size=3,
    ),
    st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=2, unique=True),
    st.one_of(st.none(), st.booleans(), schemas),
    st.booleans(),
)
objects = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), values, max_size=4)
INVALID = object()


def _containers(value: Any) -> list[int]:
    """The ids of every dict and list in ``value``, itself included."""
    if is_json_object(value):
        return [id(value), *(i for item in value.values() for i in _containers(item))]
    if is_json_array(value):
        return [id(value), *(i for item in value for i in _containers(item))]
    return []


@settings(max_examples=300, deadline=None)
@given(st.one_of(plain_objects, schemas), st.one_of(objects, values))
def test_one_walk_gives_what_check_then_copy_gave(schema: Any, value: Any) -> None:
    """The walk that checks while it copies: the verdict of ``compile_check``, the copy of
    ``copy_json`` (equal, of the same types, sharing no container with the arguments)."""
    check, check_copy = compile_check(schema), compile_check_copy(schema, lambda _v: INVALID)
    assert check is not None and check_copy is not None
    copied = check_copy(value)
    if not check(value):
        assert copied is INVALID
        return
    assert same(copied, copy_json(value))
    assert not set(_containers(copied)) & set(_containers(value))


def test_unsupported_keywords_fall_back() -> None:
    assert compile_check({"$ref": "#/$defs/x"}) is None
    assert compile_check({"type": "object", "properties": {"a": {"uniqueItems": True}}}) is None
    assert compile_check({"items": [{"type": "string"}]}) is None
    assert compile_check({"type": "date"}) is None
    assert compile_check_copy({"type": "date"}, lambda _v: INVALID) is None


def test_json_equality_keeps_booleans_apart() -> None:
    assert json_equal(1, 1.0)
    assert not json_equal(True, 1)
    assert not json_equal([0], [False])
    assert json_equal({"a": [1, 2.0]}, {"a": [1.0, 2]})


def test_member_names_are_data_in_the_made_check() -> None:
    """The check made for a schema of scalar members takes its names as literals: a name with
    quotes, a backslash or a line break is a name like any other, never code."""
    name = "a'\"\\\n) or True or ("
    schema = {
        "type": "object",
        "properties": {name: {"type": "string"}, "b": {"type": "null"}},
        "required": [name],
    }
    check_copy = compile_check_copy(schema, lambda _v: INVALID)
    assert check_copy is not None
    arguments = {name: "x", "b": None}
    copied = check_copy(arguments)
    assert copied == arguments and copied is not arguments
    assert check_copy({name: 1, "b": None}) is INVALID
    assert check_copy({"c": "x", "b": None}) is INVALID  # as many members, but not the required one
    assert check_copy({name: "x"}) == {name: "x"}  # "b" is optional: walked
