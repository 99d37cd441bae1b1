"""The schema bundle ``tether schema`` prints: committed copy, validity, and the x-rpc section."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from jsonschema import Draft202012Validator
from rpc_support import BUNDLE, check_frame

from tether.rpc import COMMANDS, EVENT_TYPES
from tether.rpc.schema import COMMITTED, build, bundle_json
from tether.wire.schema import build_bundle


def test_committed_bundle_is_current() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == bundle_json(), (
        "src/tether/rpc/schema.json is stale: run `make schema` and commit it"
    )


def test_bundle_is_valid_2020_12_and_every_ref_resolves() -> None:
    bundle = build()
    Draft202012Validator.check_schema(bundle)
    text = json.dumps(bundle)
    refs = {part.split('"')[0] for part in text.split('"$ref": "#/$defs/')[1:]}
    assert refs and refs <= set(bundle["$defs"])
    rpc = bundle["x-rpc"]
    for target in [*(c["params"] for c in rpc["commands"].values()), rpc["serverFrames"], rpc["events"]]:
        assert target.removeprefix("#/$defs/") in bundle["$defs"]


def test_bundle_holds_the_wire_defs_unchanged_and_marks_open_records() -> None:
    bundle = build()
    wire = build_bundle()["$defs"]
    assert {k: bundle["$defs"][k] for k in wire} == wire
    assert bundle["$defs"]["ResponseFrame"]["x-open"] is True
    assert "x-open" not in bundle["$defs"]["PromptCommand"]  # commands: unknown keys are ignored


def test_x_rpc_lists_every_command_and_event() -> None:
    rpc = BUNDLE["x-rpc"]
    assert list(rpc["commands"]) == list(COMMANDS)
    assert rpc["eventTypes"] == list(EVENT_TYPES)
    assert rpc["commands"]["get_state"] == {
        "params": "#/$defs/GetStateCommand",
        "result": "#/$defs/SessionState",
    }
    assert rpc["commands"]["prompt"]["result"] == "#/$defs/PromptAccepted"
    assert rpc["commands"]["abort"]["result"] is None
    event_refs = {s["$ref"].removeprefix("#/$defs/") for s in BUNDLE["$defs"]["Event"]["oneOf"]}
    consts = {BUNDLE["$defs"][r]["properties"]["type"]["const"] for r in event_refs}
    assert consts == set(EVENT_TYPES)


@pytest.mark.subprocess
def test_cli_prints_the_bundle() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli", "schema"], capture_output=True, text=True, check=True
    )
    assert done.stdout == bundle_json()


@pytest.mark.parametrize(
    ("frame", "why"),
    [
        ({"type": "response", "command": "get_state", "success": True, "data": {}}, "SessionState"),
        ({"type": "response", "command": "abort", "success": True, "data": 1}, "without data"),
        ({"type": "prompt_result", "status": "done"}, "schema"),
        ({"type": "message_end"}, "schema"),
        ({"type": "surprise"}, "schema"),
    ],
)
def test_the_frame_check_rejects_bad_frames(frame: dict[str, object], why: str) -> None:
    with pytest.raises(AssertionError, match=why):
        check_frame(frame)


@pytest.mark.subprocess
def test_the_rpc_package_needs_only_the_wire_layer() -> None:
    """A host application imports the client without the agent runtime (layering: rpc -> wire).

    ``tether._lazy``, ``tether._version`` and ``tether.errors`` are the root leaves, below every
    layer."""
    code = (
        "import sys, tether.rpc; from tether.rpc import RpcClient; "
        "print(sorted(m for m in sys.modules if m.startswith('tether.') "
        "and not m.startswith(('tether.wire', 'tether.rpc')) "
        "and m not in ('tether._lazy', 'tether._version', 'tether.errors')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
