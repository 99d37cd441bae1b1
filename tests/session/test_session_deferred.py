"""A session is stored with its first message (``SessionManager.create(deferred=True)``, what
every front end does): before it, settings, a title and custom entries are held in the handle;
a session closed without one leaves nothing behind; ``resume`` and the listings skip sessions
without a message. Run on SQLite and PostgreSQL (the ``manager`` fixture)."""

from __future__ import annotations

from pathlib import Path

import pytest

from session_helpers import MODEL, assistant, text, user
from tether.session import AgentSession, SessionManager
from tether.session.factory import SessionChoice, create_agent_session
from tether.session.options import AgentOptions
from tether.session.settings import Settings
from tether.store import SessionError, SessionNotFoundError


def test_nothing_is_stored_until_the_first_message_then_everything_is(manager: SessionManager) -> None:
    s = manager.create("/p", model=MODEL, thinking_level="high", title="draft", deferred=True)
    s.append_custom("myext.state", {"n": 1})
    s.rename("Named before any message")
    assert not s.stored and not s.readonly
    assert s.title == "Named before any message" and s.context.thinking_level == "high"
    assert manager.list() == []
    with pytest.raises(SessionNotFoundError):
        manager.store.get_session(s.id)

    first = s.append_message(user("hello"))
    assert s.stored
    s.append_message(assistant(text("hi")))
    held = len(s.entries()) - 2
    s.close()

    (record,) = manager.list()
    assert record.id == s.id and record.first_prompt == "hello"
    assert (record.entry_count, record.message_count) == (held + 2, 2)
    assert record.title == "Named before any message"
    reopened = manager.open(s.id)
    assert reopened.leaf_id == s.leaf_id and [e["id"] for e in reopened.entries()] == [
        e["id"] for e in s.entries()
    ]
    assert reopened.context.model is not None and reopened.context.model.model_id == MODEL["id"]
    assert reopened.context.thinking_level == "high"
    assert reopened.context.entry_ids[0] == first
    reopened.close()


def test_a_session_closed_without_a_message_leaves_nothing(manager: SessionManager) -> None:
    s = manager.create("/p", model=MODEL, deferred=True)
    s.set_system_prompt("be brief")
    s.close()
    assert s.readonly and not s.stored
    assert manager.list() == []
    assert manager.resume("/p") is None


def test_a_branch_before_the_first_message_is_kept(manager: SessionManager) -> None:
    s = manager.create("/p", deferred=True)
    s.set_thinking_level("low")
    s.branch(None)  # back to before the first entry
    s.set_thinking_level("high")
    s.append_message(user("after the branch"))
    s.close()
    reopened = manager.open(s.id, readonly=True)
    assert reopened.context.thinking_level == "high"
    assert len(reopened.entries()) == 3 and len(reopened.path()) == 2


async def test_with_deferred_writes_the_first_message_is_committed_by_the_writer(
    manager: SessionManager,
) -> None:
    s = manager.create("/p", model=MODEL, deferred=True)
    s.defer_writes()
    s.append_message(user("one"))
    s.append_message(assistant(text("two")))
    await s.settle_writes()
    s.close()
    (record,) = manager.list()
    assert (record.message_count, record.entry_count) == (2, 3)


async def test_a_sessions_row_counts_its_queued_appends_before_and_after_they_are_committed(
    manager: SessionManager,
) -> None:
    """Appends queued for the writer thread are counted into ``record`` when it is read, not as
    each is queued: read meanwhile, and once they are committed, it is the store's row."""
    s = manager.create("/p", model=MODEL)
    s.defer_writes()
    s.append_message(user("one"))
    s.append_message(assistant(text("two"), cost=0.25, tokens=10))
    first = s.record
    assert (first.entry_count, first.message_count, first.cost, first.first_prompt) == (3, 2, 0.25, "one")
    s.rename("Named")
    s.append_message(assistant(text("three"), cost=0.5, tokens=5))
    assert s.title == "Named"
    assert (s.record.entry_count, s.record.cost, s.record.leaf_id) == (5, 0.75, s.leaf_id)
    await s.settle_writes()
    assert s.record == manager.store.get_session(s.id)
    s.close()


def test_resume_and_the_listing_skip_sessions_without_a_message(manager: SessionManager) -> None:
    talked = manager.create("/p")
    talked.append_message(user("something to continue"))
    talked.close()
    empty = manager.create("/p")  # an eager empty session, as older versions left behind
    empty.close()

    resumed = manager.resume("/p")
    assert resumed is not None and resumed.id == talked.id
    resumed.close()
    assert [r.id for r in manager.list("/p", empty=False)] == [talked.id]
    assert [r.id for r in manager.list("/p", limit=1, empty=False)] == [talked.id]
    assert {r.id for r in manager.list("/p")} == {talked.id, empty.id}


async def test_a_front_end_start_left_at_once_stores_no_session(tmp_path: Path) -> None:
    """What ``tether`` + Ctrl-D and a ``tether -p`` that fails before its prompt do."""
    with SessionManager.at(tmp_path / "sessions.db") as given:
        core = _new_session(tmp_path, given)
        assert core.session is not None and not core.session.stored
        await core.close()
    with SessionManager.at(tmp_path / "sessions.db") as sessions:
        assert sessions.list() == []


def _new_session(folder: Path, sessions: SessionManager) -> AgentSession:
    """A front end's new session in ``sessions`` (a scripted model answering "hi"), not stored
    until its first message."""
    script = folder / "script.json"
    script.write_text('[{"content": [{"type": "text", "text": "hi"}]}]')
    return create_agent_session(
        AgentOptions(model=f"scripted:{script}"),
        cwd=folder,
        settings=Settings(),
        session=SessionChoice(),
        sessions=sessions,
    )


async def test_fork_and_export_of_a_session_without_a_message_say_so(tmp_path: Path) -> None:
    with SessionManager.at(tmp_path / "sessions.db") as given:
        core = _new_session(tmp_path, given)
        try:
            with pytest.raises(SessionError, match=r"^nothing to fork: this session has no message yet$"):
                core.fork()
            with pytest.raises(SessionError, match=r"^nothing to export: this session has no message yet$"):
                core.export(tmp_path / "out.jsonl")
            await core.prompt("hello")
            assert core.session is not None and core.session.stored
            assert core.export(tmp_path / "out.jsonl").is_file()
        finally:
            await core.close()
