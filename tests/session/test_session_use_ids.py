"""``Session.use_ids``: appends with given ids, as a replayed durable run makes them, write an
entry once; a replay that diverges from what is stored is refused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from narrowing import content_of
from tether.session import SessionManager
from tether.store.ids import decode, encode, new_id
from tether.store.store import SessionError
from tether.wire import AgentMessage


def ids_from(base: str) -> Callable[[], str]:
    numbers = iter(range(1_000))
    return lambda: encode(decode(base) + next(numbers))


def user(text: str) -> AgentMessage:
    return {"role": "user", "content": text, "timestamp": 1}


def test_a_replayed_append_is_not_written_again(manager: SessionManager, tmp_path: Path) -> None:
    session = manager.create(tmp_path)
    base = new_id()
    session.use_ids(ids_from(base))
    first = session.append_messages([user("one")])
    session.set_thinking_level("high")
    session.close()
    stored = manager.store.entries(session.id)
    record = manager.store.get_session(session.id)

    replay = manager.open(session.id)
    replay.branch(None)  # back to where the run started
    replay.use_ids(ids_from(base))
    assert replay.append_messages([user("one")]) == first
    replay.set_thinking_level("high")
    replay.append_message(user("two"))
    assert manager.store.entries(session.id)[:2] == stored
    assert len(manager.store.entries(session.id)) == 3
    assert replay.record.entry_count == record.entry_count + 1
    assert [content_of(m) for m in replay.messages] == ["one", "two"]
    replay.close()


def test_a_diverging_replay_is_refused(manager: SessionManager, tmp_path: Path) -> None:
    session = manager.create(tmp_path)
    base = new_id()
    session.use_ids(ids_from(base))
    session.append_message(user("one"))
    session.branch(None)
    session.use_ids(ids_from(base))
    with pytest.raises(SessionError, match="replayed as a thinking_level_change where a message is stored"):
        session.set_thinking_level("high")
    session.close()


def test_a_replayed_message_is_known_as_its_stored_entry(manager: SessionManager, tmp_path: Path) -> None:
    """The replay's message object is not the one the tree holds (that was read back), yet the
    session knows it by the stored entry's id: ``AgentSession`` must not append it again,
    also after the context was rebuilt."""
    session = manager.create(tmp_path)
    base = new_id()
    session.use_ids(ids_from(base))
    first = session.append_messages([user("one")])
    session.close()

    replay = manager.open(session.id)
    replay.branch(None)
    replay.use_ids(ids_from(base))
    again = user("one")
    replay.append_messages([again])
    assert replay.message_id(again) == first[0]
    assert replay.message_ids([again, user("one")]) == [first[0], None]
    replay.branch(replay.leaf_id)  # a rebuilt context (a new object) drops only what it made itself
    replay.message_ids(replay.messages)
    assert replay.message_id(again) == first[0]
    replay.close()
