"""A session header is a file's first line and nothing else: one further down a tether export
(two files joined, a header an older import stored as an entry and exported again) is no entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from narrowing import content_of
from session_helpers import user
from tether.session import SessionManager
from tether.store.jsonl import ImportFormatError


def test_a_header_in_the_middle_of_an_export_is_refused_by_its_line(
    manager: SessionManager, tmp_path: Path
) -> None:
    session = manager.create("/p")
    session.append_message(user("one"))
    session.append_message(user("two"))
    session.close()
    exported = manager.export(session.id, tmp_path / "s.jsonl")
    manager.delete(session.id)
    lines = exported.read_text().splitlines()
    exported.write_text("\n".join([*lines[:2], lines[0], *lines[2:]]) + "\n")
    with pytest.raises(ImportFormatError) as raised:
        manager.import_file(exported)
    assert str(raised.value) == "s.jsonl:3: a second session header, not an entry"
    assert manager.list() == []


def test_a_header_stored_as_an_entry_is_left_out_of_the_export_with_a_note(
    manager: SessionManager, tmp_path: Path
) -> None:
    """What an older import stored of a file with a second header: an entry of type "session",
    which the context passes over, but an export wrote as a line no import takes."""
    session = manager.create("/p")
    first = session.append_message(user("one"))
    session.close()
    header = {"type": "session", "format": "tether.session", "version": 1, "id": "old", "cwd": "/p"}
    store = manager.store
    lease = store.acquire_writer(session.id)
    try:
        after = {"type": "message", "id": "after", "timestamp": 3, "message": user("two")}
        entries = [{**header, "id": "h", "parentId": first, "timestamp": 2}, {**after, "parentId": "h"}]
        store.append(lease, entries, "after", 3)
    finally:
        lease.release()
    notes: list[str] = []
    exported = manager.export(session.id, tmp_path / "s.jsonl", on_skip=notes.append)
    assert notes == ["entry 'h': a session header stored as an entry (an older import's), left out"]
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert [(e["type"], e.get("parentId")) for e in lines[1:]] == [("message", None), ("message", first)]
    manager.delete(session.id)
    again = manager.open(manager.import_file(exported).id, readonly=True)
    assert [content_of(m) for m in again.messages] == ["one", "two"]
    again.close()
