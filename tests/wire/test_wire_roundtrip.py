"""Round-trip law ``encode(decode(x)) == x`` over generated valid values of every seed definition.

Values come from the seed text (``wire_strategies``), carry unknown keys at every object level
and leave optional fields out at random. Each one is decoded from Python values and from JSON
bytes, re-encoded, and compared in canonical JSON (so ``1`` and ``1.0`` stay distinct); each one
is also valid against the committed schema bundle (``jsonschema``, Draft 2020-12).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
import wire_seed
from hypothesis import HealthCheck, given, settings, strategies as st
from jsonschema import Draft202012Validator
from jsonschema.protocols import Validator
from wire_strategies import Pair, pair

from narrowing import as_assistant
from tether.wire import (
    ASSISTANT_EVENT,
    CONTENT_BLOCK,
    MESSAGE,
    MESSAGES,
    MODEL_INFO,
    USAGE,
    Codec,
    decode_message,
    decode_model_info,
    dumpb,
    dumps,
)
from tether.wire.schema import build_bundle

ROLE_DEFS = wire_seed.members(wire_seed.by_name()["AgentMessage"].expr or "")
BLOCK_DEFS = wire_seed.members(wire_seed.by_name()["AssistantContent"].expr or "")
EVENT_DEFS = wire_seed.members(wire_seed.by_name()["AssistantMessageEvent"].expr or "")

CASES: list[tuple[str, Codec[Any]]] = [
    *[(name, MESSAGE) for name in ROLE_DEFS],
    *[(name, CONTENT_BLOCK) for name in BLOCK_DEFS],
    *[(name, ASSISTANT_EVENT) for name in EVENT_DEFS],
    ("AgentMessage", MESSAGE),
    ("AssistantMessageEvent", ASSISTANT_EVENT),
    ("Usage", USAGE),
    ("ModelInfo", MODEL_INFO),
]

few = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@cache
def _validator(name: str) -> Validator:
    return Draft202012Validator({**build_bundle(), "$ref": f"#/$defs/{name}"})


def _canon(value: object) -> str:
    return json.dumps(value, sort_keys=True)


def _check_round_trip(name: str, codec: Codec[Any], case: Pair) -> None:
    value, expected = case
    assert _canon(codec.decode(value)) == _canon(expected)
    decoded = codec.decode_json(dumpb(value))
    assert _canon(decoded) == _canon(expected)
    assert _canon(json.loads(dumps(decoded))) == _canon(expected)  # encode(decode(x)) == x
    _validator(name).validate(value)


@pytest.mark.parametrize(("name", "codec"), CASES, ids=[name for name, _ in CASES])
def test_round_trip(name: str, codec: Codec[Any]) -> None:
    @few
    @given(pair(name))
    def check(case: Pair) -> None:
        _check_round_trip(name, codec, case)

    check()


def test_case_list_covers_every_role_block_and_event() -> None:
    assert (len(ROLE_DEFS), len(BLOCK_DEFS), len(EVENT_DEFS)) == (11, 7, 13)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(pair("AgentMessage"), max_size=4))
def test_transcript_list_round_trips(cases: list[Pair]) -> None:
    batch = [value for value, _ in cases]
    expected = [e for _, e in cases]
    assert _canon(MESSAGES.decode_json(dumpb(batch))) == _canon(expected)
    assert _canon(MESSAGES.decode(batch)) == _canon(expected)


def _nested_message() -> dict[str, Any]:
    image = {"type": "image", "data": "aGk=", "mimeType": "image/png", "x-img": {"deep": [1, {"k": None}]}}
    return {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}},
            {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"a": {"b": [1.5, 2]}}, "extra": 1},
        ],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "m",
        "usage": {
            "input": 1,
            "output": 2,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 3,
            "cost": {
                "input": 0.1,
                "output": 0.2,
                "cacheRead": 0,
                "cacheWrite": 0,
                "total": 0.3,
                "currency": "USD",
            },
            "serviceTier": "priority",
        },
        "stopReason": "stop",
        "timestamp": 1700000000000,
        "newerField": {"image": image},
    }


def test_unknown_keys_survive_at_every_level() -> None:
    msg = _nested_message()
    assert decode_message(msg) == msg
    assert MESSAGE.decode_json(dumps(msg)) == msg
    assert json.loads(dumps(MESSAGE.decode_json(dumps(msg)))) == msg
    mention = {
        "role": "fileMention",
        "files": [{"path": "a.png", "content": "", "image": msg["newerField"]["image"], "why": "user"}],
        "timestamp": 1,
        "v": 2,
    }
    assert decode_message(mention) == mention
    irc = {"role": "user", "content": "x", "parentIrc": {"from": "p", "body": "b", "seq": 4}, "timestamp": 1}
    assert decode_message(irc) == irc


def test_decoding_returns_new_dicts_and_leaves_the_input_alone() -> None:
    msg = _nested_message()
    before = json.dumps(msg)
    decoded = decode_message(msg)
    assert decoded is not msg
    as_assistant(decoded)["content"].append({"type": "text", "text": "more"})
    assert json.dumps(msg) == before


@pytest.mark.parametrize("role", wire_seed.tag_values("AgentMessage", "role"))
def test_open_record_needs_only_its_discriminator(role: str) -> None:
    # Seed 000: clients check the discriminator and the types of the fields present, so a
    # message persisted before a field existed (or became required) still decodes.
    assert decode_message({"role": role}) == {"role": role}
    assert MESSAGE.decode_json(f'{{"role": "{role}", "later": true}}') == {"role": role, "later": True}


@pytest.mark.parametrize("kind", wire_seed.tag_values("AssistantMessageEvent", "type"))
def test_event_needs_only_its_type(kind: str) -> None:
    assert ASSISTANT_EVENT.decode({"type": kind}) == {"type": kind}


def test_record_outside_a_union_checks_its_discriminator_only_when_present() -> None:
    # The reference's normalised events carry a toolCall without `type`: nothing to pick there.
    event: dict[str, Any] = {
        "type": "toolcall_end",
        "contentIndex": 0,
        "toolCall": {"id": "c", "name": "n", "arguments": {}},
    }
    assert ASSISTANT_EVENT.decode(event) == event
    with pytest.raises(ValueError, match=r"event\.toolCall\.type: expected 'toolCall' \(got \"text\"\)"):
        ASSISTANT_EVENT.decode({**event, "toolCall": {"type": "text"}})


def test_nested_open_records_without_required_fields_decode() -> None:
    msg: dict[str, Any] = {
        "role": "assistant",
        "usage": {"input": 5, "cost": {}},
        "content": [{"type": "toolCall"}],
    }
    assert decode_message(msg) == msg


def _model() -> dict[str, Any]:
    return {
        "id": "m1",
        "name": "Model One",
        "api": "openai-completions",
        "provider": "openai",
        "baseUrl": "https://example.invalid/v1",
        "reasoning": True,
        "input": ["text", "image"],
        "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
        "contextWindow": None,
        "maxTokens": 16384,
        "thinking": {"mode": "effort", "efforts": ["low", "high"], "defaultLevel": "high"},
    }


def test_closed_records_drop_unknown_keys_at_every_level() -> None:
    model = _model()
    noisy = {
        **model,
        "releasedAt": "2025",
        "cost": {**model["cost"], "tier": "x"},
        "thinking": {**model["thinking"], "budget": 9},
    }
    assert decode_model_info(noisy) == model
    assert MODEL_INFO.decode_json(dumps(noisy)) == model


@pytest.mark.parametrize(
    ("path", "where"),
    [
        (("baseUrl",), "model.baseUrl"),
        (("contextWindow",), "model.contextWindow"),
        (("cost", "cacheWrite"), "model.cost.cacheWrite"),
        (("thinking", "efforts"), "model.thinking.efforts"),
    ],
)
def test_closed_records_enforce_required_keys(path: tuple[str, ...], where: str) -> None:
    model = _model()
    parent = model
    for key in path[:-1]:
        parent = parent[key]
    del parent[path[-1]]
    with pytest.raises(ValueError) as info:
        decode_model_info(model)
    assert str(info.value) == f"{where}: required field is missing"
