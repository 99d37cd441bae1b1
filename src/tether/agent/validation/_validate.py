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

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tether.agent.tool import AgentTool
from tether.agent.validation._coercion import coerce, has_union
from tether.agent.validation._compiled import COMPILED, is_valid
from tether.agent.validation._js import js_json
from tether.agent.validation._schema_check import compile_check_copy
from tether.errors import ToolError
from tether.wire.json_copy import copy_json

# pydantic loads with the first model that needs it (it is slow to import)
if TYPE_CHECKING:
    from pydantic import BaseModel


class ToolArgumentsError(ToolError, ValueError):
    """The arguments of a tool call do not match the tool's parameters."""


def validate_tool_arguments(tool: AgentTool, tool_name: str, arguments: Any) -> Any:
    """Validated (and coerced) arguments for ``tool``, or ``ToolArgumentsError``."""
    parameters = tool.parameters
    if isinstance(parameters, dict):
        return validate_json_arguments(parameters, tool_name, arguments)
    return _validate_model(parameters, tool_name, arguments)


ArgumentsValidator = Callable[[Any], Any]
"""``validate_tool_arguments`` for one tool: its arguments validated (and coerced), or
``ToolArgumentsError``."""


def arguments_validator(tool: AgentTool) -> ArgumentsValidator:
    """``tool``'s arguments validator, built once per tool (and per parameters object) and kept
    in its ``arguments_check``.

    Every tool call is validated: for the usual parameters (a JSON Schema object without unions)
    valid arguments are checked and copied in one call (``compile_check_copy``), where
    ``validate_tool_arguments`` makes six; anything else takes ``validate_tool_arguments``' way."""
    kept = tool.arguments_check
    if kept is not None and kept[0] is tool.parameters:
        return kept[1]
    parameters, name = tool.parameters, tool.name
    validator: ArgumentsValidator | None = None
    if isinstance(parameters, dict) and not has_union(parameters):
        # Coercion only re-types values that do not match their schema, except that a union
        # may pick another member: without unions, valid arguments come through unchanged.
        schema = parameters
        validator = compile_check_copy(
            schema, lambda arguments: validate_json_arguments(schema, name, arguments)
        )
    if validator is None:
        validator = lambda arguments: validate_tool_arguments(tool, name, arguments)  # noqa: E731
    tool.arguments_check = (parameters, validator)
    return validator


def validate_json_arguments(schema: dict[str, Any], tool_name: str, arguments: Any) -> Any:
    """Arguments checked (and coerced) against a JSON Schema, or ``ToolArgumentsError``."""
    compiled = COMPILED.get(schema)
    if compiled.check is not None and not compiled.has_union and compiled.check(arguments):
        # Coercion only re-types values that do not match their schema, except that a union
        # may pick another member: without unions, valid arguments come through unchanged.
        return copy_json(arguments)
    coerced = coerce(arguments, schema, is_valid)
    if compiled.check is not None and compiled.check(coerced):
        return coerced
    errors = sorted(compiled.validator.iter_errors(coerced), key=lambda e: list(e.absolute_path))
    if not errors:
        return coerced
    # only a failed call needs the wording (and the format patterns it checks)
    from tether.agent.validation._errors import jsonschema_problem, schema_problems

    problems = schema_problems(schema, coerced) or [jsonschema_problem(e) for e in errors]
    raise ToolArgumentsError(_message(tool_name, problems, arguments))


def _validate_model(model: type[BaseModel], tool_name: str, arguments: Any) -> BaseModel:
    from pydantic import ValidationError as ModelError

    try:
        return model.model_validate(arguments)
    except ModelError as err:
        problems = [f"{'.'.join(str(part) for part in e['loc']) or 'root'}: {e['msg']}" for e in err.errors()]
        raise ToolArgumentsError(_message(tool_name, problems, arguments)) from None


def _message(tool_name: str, problems: list[str], arguments: Any) -> str:
    lines = "\n".join(f"  - {problem}" for problem in problems) or "  - unknown validation error"
    received = js_json(arguments, "")
    return f'Validation failed for tool "{tool_name}":\n{lines}\n\nReceived arguments:\n{received}'
