"""Tool-argument validation: the reference's coercion (recorded from the reference itself) and
pydantic-model parameters."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agent_support import OWN_CONFORMANCE
from pydantic import BaseModel, Field

from tether.agent import AgentTool, AgentToolResult, ToolArgumentsError, validate_tool_arguments
from tether.agent.validation._js import js_number, js_string
from tether.testing.scripted import canonical_json

REFERENCE = OWN_CONFORMANCE / "reference"
CASES: list[dict[str, Any]] = json.loads((REFERENCE / "coercion_cases.json").read_text())
EXPECTED: list[dict[str, str]] = json.loads((REFERENCE / "coercion_expected.json").read_text())


async def _never(*_: Any) -> AgentToolResult[Any]:
    raise AssertionError("not executed")


def _tool(parameters: Any) -> AgentTool:
    return AgentTool(name="t", label="t", description="", parameters=parameters, execute=_never)


def _outcome(case: dict[str, Any]) -> dict[str, str]:
    """What ``reference/validation.mjs`` records for a case: the validated arguments as canonical
    JSON, or the whole error text."""
    try:
        return {"ok": canonical_json(validate_tool_arguments(_tool(case["schema"]), "t", case["args"]))}
    except ToolArgumentsError as err:
        return {"error": str(err)}


def test_reference_cases_are_paired() -> None:
    assert len(CASES) == len(EXPECTED) > 90


@pytest.mark.parametrize("index", range(len(CASES)), ids=[canonical_json(c["args"])[:40] for c in CASES])
def test_coercion_matches_the_reference(index: int) -> None:
    case, expected = CASES[index], EXPECTED[index]
    outcome = _outcome(case)
    assert outcome == expected, f"schema {case['schema']} args {case['args']}"


def test_validation_does_not_mutate_the_raw_arguments() -> None:
    raw = {"v": ["1", "2"]}
    schema = {"type": "object", "properties": {"v": {"type": "array", "items": {"type": "number"}}}}
    assert validate_tool_arguments(_tool(schema), "t", raw) == {"v": [1, 2]}
    assert raw == {"v": ["1", "2"]}


def test_error_lists_each_problem_and_the_arguments() -> None:
    schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
        "required": ["path"],
    }
    with pytest.raises(ToolArgumentsError) as caught:
        validate_tool_arguments(_tool(schema), "read", {"limit": 0})
    lines = str(caught.value).split("\n")
    assert lines[0] == 'Validation failed for tool "read":'
    # the reference's wording and order (TypeBox): required properties first, then each property
    assert lines[1:3] == ["  - path: must have required properties path", "  - limit: must be >= 1"]
    assert lines[-4:] == ["Received arguments:", "{", '  "limit": 0', "}"]


class ReadArgs(BaseModel):
    path: str
    limit: int = Field(default=10, ge=1)


def test_pydantic_parameters_give_a_model_instance() -> None:
    args = validate_tool_arguments(_tool(ReadArgs), "read", {"path": "a.txt", "limit": "5"})
    assert args == ReadArgs(path="a.txt", limit=5)


def test_pydantic_errors_use_the_same_first_line() -> None:
    with pytest.raises(ToolArgumentsError) as caught:
        validate_tool_arguments(_tool(ReadArgs), "read", {"limit": 0})
    lines = str(caught.value).split("\n")
    assert lines[0] == 'Validation failed for tool "read":'
    assert any(line.startswith("  - path: ") for line in lines)
    assert any(line.startswith("  - limit: ") for line in lines)


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("12", 12.0),
        (" -1.5e1 ", -15.0),
        ("0x10", 16.0),
        ("", 0.0),
        ("1_0", None),
        ("nan", None),
        ("-Infinity", float("-inf")),
    ],
)
def test_js_number(text: str, number: float | None) -> None:
    assert js_number(text) == number


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (True, "true"),
        (5, "5"),
        (5.0, "5"),
        (-0.0, "0"),
        (0.1, "0.1"),
        (1e21, "1e+21"),
        (1.5e21, "1.5e+21"),
        (1e20, "100000000000000000000"),
        (1.5e16, "15000000000000000"),
        (123456789012345678901, "123456789012345680000"),  # a JavaScript number past 2**53
        (1e-7, "1e-7"),
        (-2.5e-8, "-2.5e-8"),
        (0.000001, "0.000001"),
        (0.00001234, "0.00001234"),
        (123.456, "123.456"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
    ],
)
def test_js_string(value: bool | float, text: str) -> None:
    """Recorded from Node's ``String(value)``."""
    assert js_string(value) == text


def test_canonical_json_prints_numbers_as_javascript() -> None:
    assert canonical_json({"b": [1e-7, 2.0, None, True], "a": "é\n"}) == '{"a":"é\\n","b":[1e-7,2,null,true]}'


VALIDATION_CASES: list[dict[str, Any]] = json.loads((REFERENCE / "validation_cases.json").read_text())
VALIDATION_EXPECTED: list[dict[str, str]] = json.loads((REFERENCE / "validation_expected.json").read_text())


def test_validation_cases_are_paired() -> None:
    assert len(VALIDATION_CASES) == len(VALIDATION_EXPECTED) > 100


@pytest.mark.parametrize("index", range(len(VALIDATION_CASES)))
def test_round_two_schemas_match_the_reference(index: int) -> None:
    """Fuzz round 2's schemas (nested, unions, bounds, formats, closed objects): the same verdict,
    the same coerced arguments, the same error text to the last character."""
    case, expected = VALIDATION_CASES[index], VALIDATION_EXPECTED[index]
    outcome = _outcome(case)
    assert outcome == expected, f"schema {case['schema']} args {case['args']}"


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        ("email", "a.b@example.org", "a@"),
        ("date", "2024-02-29", "2023-02-29"),
        ("date-time", "2020-12-31T23:59:59+01:00", "2020-12-31T23:59:59"),
        ("uri", "file:///tmp/x", "http//x"),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567"),
        ("ipv4", "10.0.0.255", "1.2.3"),
    ],
)
def test_string_formats_are_checked(fmt: str, good: str, bad: str) -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "format": fmt}}}
    assert validate_tool_arguments(_tool(schema), "t", {"v": good}) == {"v": good}
    with pytest.raises(ToolArgumentsError):
        validate_tool_arguments(_tool(schema), "t", {"v": bad})


def test_unknown_formats_pass() -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "format": "no-such-format"}}}
    assert validate_tool_arguments(_tool(schema), "t", {"v": "anything"}) == {"v": "anything"}


def test_valid_arguments_come_back_as_a_deep_copy() -> None:
    """The tool gets its own copy: changing it, at any depth, leaves the model's call as it was."""
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "edits": {"type": "array", "items": {"type": "object"}},
            "options": {"type": "object", "properties": {"tags": {"type": "array"}}},
        },
    }
    arguments = {"path": "a", "edits": [{"old": "x", "new": [1, {"y": 2}]}], "options": {"tags": ["t"]}}
    original = json.loads(json.dumps(arguments))
    copied = validate_tool_arguments(_tool(schema), "t", arguments)
    assert copied == original
    copied["edits"][0]["new"][1]["y"] = 3
    copied["edits"].append({})
    copied["options"]["tags"].clear()
    copied["path"] = "b"
    assert arguments == original


def test_a_tools_validator_is_built_once_and_follows_its_parameters() -> None:
    """``arguments_validator`` is what a batch calls per tool call: the same function for the same
    tool, the validation of ``validate_tool_arguments`` (a copy, the reference's errors), and a
    new one when the tool's parameters are replaced."""
    from tether.agent.validation import arguments_validator

    agent_tool = _tool({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    agent_tool.name = "count"
    validate = arguments_validator(agent_tool)
    assert arguments_validator(agent_tool) is validate
    arguments = {"n": 3, "extra": [1]}
    copied = validate(arguments)
    assert copied == arguments and copied is not arguments and copied["extra"] is not arguments["extra"]
    assert validate({"n": "4"}) == {"n": 4}, "coerced, as the reference does"
    with pytest.raises(ToolArgumentsError) as failure:
        validate({"n": "four"})
    assert str(failure.value) == str(_error_of(agent_tool, {"n": "four"}))
    agent_tool.parameters = {"type": "object", "properties": {"n": {"type": "string"}}}
    assert arguments_validator(agent_tool) is not validate
    assert arguments_validator(agent_tool)({"n": "x"}) == {"n": "x"}


def _error_of(agent_tool: AgentTool, arguments: Any) -> ToolArgumentsError:
    try:
        validate_tool_arguments(agent_tool, agent_tool.name, arguments)
    except ToolArgumentsError as error:
        return error
    raise AssertionError("expected a validation error")
