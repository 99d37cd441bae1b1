"""Conformance of tether's wire definitions with seed 000.

Two independent checks meet here: the seed text (read by ``wire_seed``) and lists pinned in this
file. The discriminator sets must equal both, in tether's Python types and in the schema bundle;
changing a role, block type, event type, stop reason, effort or thinking level anywhere fails.
The whole bundle is also rendered back into the seed's type notation and compared, definition by
definition and field by field (types, ``?`` marks, ``doc`` texts, ``x-open``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args, get_origin

import pytest
import wire_seed

from tether import wire
from tether.wire.schema import MESSAGE_DEFS, MODEL_DEFS, build_bundle

ROLES = [
    "user",
    "developer",
    "assistant",
    "toolResult",
    "bashExecution",
    "pythonExecution",
    "custom",
    "hookMessage",
    "branchSummary",
    "compactionSummary",
    "fileMention",
]
ASSISTANT_CONTENT_TYPES = [
    "text",
    "thinking",
    "redactedThinking",
    "fallback",
    "anthropicServerTool",
    "image",
    "toolCall",
]
EVENT_TYPES = [
    "start",
    "text_start",
    "text_delta",
    "text_end",
    "thinking_start",
    "thinking_delta",
    "thinking_end",
    "image_end",
    "toolcall_start",
    "toolcall_delta",
    "toolcall_end",
    "done",
    "error",
]
STOP_REASONS = ["stop", "length", "toolUse", "error", "aborted"]
EFFORTS = ["minimal", "low", "medium", "high", "xhigh", "max"]
THINKING_LEVELS = ["inherit", "off", "minimal", "low", "medium", "high", "xhigh", "max"]
CONFIGURED_THINKING_LEVELS = ["auto", *THINKING_LEVELS]


def _union_members(tp: object) -> tuple[Any, ...]:
    if get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return get_args(tp)


def _literal_values(tp: object) -> list[str]:
    if get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    assert get_origin(tp) is Literal, tp
    return list(get_args(tp))


def _python_tags(union: object, field: str) -> list[str]:
    """Discriminator values of a Python union of TypedDicts, read from each member's annotation."""
    out: list[str] = []
    for member in _union_members(union):
        out.extend(_literal_values(member.__annotations__[field]))
    return out


def _bundle_tags(union: str, field: str) -> list[str]:
    defs = build_bundle()["$defs"]
    refs = [s["$ref"].rsplit("/", 1)[1] for s in defs[union]["oneOf"]]
    return [defs[r]["properties"][field]["const"] for r in refs]


DISCRIMINATOR_SETS = [
    # (label, pinned, values in the seed, values in the Python types, values in the bundle)
    (
        "roles",
        ROLES,
        lambda: wire_seed.tag_values("AgentMessage", "role"),
        lambda: _python_tags(wire.AgentMessage, "role"),
        lambda: _bundle_tags("AgentMessage", "role"),
    ),
    (
        "assistant content types",
        ASSISTANT_CONTENT_TYPES,
        lambda: wire_seed.tag_values("AssistantContent", "type"),
        lambda: _python_tags(wire.AssistantContent, "type"),
        lambda: _bundle_tags("AssistantContent", "type"),
    ),
    (
        "event types",
        EVENT_TYPES,
        lambda: wire_seed.tag_values("AssistantMessageEvent", "type"),
        lambda: _python_tags(wire.AssistantMessageEvent, "type"),
        lambda: _bundle_tags("AssistantMessageEvent", "type"),
    ),
]
LITERAL_SETS = [
    ("StopReason", STOP_REASONS, wire.StopReason),
    ("Effort", EFFORTS, wire.Effort),
    ("ThinkingLevel", THINKING_LEVELS, wire.ThinkingLevel),
    ("ConfiguredThinkingLevel", CONFIGURED_THINKING_LEVELS, wire.ConfiguredThinkingLevel),
]


@pytest.mark.parametrize(("label", "pinned", "seed", "python", "bundle"), DISCRIMINATOR_SETS, ids=lambda x: x)
def test_discriminator_set_matches_seed_and_pinned_list(
    label: str, pinned: list[str], seed: Any, python: Any, bundle: Any
) -> None:
    assert seed() == pinned, f"seed {label} changed"
    assert python() == pinned, f"Python {label} differ from the seed"
    assert bundle() == pinned, f"bundle {label} differ from the seed"


def test_pinned_counts() -> None:
    assert (len(ROLES), len(ASSISTANT_CONTENT_TYPES), len(EVENT_TYPES)) == (11, 7, 13)


@pytest.mark.parametrize(("name", "pinned", "python"), LITERAL_SETS, ids=[s[0] for s in LITERAL_SETS])
def test_literal_set_matches_seed_and_pinned_list(name: str, pinned: list[str], python: object) -> None:
    expr = wire_seed.by_name()[name].expr
    assert expr is not None
    assert wire_seed.literals(expr) == pinned, f"seed {name} changed"
    assert _literal_values(python) == pinned, f"Python {name} differs from the seed"
    assert build_bundle()["$defs"][name]["enum"] == pinned, f"bundle {name} differs from the seed"


def test_done_and_error_event_reasons_split_stop_reasons() -> None:
    defs = build_bundle()["$defs"]
    done = defs["AssistantDoneEvent"]["properties"]["reason"]["enum"]
    error = defs["AssistantErrorEvent"]["properties"]["reason"]["enum"]
    assert sorted(done + error) == sorted(STOP_REASONS)


def test_registries_list_every_seed_definition_in_seed_order() -> None:
    seed = wire_seed.definitions()
    assert list(MESSAGE_DEFS.definitions) == [d.name for d in seed if d.group == "messageDefs"]
    assert list(MODEL_DEFS.definitions) == [d.name for d in seed if d.group == "modelDefs"]
    assert list(build_bundle()["$defs"]) == [d.name for d in seed]


def _render(schema: dict[str, Any]) -> str:
    """A bundle schema in the seed's type notation (``'a' | 'b'``, ``X[]``, ``number.integer``)."""
    if "$ref" in schema:
        return schema["$ref"].removeprefix("#/$defs/")
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return " | ".join(_render(s) for s in schema[key])
    if "const" in schema:
        return f"'{schema['const']}'"
    if "enum" in schema:
        return " | ".join(f"'{v}'" for v in schema["enum"])
    kind: str | list[str] | None = schema.get("type")
    if kind is None:
        return "unknown"
    if isinstance(kind, list):
        return " | ".join(_render({"type": k}) for k in kind)
    if kind == "array":
        return _render(schema["items"]) + "[]"
    names = {"string": "string", "integer": "number.integer", "number": "number", "boolean": "boolean"}
    if kind == "object":
        assert "properties" not in schema, "records are referred to by $ref"
        return "Record"
    return names.get(kind, kind)


def _norm(expr: str) -> str:
    return " | ".join(wire_seed.members(expr))


@pytest.mark.parametrize("definition", wire_seed.definitions(), ids=lambda d: d.name)
def test_bundle_definition_matches_seed(definition: wire_seed.Definition) -> None:
    schema = build_bundle()["$defs"][definition.name]
    assert schema.get("description") == definition.doc
    if not definition.is_object:
        assert definition.expr is not None
        assert _render(schema) == _norm(definition.expr)
        discriminated = definition.name in {
            "UserContent",
            "AssistantContent",
            "AgentMessage",
            "AssistantMessageEvent",
        }
        assert ("x-discriminator" in schema) == discriminated
        return
    assert schema["type"] == "object"
    # Every object of messageDefs is an open record; the model descriptors are closed.
    assert schema.get("x-open", False) is (definition.group == "messageDefs")
    assert list(schema["properties"]) == [f.name for f in definition.fields]
    assert schema["required"] == [f.name for f in definition.fields if not f.optional]
    for field in definition.fields:
        prop = schema["properties"][field.name]
        assert _render(prop) == _norm(field.expr), field.name
        assert prop.get("description") == field.doc, field.name


def test_discriminated_unions_name_their_field() -> None:
    defs = build_bundle()["$defs"]
    assert defs["AgentMessage"]["x-discriminator"] == "role"
    for name in ("UserContent", "AssistantContent", "AssistantMessageEvent"):
        assert defs[name]["x-discriminator"] == "type"
