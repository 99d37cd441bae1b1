"""Entries of shapes a model or a peer can make that JSON text, or the store's columns, cannot
hold as they are: ``NaN`` and the infinities in a tool call's arguments (a model may write them,
and the stream's parser reads them), values nested past a parser's or the encoder's depth,
integers past 64 bits. Each is stored in a form that reopens, exports and imports, on every
backend, instead of stopping the session's storing."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any, cast

import pytest

from session_helpers import assistant, user
from tether.session import SessionManager
from tether.store.jsonl import ImportFormatError
from tether.wire.json_line import CUT_DEPTH, CUT_MARK


def _strict(text: str) -> Any:
    """``text`` parsed as a JSON parser that is not Python's reads it (``JSON.parse``, jsonb):
    ``NaN`` and ``Infinity`` are no JSON."""

    def refuse(constant: str) -> object:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_nan_and_infinities_in_arguments_are_stored_as_null_and_the_export_imports(
    manager: SessionManager, tmp_path: Path
) -> None:
    session = manager.create("/p")
    arguments = {"x": math.nan, "y": [math.inf, -math.inf], "z": 1.5}
    session.append_message(
        assistant({"type": "toolCall", "id": "c1", "name": "calc", "arguments": arguments})
    )
    session.append_message(user("next"))
    session.close()
    reopened = manager.open(session.id, readonly=True)
    stored: list[Any] = reopened.messages
    reopened.close()
    assert stored[0]["content"][0]["arguments"] == {"x": None, "y": [None, None], "z": 1.5}
    assert [m["role"] for m in stored] == ["assistant", "user"]
    exported = manager.export(session.id, tmp_path / "s.jsonl")
    lines = [_strict(line) for line in exported.read_text().splitlines()]
    assert lines[1]["message"]["content"][0]["arguments"] == {"x": None, "y": [None, None], "z": 1.5}
    manager.delete(session.id)
    imported = manager.import_file(exported)
    again = manager.open(imported.id, readonly=True)
    assert again.messages == stored
    again.close()


def test_an_export_holding_nan_imports_with_null(manager: SessionManager, tmp_path: Path) -> None:
    """An older tether stored ``NaN`` as it is in SQLite, and exported it so: such a file imports,
    the value ``null`` as it is stored now."""
    session = manager.create("/p")
    session.append_message(
        assistant({"type": "toolCall", "id": "c1", "name": "calc", "arguments": {"x": 1.0}})
    )
    session.close()
    exported = manager.export(session.id, tmp_path / "s.jsonl")
    manager.delete(session.id)
    exported.write_text(exported.read_text().replace('"x":1.0', '"x":NaN,"y":-Infinity'))
    imported = manager.import_file(exported)
    again = manager.open(imported.id, readonly=True)
    messages: list[Any] = again.messages
    again.close()
    assert messages[0]["content"][0]["arguments"] == {"x": None, "y": None}


def _nested(depth: int) -> dict[str, Any]:
    """An object ``depth`` levels deep: ``{"a": {"a": ... {} ...}}``."""
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def _depth(value: object) -> int:
    depth = 1
    while isinstance(value, dict) and value:
        value = next(iter(cast(dict[str, Any], value).values()))
        depth += 1
    return depth


def _call(arguments: dict[str, Any]) -> Any:
    return assistant({"type": "toolCall", "id": "c1", "name": "calc", "arguments": arguments})


def test_an_entry_nested_past_the_fast_parsers_limit_reopens_and_exports(
    manager: SessionManager, tmp_path: Path
) -> None:
    """jiter (the store's parser) stops at 254 levels; the standard library's reads it."""
    session = manager.create("/p")
    session.append_message(_call(_nested(400)))
    session.append_message(user("next"))
    session.close()
    reopened = manager.open(session.id, readonly=True)
    stored: list[Any] = reopened.messages
    reopened.close()
    assert _depth(stored[0]["content"][0]["arguments"]) == 400
    exported = manager.export(session.id, tmp_path / "s.jsonl")
    manager.delete(session.id)
    again = manager.open(manager.import_file(exported).id, readonly=True)
    imported: list[Any] = again.messages
    again.close()
    assert _depth(imported[0]["content"][0]["arguments"]) == 400


def test_an_entry_deeper_than_the_encoder_goes_is_stored_cut_and_the_session_goes_on(
    manager: SessionManager, caplog: pytest.LogCaptureFixture
) -> None:
    session = manager.create("/p")
    with caplog.at_level(logging.WARNING, "tether.store"):
        session.append_message(_call({"deep": _nested(5000)}))
        session.append_message(user("next"))
    session.close()
    reopened = manager.open(session.id, readonly=True)
    stored: list[Any] = reopened.messages
    entry_id = reopened.path()[0]["id"]
    reopened.close()
    assert [m["role"] for m in stored] == ["assistant", "user"]
    arguments = stored[0]["content"][0]["arguments"]
    levels = 0
    while isinstance(arguments, dict):
        arguments = next(iter(cast(dict[str, Any], arguments).values()))
        levels += 1
    # the entry, its message, the content list and the call are the first four of the levels kept
    assert (levels, arguments) == (CUT_DEPTH - 4, CUT_MARK)
    assert [r.getMessage() for r in caplog.records] == [
        f"entry {entry_id} (message) is nested deeper than tether can store: stored cut at {CUT_DEPTH} levels"
    ]


def test_integers_beyond_64_bits_in_arguments_are_kept_through_an_export(
    manager: SessionManager, tmp_path: Path
) -> None:
    """Only the store's own 64-bit columns (times, the listing's token sums) need 64 bits: a
    model's arguments may hold any integer JSON writes, and an export of them imports."""
    session = manager.create("/p")
    session.append_message(_call({"n": 2**100, "m": -(2**70)}))
    session.close()
    exported = manager.export(session.id, tmp_path / "s.jsonl")
    manager.delete(session.id)
    again = manager.open(manager.import_file(exported).id, readonly=True)
    imported: list[Any] = again.messages
    again.close()
    assert imported[0]["content"][0]["arguments"] == {"n": 2**100, "m": -(2**70)}


@pytest.mark.parametrize("key", ["created", "updated"])
def test_a_header_time_beyond_64_bits_is_one_line_naming_it(
    manager: SessionManager, tmp_path: Path, key: str
) -> None:
    session = manager.create("/p")
    session.append_message(user("hi"))
    session.close()
    exported = manager.export(session.id, tmp_path / "s.jsonl")
    manager.delete(session.id)
    lines = exported.read_text().splitlines()
    header = json.loads(lines[0])
    header[key] = 2**64
    exported.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    with pytest.raises(ImportFormatError) as raised:
        manager.import_file(exported)
    assert str(raised.value) == f"s.jsonl:1: header.{key} must be a time in Unix ms, not {2**64}"
    assert manager.list() == []
