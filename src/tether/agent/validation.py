"""Validation of a tool call's arguments against its tool's parameters.

Two kinds of parameters, two validators:

- a JSON Schema dict: the reference's primitive coercion (``tether.agent.coercion``), then a
  JSON Schema validator (``jsonschema``, compiled once per schema); the tool receives the
  coerced dict;
- a pydantic model class: pydantic's own (lax) validation; the tool receives the model instance.

Both fail with ``ToolArgumentsError`` whose text starts with the reference's first line
``Validation failed for tool "NAME":``, then one ``  - path: message`` line per problem and the
arguments received, so the model can correct its call.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel
from pydantic import ValidationError as ModelError

from tether.agent.coercion import coerce
from tether.agent.tool import AgentTool

if TYPE_CHECKING:  # jsonschema loads only when a tool has a JSON Schema dict (start-up time)
    from jsonschema.exceptions import ValidationError as SchemaError
    from jsonschema.protocols import Validator

_CACHE_SIZE = 512


class ToolArgumentsError(ValueError):
    """The arguments of a tool call do not match the tool's parameters."""


class _ValidatorCache:
    """Compiled validators keyed by schema identity. Each entry keeps its schema alive, so an
    ``id`` cannot be reused by another schema while cached; the oldest entry goes first."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[int, tuple[dict[str, Any], Validator]] = OrderedDict()

    def get(self, schema: dict[str, Any]) -> Validator:
        entry = self._entries.get(id(schema))
        if entry is not None and entry[0] is schema:
            return entry[1]
        from jsonschema import Draft7Validator, Draft202012Validator, validators

        default = Draft7Validator if _uses_tuple_items(schema) else Draft202012Validator
        cls = validators.validator_for(schema, default=default)
        validator: Validator = cls(schema)
        self._entries[id(schema)] = (schema, validator)
        if len(self._entries) > self._size:
            self._entries.popitem(last=False)
        return validator


_validators = _ValidatorCache(_CACHE_SIZE)


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
        return _validators.get(schema).is_valid(value)
    except Exception:  # a broken subschema cannot select a union member
        return False


def validate_tool_arguments(tool: AgentTool, tool_name: str, arguments: Any) -> Any:
    """Validated (and coerced) arguments for ``tool``, or ``ToolArgumentsError``."""
    parameters = tool.parameters
    if isinstance(parameters, dict):
        return _validate_json_schema(parameters, tool_name, arguments)
    return _validate_model(parameters, tool_name, arguments)


def _validate_json_schema(schema: dict[str, Any], tool_name: str, arguments: Any) -> Any:
    coerced = coerce(arguments, schema, _is_valid)
    validator = _validators.get(schema)
    errors = sorted(validator.iter_errors(coerced), key=lambda e: list(e.absolute_path))
    if not errors:
        return coerced
    raise ToolArgumentsError(_message(tool_name, [_schema_problem(e) for e in errors], arguments))


def _validate_model(model: type[BaseModel], tool_name: str, arguments: Any) -> BaseModel:
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
    received = json.dumps(arguments, indent=2, ensure_ascii=False, default=str)
    return f'Validation failed for tool "{tool_name}":\n{lines}\n\nReceived arguments:\n{received}'
