"""A read-only session following another writer (``Session.catch_up``, ``AgentSession.follow``):
after every kind of change it is what a fresh open would be, and a follower of a long session
takes in each new entry without reading the session again."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

from session_helpers import MODEL, assistant, call, result, text, user
from tether.agent import Agent
from tether.session import Session, SessionManager
from tether.session.agent_session import AgentSession
from tether.store import open_store
from tether.store.follow import SessionChange, follow_changes
from tether.store.store import SessionStore, StoredEntry

CHANGE_TIMEOUT = 30.0
"""Only a guard against a hung follower; a change normally arrives within one wake-up."""


def _same_view(follower: Session, fresh: Session) -> None:
    assert follower.record == fresh.record
    assert follower.leaf_id == fresh.leaf_id
    assert follower.messages == fresh.messages
    assert follower.context.entry_ids == fresh.context.entry_ids
    assert follower.context.model == fresh.context.model
    assert [e["id"] for e in follower.entries()] == [e["id"] for e in fresh.entries()]


def test_catch_up_matches_a_fresh_open_after_every_kind_of_change(
    manager: SessionManager, store_location: str
) -> None:
    writer = manager.create("/p")
    first = writer.append_message(user("hello"))
    with SessionManager.at(store_location) as other:  # another connection, as another process has
        follower = other.open(writer.id, readonly=True)
        changes = follow_changes(other.store, writer.id, after=follower.last_entry_id)

        def step() -> SessionChange:
            change = next(changes)
            follower.catch_up(change.record, change.entries)
            with other.open(writer.id, readonly=True) as fresh:
                _same_view(follower, fresh)
            return change

        context = follower.context
        writer.append_messages([assistant(text("hi"), call("c1", path="a.py")), result("c1", "1\tx")])
        step()
        assert follower.context is context  # extended in place, not rebuilt
        writer.set_model(MODEL)
        writer.append_message(assistant(text("read it")))
        step()
        assert follower.context is context and follower.context.model is not None
        writer.rename("a title")
        writer.label(first, "start")
        step()
        assert follower.title == "a title" and follower.labels() == {first: "start"}

        writer.branch(first)  # the leaf moves back, with no new entry
        change = step()
        assert change.entries == [] and follower.leaf_id == first
        writer.append_message(user("another way"))
        step()
        writer.branch(first, summary="tried one way")
        step()
        kept = writer.append_message(user("kept"))
        writer.append_message(assistant(text("noted")))
        writer.append_compaction("all of it, briefly", kept, tokens_before=100)
        step()
        assert follower.messages[0]["role"] == "compactionSummary"
        writer.append_message(user("after the compaction"))
        step()
        assert follower.messages[-1] == user("after the compaction")
        changes.close()
    writer.close()


def test_entries_read_past_the_row_s_leaf_join_the_context_with_the_next_row(manager: SessionManager) -> None:
    """A change's row is read before its entries, so the writer may append in between: those
    entries are in the tree at once, and in the context once a row names a leaf under them."""
    writer = manager.create("/p")
    writer.append_message(user("one"))
    follower = manager.open(writer.id, readonly=True)
    stale = manager.store.get_session(writer.id)
    writer.append_messages([assistant(text("two")), user("three")])
    context = follower.context
    follower.catch_up(stale, manager.store.entries_after(writer.id, follower.last_entry_id))
    assert [m["role"] for m in follower.messages] == ["user"] and len(follower.entries()) == 3
    follower.catch_up(manager.store.get_session(writer.id), [])
    assert follower.context is context
    assert follower.messages == writer.messages and follower.record == manager.store.get_session(writer.id)
    writer.close()


class CountingStore:
    """A store that counts the entry rows it hands out: what following a session costs."""

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner
        self.rows = 0
        self.whole_reads = 0

    def entries(self, session_id: str) -> list[StoredEntry]:
        self.whole_reads += 1
        rows = self.inner.entries(session_id)
        self.rows += len(rows)
        return rows

    def entries_after(self, session_id: str, entry_id: str | None) -> list[StoredEntry]:
        rows = self.inner.entries_after(session_id, entry_id)
        self.rows += len(rows)
        return rows

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _conversation(start: int, count: int) -> Iterator[Any]:
    for i in range(start, start + count):
        yield user(f"question {i}") if i % 2 == 0 else assistant(text(f"answer {i}"))


async def test_a_follower_of_a_10000_entry_session_reads_each_new_entry_once(
    manager: SessionManager, store_location: str
) -> None:
    writer = manager.create("/p")
    for start in range(0, 10_000, 1_000):
        writer.append_messages(list(_conversation(start, 1_000)))
    store = open_store(store_location)  # another connection, as another process has
    counting = CountingStore(store)
    sessions = SessionManager(counting)  # type: ignore[arg-type]  # a SessionStore by delegation
    core = AgentSession(Agent(), sessions.open(writer.id, readonly=True), sessions=sessions)
    assert (counting.whole_reads, counting.rows) == (1, 10_000)  # opening it reads it, once
    ended: asyncio.Queue[Any] = asyncio.Queue()
    core.subscribe(
        lambda event: ended.put_nowait(event["message"]) if event["type"] == "message_end" else None
    )
    stop = threading.Event()
    following = asyncio.ensure_future(core.follow(stop))
    try:
        for i in range(20):
            await asyncio.to_thread(writer.append_message, user(f"live {i}"))
            seen = await asyncio.wait_for(ended.get(), CHANGE_TIMEOUT)
            assert seen["content"] == f"live {i}"
    finally:
        stop.set()
        await following
    assert (counting.whole_reads, counting.rows) == (1, 10_020)  # each new entry read once, nothing again
    assert len(core.messages) == 10_020 and core.messages == writer.messages
    await core.close()
    writer.close()
    store.close()
