"""Entries of shapes a model or a peer can make that JSON text, or the store's columns, cannot
hold as they are: ``NaN`` and the infinities in a tool call's arguments (a model may write them,
and the stream's parser reads them), values nested past a parser's or the encoder's depth,
integers past 64 bits. Each is stored in a form that reopens, exports and imports, on every
backend, instead of stopping the session's storing."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from session_helpers import assistant, user
from tether.session import SessionManager


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
