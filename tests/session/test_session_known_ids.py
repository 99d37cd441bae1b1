"""``Session.message_id`` across context rebuilds: what a run may still ask for stays known (the
stored messages a compaction or branch left out; a durable replay's message: test_session_use_ids),
while the summary messages each rebuild creates afresh are forgotten with the context that held
them, so a handle that rebuilds often (a follower of a compacted session) does not keep every one
it ever made."""

from __future__ import annotations

from pathlib import Path

from session_helpers import assistant, text, user
from tether.session import SessionManager


def test_the_summaries_of_a_replaced_context_are_forgotten(manager: SessionManager, tmp_path: Path) -> None:
    session = manager.create(tmp_path)
    session.append_messages([user("one"), assistant(text("two"))])
    kept = session.append_message(user("three"))
    compaction = session.append_compaction("one and two", kept, tokens_before=100)
    fork = session.append_message(assistant(text("four")))
    session.branch(fork, summary="a way not taken")
    old = list(session.messages)
    assert [m["role"] for m in old] == ["compactionSummary", "user", "assistant", "branchSummary"]
    assert session.message_ids(old)[0] == compaction

    for _ in range(5):  # as a follower rebuilds on each change
        session.branch(session.leaf_id)
        assert session.message_ids(session.messages) == session.context.entry_ids
    assert session.messages[0] is not old[0] and session.messages[-1] is not old[-1]
    # The stored messages are the tree's own objects, the same in every context; the summaries
    # of the old context are known no more (the map held them, and so kept them alive).
    assert session.message_ids(old) == [None, *session.context.entry_ids[1:3], None]
    session.close()


def test_what_a_compaction_left_out_stays_known(manager: SessionManager, tmp_path: Path) -> None:
    """A run holds the messages it started with; after a compaction during it, those not in the
    context must still be known as stored, or the next request would send them again."""
    writer = manager.create(tmp_path)
    ids = writer.append_messages([user("one"), assistant(text("two")), user("three")])
    writer.close()
    session = manager.open(writer.id)  # the messages are read back, not appended by this handle
    started_with = list(session.messages)
    assert session.message_ids(started_with) == ids  # as the run's first request asks
    session.append_compaction("one and two", ids[2], tokens_before=100)
    session.branch(session.leaf_id)
    assert session.message_ids(session.messages)[1:] == [ids[2]]
    assert session.message_ids(started_with) == ids
    session.close()
