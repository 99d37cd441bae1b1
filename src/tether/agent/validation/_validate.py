"""Validation of a tool call's arguments against its tool's parameters.

Two kinds of parameters, two validators:

- a JSON Schema dict: the reference's primitive coercion (``_coercion``), then a
  JSON Schema validator (``jsonschema``, compiled once per schema); the tool receives the
  coerced dict;
- a pydantic model class: pydantic's own (lax) validation; the tool receives the model instance.

Both fail with ``ToolArgumentsError`` whose text starts with the reference's first line
``Validation failed for tool "NAME":``, then one ``  - path: message`` line per problem and the
arguments received, so the model can correct its call.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any, cast

from tether.agent.tool import AgentTool
from tether.agent.validation._coercion import coerce, copy_json, has_union
from tether.agent.validation._js import js_json
from tether.agent.validation._schema_check import compile_check

# jsonschema and pydantic load with the first validator that needs them (both are slow to import)
if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError as SchemaError
    from jsonschema.protocols import Validator
    from pydantic import BaseModel

_CACHE_SIZE = 512


class ToolArgumentsError(ValueError):
    """The arguments of a tool call do not match the tool's parameters."""


class _Compiled:
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

            from tether.agent.validation._formats import (
                format_checker,  # its patterns compile on import (~7 ms)
            )

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
        self._entries: OrderedDict[int, _Compiled] = OrderedDict()

    def get(self, schema: dict[str, Any]) -> _Compiled:
        entry = self._entries.get(id(schema))
        if entry is not None and entry.schema is schema:
            return entry
        entry = _Compiled(schema)
        self._entries[id(schema)] = entry
        if len(self._entries) > self._size:
            self._entries.popitem(last=False)
        return entry


_compiled = _Cache(_CACHE_SIZE)


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


def _is_valid(value: Any, schema: dict[str, Any]) -> bool:
    try:
        return _compiled.get(schema).is_valid(value)
    except Exception:  # a broken subschema cannot select a union member
        return False


def validate_tool_arguments(tool: AgentTool, tool_name: str, arguments: Any) -> Any:
    """Validated (and coerced) arguments for ``tool``, or ``ToolArgumentsError``."""
    parameters = tool.parameters
    if isinstance(parameters, dict):
        return validate_json_arguments(parameters, tool_name, arguments)
    return _validate_model(parameters, tool_name, arguments)


def validate_json_arguments(schema: dict[str, Any], tool_name: str, arguments: Any) -> Any:
    """Arguments checked (and coerced) against a JSON Schema, or ``ToolArgumentsError``."""
    compiled = _compiled.get(schema)
    if compiled.check is not None and not compiled.has_union and compiled.check(arguments):
        # Coercion only re-types values that do not match their schema, except that a union
        # may pick another member: without unions, valid arguments come through unchanged.
        return copy_json(arguments)
    coerced = coerce(arguments, schema, _is_valid)
    if compiled.check is not None and compiled.check(coerced):
        return coerced
    errors = sorted(compiled.validator.iter_errors(coerced), key=lambda e: list(e.absolute_path))
    if not errors:
        return coerced
    from tether.agent.validation._errors import schema_problems  # only a failed call needs the wording

    problems = schema_problems(schema, coerced) or [_schema_problem(e) for e in errors]
    raise ToolArgumentsError(_message(tool_name, problems, arguments))


def _validate_model(model: type[BaseModel], tool_name: str, arguments: Any) -> BaseModel:
    from pydantic import ValidationError as ModelError

    try:
        return model.model_validate(arguments)
    except ModelError as err:
        problems = [f"{'.'.join(str(part) for part in e['loc']) or 'root'}: {e['msg']}" for e in err.errors()]
        raise ToolArgumentsError(_message(tool_name, problems, arguments)) from None


def _schema_problem(error: SchemaError) -> str:
    path = ".".join(str(part) for part in error.absolute_path)
    instance: object = error.instance
    if error.validator == "required" and isinstance(instance, dict):
        required = cast(list[str], error.validator_value)
        instance = cast(dict[str, Any], instance)
        missing = next((name for name in required if name not in instance), None)
        if missing is not None:
            return f"{f'{path}.' if path else ''}{missing}: required property is missing"
    return f"{path or 'root'}: {error.message}"


def _message(tool_name: str, problems: list[str], arguments: Any) -> str:
    lines = "\n".join(f"  - {problem}" for problem in problems) or "  - unknown validation error"
    received = js_json(arguments, "")
    return f'Validation failed for tool "{tool_name}":\n{lines}\n\nReceived arguments:\n{received}'
