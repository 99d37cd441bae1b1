"""Decoding errors: one ``WireError`` naming the path and the value in JSON terms, never a pydantic dump."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
import wire_seed

from tether.wire import (
    ASSISTANT_EVENT,
    CONTENT_BLOCK,
    MESSAGE,
    MESSAGES,
    Codec,
    WireError,
    decode_message,
    decode_messages,
    dumps,
)

PYDANTIC_WORDS = ("pydantic", "validation error", "For further information", "tagged-union", "Input should")


def _errors(codec: Codec[Any], value: object) -> list[WireError]:
    """The error from decoding Python values and the one from decoding JSON text; both must fail."""
    out: list[WireError] = []

    def decode_json(v: object) -> Any:
        return codec.decode_json(dumps(v))

    for decode in (codec.decode, decode_json):
        with pytest.raises(WireError) as info:
            decode(value)
        out.append(info.value)
    return out


def _transcript() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "hi", "timestamp": 1},
        {"role": "assistant", "content": [], "api": "a", "provider": "p", "model": "m", "timestamp": 2},
        {
            "role": "toolResult",
            "toolCallId": "c",
            "toolName": "t",
            "content": [],
            "isError": False,
            "timestamp": 3,
        },
        {
            "role": "user",
            "content": [{"type": "text", "text": "look"}, {"type": "video", "url": "v"}],
            "timestamp": 4,
        },
    ]


def test_unknown_content_type_names_value_and_path() -> None:
    for err in _errors(MESSAGES, _transcript()):
        assert str(err) == "messages[3].content[1].type: unknown content type 'video'"
        assert (err.path, err.reason) == ("messages[3].content[1].type", "unknown content type 'video'")


def test_decode_messages_names_the_path() -> None:
    """The plain function, as callers outside the codecs use it, raises the same one-line error."""
    bad = [
        {"role": "user", "content": "hi", "timestamp": 1},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "video"}], "timestamp": 1},
    ]
    with pytest.raises(WireError) as info:
        decode_messages(bad)
    assert str(info.value) == "messages[1].content[1].type: unknown content type 'video'"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"role": "robot", "content": "x"}, "message.role: unknown message role 'robot'"),
        ({"content": "x", "timestamp": 1}, "message.role: missing discriminator 'role'"),
        ({"role": 7}, "message.role: expected a string (got 7)"),
        ({"role": "user", "content": 5}, "message.content: expected a string or an array (got 5)"),
        (
            {"role": "user", "timestamp": "yesterday"},
            'message.timestamp: expected a number (got "yesterday")',
        ),
        ({"role": "user", "timestamp": True}, "message.timestamp: expected a number (got true)"),
        ({"role": "bashExecution", "exitCode": 1.5}, "message.exitCode: expected an integer (got 1.5)"),
        (
            {"role": "user", "attribution": "bot"},
            "message.attribution: expected 'user' or 'agent' (got \"bot\")",
        ),
        (
            {"role": "assistant", "stopReason": None},
            "message.stopReason: expected 'stop', 'length', 'toolUse', 'error' or 'aborted' (got null)",
        ),
        (
            {"role": "assistant", "content": [{"text": "x"}]},
            "message.content[0].type: missing discriminator 'type'",
        ),
        (
            {"role": "assistant", "content": [{"type": "text", "text": 1}]},
            "message.content[0].text: expected a string (got 1)",
        ),
        (
            {"role": "assistant", "content": {"type": "text"}},
            'message.content: expected an array (got {"type": "text"})',
        ),
        (
            {"role": "assistant", "usage": {"cost": {"total": "1"}}},
            'message.usage.cost.total: expected a number (got "1")',
        ),
        (
            {"role": "user", "parentIrc": {"from": None}},
            "message.parentIrc.from: expected a string (got null)",
        ),
        (
            {"role": "fileMention", "files": [{"image": {"type": "image", "data": 1}}]},
            "message.files[0].image.data: expected a string (got 1)",
        ),
        (
            {"role": "toolResult", "content": [{"type": "thinking"}]},
            "message.content[0].type: unknown content type 'thinking'",
        ),
        ({"role": "custom", "display": "yes"}, 'message.display: expected a boolean (got "yes")'),
        (
            {"role": "assistant", "content": [{"type": "toolCall", "arguments": list[object]()}]},
            "message.content[0].arguments: expected an object (got [])",
        ),
        ("hello", 'message: expected an object (got "hello")'),
    ],
)
def test_error_texts(value: object, expected: str) -> None:
    for err in _errors(MESSAGE, value):
        assert str(err) == expected


def test_tag_that_is_also_a_key_is_not_mistaken_for_a_step() -> None:
    # {"type": "text", "text": ...}: pydantic's location has "text" twice (tag, then field).
    err = _errors(CONTENT_BLOCK, {"type": "text", "text": ["a"]})[0]
    assert str(err) == 'content.text: expected a string (got ["a"])'
    # {"type": "error", "error": ...}: the event's tag is the name of its message field.
    err = _errors(ASSISTANT_EVENT, {"type": "error", "error": {"role": "assistant", "model": 3}})[0]
    assert str(err) == "event.error.model: expected a string (got 3)"


def test_event_errors() -> None:
    assert (
        str(_errors(ASSISTANT_EVENT, {"type": "text_stop"})[0])
        == "event.type: unknown event type 'text_stop'"
    )
    err = _errors(ASSISTANT_EVENT, {"type": "done", "reason": "error"})[0]
    assert str(err) == "event.reason: expected 'stop', 'length' or 'toolUse' (got \"error\")"
    err = _errors(
        ASSISTANT_EVENT, {"type": "text_delta", "partial": {"role": "assistant", "content": [{"type": "x"}]}}
    )[0]
    assert str(err) == "event.partial.content[0].type: unknown content type 'x'"


def test_invalid_json_is_a_wire_error() -> None:
    with pytest.raises(WireError) as info:
        MESSAGES.decode_json(b'[{"role": "user", ')
    assert info.value.path == "messages"
    assert info.value.reason.startswith("invalid JSON: ")


def test_caller_chooses_the_root_of_the_path() -> None:
    with pytest.raises(WireError) as info:
        decode_message({"role": "nope"}, path="entries[12].message")
    assert str(info.value) == "entries[12].message.role: unknown message role 'nope'"
    with pytest.raises(WireError) as info:
        decode_messages([{"role": "user"}, 3], path="context.messages")
    assert str(info.value) == "context.messages[1]: expected an object (got 3)"


def test_long_values_are_shortened() -> None:
    err = _errors(MESSAGE, {"role": "user", "timestamp": "x" * 500})[0]
    assert len(str(err)) < 120
    assert str(err).endswith("...)")


# --- every field of every role, block and event: a wrong type is reported at that field ----------


def _accepts(expr: str, value: object) -> bool:
    """Whether the seed type ``expr`` admits ``value`` at the top level (arrays: any list)."""
    for alt in wire_seed.members(expr):
        if alt.endswith("[]"):
            ok = isinstance(value, list)
        elif alt.startswith("'"):
            ok = value == alt[1:-1]
        elif alt == "string":
            ok = isinstance(value, str)
        elif alt == "boolean":
            ok = isinstance(value, bool)
        elif alt == "number":
            ok = isinstance(value, int | float) and not isinstance(value, bool)
        elif alt == "number.integer":
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif alt == "null":
            ok = value is None
        elif alt == "unknown":
            ok = True
        elif alt == "Record":
            ok = isinstance(value, dict)
        else:
            named = wire_seed.by_name()[alt]
            ok = _accepts(named.expr, value) if named.expr is not None else isinstance(value, dict)
        if ok:
            return True
    return False


WRONG_CANDIDATES: list[object] = [{"k": 1}, 2.5, "text", True, None]


def _field_cases() -> list[tuple[str, str, Codec[Any], str, object]]:
    cases: list[tuple[str, str, Codec[Any], str, object]] = []
    groups = [
        ("AgentMessage", "role", MESSAGE, "message"),
        ("AssistantContent", "type", CONTENT_BLOCK, "content"),
        ("AssistantMessageEvent", "type", ASSISTANT_EVENT, "event"),
    ]
    for union, tag_field, codec, root in groups:
        expr = wire_seed.by_name()[union].expr or ""
        for member in wire_seed.members(expr):
            fields = wire_seed.by_name()[member].fields
            (tag,) = wire_seed.literals(next(f.expr for f in fields if f.name == tag_field))
            for field in fields:
                if field.name == tag_field or field.expr == "unknown":
                    continue
                wrong = next(v for v in WRONG_CANDIDATES if not _accepts(field.expr, v))
                cases.append(
                    (member, field.name, codec, f"{root}.{field.name}", {tag_field: tag, field.name: wrong})
                )
    return cases


FIELD_CASES = _field_cases()


@pytest.mark.parametrize(
    ("definition", "field", "codec", "path", "value"),
    FIELD_CASES,
    ids=[f"{c[0]}.{c[1]}" for c in FIELD_CASES],
)
def test_wrong_field_type_names_the_field(
    definition: str, field: str, codec: Codec[Any], path: str, value: object
) -> None:
    for err in _errors(codec, value):
        assert err.path == path
        assert err.reason.startswith("expected "), err.reason
        bad = cast(dict[str, object], value)[field] if isinstance(value, dict) else None
        assert err.reason.endswith(f"(got {json.dumps(bad)})")
        assert not any(word in str(err) for word in PYDANTIC_WORDS)


def test_field_cases_cover_every_role_block_and_event() -> None:
    covered = {definition for definition, *_ in FIELD_CASES}
    assert len(covered) == 11 + 7 + 13
