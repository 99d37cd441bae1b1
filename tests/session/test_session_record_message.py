"""``Session.record_message`` writes a run's message by a straight path of its own (deferred
writes, ids from the clock), a one-message twin of ``append_messages``' general one (``_append``
and ``_write``). The two must leave the same entries, tree, context and row for the same messages,
so a change made to one path alone fails here."""

from __future__ import annotations

import copy
import itertools
import time
from typing import Any

import pytest

from session_helpers import MODEL, assistant, call, result, text, user
from tether.session import Session, SessionManager
from tether.store.ids import timestamp_ms
from tether.wire import AgentMessage


def _messages() -> list[AgentMessage]:
    return [
        user("read the notes"),
        assistant(call("c1", path="notes.txt"), tokens=120),
        result("c1", "the notes"),
        assistant(text("done"), tokens=150),
        user("and again"),
    ]


def _shape(entries: list[dict[str, Any]]) -> list[tuple[object, ...]]:
    """Each entry as JSON writes it (its keys in order), its parent as a position, its id and time
    (which differ between two sessions) left out."""
    position = {entry["id"]: i for i, entry in enumerate(entries)}
    shape: list[tuple[object, ...]] = []
    for entry in entries:
        held = {k: v for k, v in entry.items() if k not in ("id", "parentId", "timestamp")}
        shape.append((list(entry), position.get(entry["parentId"]), held))
    return shape


def _state(session: Session) -> dict[str, object]:
    entries = session.entries()
    position = {entry["id"]: i for i, entry in enumerate(entries)}
    return {
        "entries": _shape(entries),
        "path": [position[e["id"]] for e in session.path()],
        "leaf": position[session.leaf_id or ""],
        "context": (session.messages, [position[i] for i in session.context.entry_ids]),
        "tokens": session.context.tokens,
        "known": [position.get(i or "") for i in session.message_ids(session.messages)],
    }


def test_recording_a_message_leaves_what_appending_it_leaves(manager: SessionManager) -> None:
    recorded = manager.create("/p", model=MODEL, deferred=True)
    appended = manager.create("/p", model=MODEL, deferred=True)
    for session in (recorded, appended):
        session.set_system_prompt("be brief")
        session.append_message(user("stored before the run"))  # stores the session
        session.defer_writes()
    for message in _messages():
        recorded.record_message(message, checked=True)
        appended.append_messages([copy.deepcopy(message)], checked=True)
        assert _state(recorded) == _state(appended)
    for session in (recorded, appended):
        session.flush_writes()
    rows = [
        (r.entry_count, r.message_count, r.first_prompt, r.leaf_id is not None)
        for r in (recorded.record, appended.record)
    ]
    assert rows[0] == rows[1]
    for session in (recorded, appended):
        session.close()
    reopened = [manager.open(s.id, readonly=True) for s in (recorded, appended)]
    assert _state(reopened[0]) == _state(reopened[1])
    for session in reopened:
        session.close()


def test_an_entrys_id_holds_its_timestamp_on_both_paths(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The clock is read once an entry: its id encodes the millisecond its ``timestamp`` says,
    on the general path (settings, a direct append) and on ``record_message``'s. Read twice, a
    clock that moves between the reads gave the id another time than the entry."""
    real = time.time_ns
    ticks = itertools.count(1)
    monkeypatch.setattr(time, "time_ns", lambda: real() + next(ticks) * 1_000_000)  # a ms a read
    session = manager.create("/p", model=MODEL, deferred=True)
    session.set_system_prompt("be brief")
    session.append_message(user("stored before the run"))
    session.defer_writes()
    for message in _messages():
        session.record_message(message, checked=True)
    session.flush_writes()
    entries = session.entries()
    assert len(entries) == 8  # model, thinking level, prompt, 1 + 5 messages
    assert [timestamp_ms(e["id"]) for e in entries] == [e["timestamp"] for e in entries]
    session.close()
