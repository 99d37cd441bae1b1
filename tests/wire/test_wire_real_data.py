"""Real messages, events and model descriptors through the decoder and the committed bundle.

Sources (``reference/``): the final ``message``, the ``events`` and the ``model`` of the reference's
expected result for each of the 40 recorded provider streams, and every message and assistant event
in the 29 agent-loop conformance traces. These are normalised by their producers (no
timestamps, signatures replaced by ``signed``), which is exactly the case the seed's open records
are for: decoding checks the discriminator and the types present and keeps the rest. Against the
JSON Schema they are checked twice: as written, against the reader's view of the bundle (an
``x-open`` record requires no key, but a ``oneOf`` union still needs the discriminator to match
exactly one member), and, for fixture messages with the timestamp
that the fixture README says was left out put back, against the bundle as it is.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.protocols import Validator

from reference_paths import CONFORMANCE, FIXTURE_STREAMS, REPO_ROOT
from tether.wire import (
    ASSISTANT_EVENT,
    MESSAGE,
    MESSAGES,
    WireError,
    decode_message,
    decode_model_info,
    dumps,
)

FIXTURES = sorted(FIXTURE_STREAMS.glob("*/*.expected.json"))
TRACES = sorted((CONFORMANCE / "traces").glob("*.json"))
COMMITTED = REPO_ROOT / "src" / "tether" / "wire" / "schema.json"


def test_real_data_is_there() -> None:
    assert len(FIXTURES) == 40
    assert len(TRACES) >= 29


@cache
def _bundle(reader_view: bool) -> dict[str, Any]:
    bundle = json.loads(COMMITTED.read_text(encoding="utf-8"))
    if reader_view:
        for schema in bundle["$defs"].values():
            if schema.get("x-open"):
                schema["required"] = []
    return bundle


def _validator(name: str, reader_view: bool) -> Validator:
    return Draft202012Validator({**_bundle(reader_view), "$ref": f"#/$defs/{name}"})


def _check_message(message: dict[str, Any]) -> None:
    assert decode_message(message) == message
    assert MESSAGE.decode_json(dumps(message)) == message
    assert json.loads(dumps(MESSAGE.decode_json(dumps(message)))) == message
    _validator("AgentMessage", reader_view=True).validate(message)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name.split('.')[0]}")
def test_fixture_message_and_events(path: Path) -> None:
    expected = json.loads(path.read_text(encoding="utf-8"))
    message = expected["message"]
    _check_message(message)

    complete = {**message, "timestamp": 0}
    _validator("AgentMessage", reader_view=False).validate(complete)
    assert decode_message(complete) == complete

    for event in expected["events"]:
        assert ASSISTANT_EVENT.decode(event) == event
        _validator("AssistantMessageEvent", reader_view=True).validate(event)


@pytest.mark.parametrize("path", FIXTURES[:5], ids=lambda p: p.name.split(".")[0])
def test_fixture_model_is_a_closed_record(path: Path) -> None:
    model = json.loads(path.read_text(encoding="utf-8"))["model"]
    # The fixtures leave out baseUrl (it pointed at the replay server): a closed record says so.
    with pytest.raises(WireError) as info:
        decode_model_info(model)
    assert str(info.value) == "model.baseUrl: required field is missing"
    full = {**model, "baseUrl": "http://127.0.0.1:1/v1"}
    assert decode_model_info(full) == full
    _validator("ModelInfo", reader_view=False).validate(full)


def _trace_items(trace: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    messages: list[dict[str, Any]] = [*trace["result"]]
    events: list[dict[str, Any]] = []
    for request in trace["requests"]:
        messages.extend(request["messages"])
    for event in trace["events"]:
        if "message" in event:
            messages.append(event["message"])
        messages.extend(event.get("messages", []))
        messages.extend(event.get("toolResults", []))
        if event["type"] == "message_update":
            events.append(event["event"])
    return messages, events


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.stem)
def test_conformance_trace_messages(path: Path) -> None:
    trace = json.loads(path.read_text(encoding="utf-8"))
    messages, events = _trace_items(trace)
    assert messages
    for message in messages:
        _check_message(message)
    assert MESSAGES.decode(trace["result"]) == trace["result"]
    for event in events:
        assert ASSISTANT_EVENT.decode_json(dumps(event)) == event
        _validator("AssistantMessageEvent", reader_view=True).validate(event)


def test_reader_view_still_rejects_bad_discriminators() -> None:
    message = copy.deepcopy(json.loads(FIXTURES[0].read_text(encoding="utf-8"))["message"])
    message["content"][0]["type"] = "video"
    assert not _validator("AgentMessage", reader_view=True).is_valid(message)
    with pytest.raises(WireError, match=r"message\.content\[0\]\.type: unknown content type 'video'"):
        decode_message(message)
