"""The generated JSON Schema bundle: committed copy, validity, extension by later layers, CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, cast

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator
from jsonschema.protocols import Validator
from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from tether.cli.main import subcommands
from tether.wire import AgentMessage, Doc, ModelInfo
from tether.wire.schema import DIALECT, Registry, build_bundle, bundle_json, summary

COMMITTED = Path(__file__).resolve().parents[2] / "src" / "tether" / "wire" / "schema.json"


def test_committed_schema_is_current() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == bundle_json(), (
        "src/tether/wire/schema.json is stale: run `make schema` and commit it"
    )


def test_bundle_is_a_valid_2020_12_schema() -> None:
    bundle = build_bundle()
    assert bundle["$schema"] == DIALECT
    Draft202012Validator.check_schema(bundle)  # checks every $defs entry against the metaschema


def test_every_ref_resolves() -> None:
    text = bundle_json()
    defs = build_bundle()["$defs"]
    refs = {part.split('"')[0] for part in text.split('"$ref": "#/$defs/')[1:]}
    assert refs <= set(defs)
    assert refs  # the walk really produced references


def test_bundle_json_is_stable_and_indented() -> None:
    assert bundle_json() == bundle_json()
    assert bundle_json().startswith('{\n  "$schema"')
    assert json.loads(bundle_json()) == build_bundle()


def test_field_order_follows_the_declaration() -> None:
    props = list(build_bundle()["$defs"]["UserMessage"]["properties"])
    assert props[:3] == ["role", "content", "parentIrc"]
    assert props[-1] == "timestamp"


# --- extension: a later layer (RPC) adds its own definitions and sections ------------------------


@with_config(ConfigDict(extra="allow", strict=True))
class _PromptCommand(TypedDict):
    """Send a prompt."""

    type: Literal["prompt"]
    message: str
    history: NotRequired[list[AgentMessage]]


@with_config(ConfigDict(extra="ignore", strict=True))
class _SetModel(TypedDict):
    type: Literal["set_model"]
    model: ModelInfo
    reason: NotRequired[Any]


RPC = Registry("rpcDefs", {"PromptCommand": _PromptCommand, "SetModel": _SetModel})


def test_extra_registry_adds_definitions_after_the_seed_ones() -> None:
    bundle = build_bundle(RPC, sections={"x-rpc": {"commands": ["PromptCommand", "SetModel"]}})
    names = list(bundle["$defs"])
    assert names[-2:] == ["PromptCommand", "SetModel"]
    prompt = bundle["$defs"]["PromptCommand"]
    assert prompt["description"] == "Send a prompt."
    assert prompt["x-open"] is True
    assert prompt["required"] == ["type", "message"]
    assert prompt["properties"]["history"] == {"type": "array", "items": {"$ref": "#/$defs/AgentMessage"}}
    set_model = bundle["$defs"]["SetModel"]
    assert "x-open" not in set_model
    assert set_model["properties"]["model"] == {"$ref": "#/$defs/ModelInfo"}
    assert set_model["properties"]["reason"] == {}
    assert bundle["x-rpc"] == {"commands": ["PromptCommand", "SetModel"]}
    Draft202012Validator.check_schema(bundle)
    # the library's own protocol types is_valid, which its class leaves partly unknown
    validator = cast(Validator, Draft202012Validator({**bundle, "$ref": "#/$defs/PromptCommand"}))
    assert validator.is_valid(
        {"type": "prompt", "message": "hi", "history": [{"role": "user", "content": "x", "timestamp": 1}]}
    )
    assert not validator.is_valid({"type": "prompt", "message": "hi", "history": [{"role": "robot"}]})


def test_a_name_defined_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="rpcDefs: ModelInfo is defined twice"):
        build_bundle(Registry("rpcDefs", {"ModelInfo": _SetModel}))


def test_an_unregistered_record_is_refused() -> None:
    class Loose(TypedDict):
        x: _PromptCommand

    with pytest.raises(TypeError, match="_PromptCommand is not registered"):
        build_bundle(Registry("more", {"Loose": Loose}))


def test_an_inexpressible_type_is_refused() -> None:
    class Odd(TypedDict):
        when: set[int]

    with pytest.raises(TypeError, match="cannot express"):
        build_bundle(Registry("more", {"Odd": Odd}))


def test_doc_annotations_become_descriptions() -> None:
    class Documented(TypedDict):
        size: Annotated[int, Doc("Bytes.")]

    schema = build_bundle(Registry("more", {"Documented": Documented}))["$defs"]["Documented"]
    assert schema["properties"]["size"] == {"description": "Bytes.", "type": "integer"}


# --- summary and CLI ------------------------------------------------------------------------------


def test_summary_counts() -> None:
    text = summary()
    assert "48 definitions (42 messageDefs, 6 modelDefs)" in text
    assert "11 message roles" in text
    assert "7 assistant content types" in text
    assert "13 assistant event types" in text
    assert "(35 open, 3 closed)" in text


def test_cli_schema_prints_the_bundle() -> None:
    result = CliRunner().invoke(subcommands(), ["schema"])
    assert result.exit_code == 0
    printed = json.loads(result.output)
    assert printed["$defs"] | build_bundle()["$defs"] == printed["$defs"]  # the wire defs, unchanged
    assert "x-rpc" in printed  # plus the RPC protocol (tests/rpc check that part)


def test_cli_schema_summary_prints_the_summary() -> None:
    result = CliRunner().invoke(subcommands(), ["schema", "--summary"])
    assert result.exit_code == 0
    assert result.output == summary() + "\n"


def test_optional_numbers_and_typed_maps() -> None:
    class Shapes(TypedDict):
        ratio: int | float | None
        counts: dict[str, int]

    schema = build_bundle(Registry("more", {"Shapes": Shapes}))["$defs"]["Shapes"]
    assert schema["properties"]["ratio"] == {"type": ["number", "null"]}
    assert schema["properties"]["counts"] == {"type": "object", "additionalProperties": {"type": "integer"}}
