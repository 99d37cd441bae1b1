"""Session operations through the public API: resume, settings, branch, fork, label, rename,
delete, export/import, replay, synthetic messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest

from narrowing import content_of
from session_helpers import MODEL, assistant, call, result, text, user
from tether.agent import AgentEndEvent, TurnEndEvent
from tether.session import BranchError, SessionManager
from tether.store import EntryNotFoundError, ImportFormatError, SessionExistsError, SessionNotFoundError
from tether.store.ids import timestamp_ms


def test_resume_rebuilds_the_context_at_the_persisted_leaf(manager: SessionManager) -> None:
    s = manager.create("/p", model=MODEL, thinking_level="high", system_prompt="be brief")
    u = s.append_message(user("one"))
    s.append_message(assistant(text("1")))
    s.set_service_tier("flex")
    s.append_message(user("two"))
    a2 = s.append_message(assistant(text("2")))
    s.set_thinking_level("low")
    leaf = s.leaf_id
    expected = [dict(m) for m in s.messages]
    s.close()

    r = manager.open(s.id)
    assert r.leaf_id == leaf
    assert r.messages == expected
    assert r.context.entry_ids[0] == u and r.context.entry_ids[-1] == a2
    assert r.context.model is not None and r.context.model.model_id == "scripted-1"
    assert r.context.model.info == MODEL
    assert (r.context.thinking_level, r.context.service_tier, r.context.system_prompt) == (
        "low",
        "flex",
        "be brief",
    )


def test_ids_and_timestamps_are_assigned_by_the_runtime(manager: SessionManager) -> None:
    s = manager.create("/p")
    ids = [s.append_message(user(str(i))) for i in range(20)]
    assert ids == sorted(ids) and len(set(ids)) == 20
    for entry in s.entries():
        assert abs(entry["timestamp"] - timestamp_ms(entry["id"])) < 5_000


def test_resume_picks_the_newest_session_of_the_cwd(manager: SessionManager) -> None:
    a = manager.create("/a")
    a.append_message(user("a"))
    b = manager.create("/b")
    b.append_message(user("b"))
    a.append_message(user("a again"))
    a.close()
    b.close()
    resumed = manager.resume("/a")
    assert resumed is not None and resumed.id == a.id
    assert manager.resume("/nowhere") is None
    assert [r.id for r in manager.list()] == [a.id, b.id]


def test_branch_moves_the_leaf_and_the_next_append_hangs_off_it(manager: SessionManager) -> None:
    s = manager.create("/p")
    first = s.append_message(user("q1"))
    s.append_message(assistant(text("a1")))
    s.append_message(user("q2"))
    s.append_message(assistant(text("a2")))
    s.branch(first)
    assert [m["role"] for m in s.messages] == ["user"]
    new = s.append_message(assistant(text("other a1")))
    assert s.entry(new)["parentId"] == first
    assert len(s.children(first)) == 2
    s.close()
    r = manager.open(s.id)
    assert [content_of(m) for m in r.messages][-1] == [text("other a1")]
    r.branch(None)
    assert r.messages == [] and r.leaf_id is None


def test_resume_never_guesses_the_leaf(manager: SessionManager) -> None:
    s = manager.create("/p")
    q1 = s.append_message(user("q1"))
    a1 = s.append_message(assistant(text("a1")))
    s.append_message(user("dead end"))
    s.append_message(assistant(text("newest entry, abandoned branch")))
    s.branch(a1)  # moved back; nothing appended since
    s.close()
    r = manager.open(s.id)
    assert r.leaf_id == a1
    assert [e["id"] for e in r.path()] == [q1, a1]


def test_branch_into_a_tool_batch_extends_to_its_last_result(manager: SessionManager) -> None:
    s = manager.create("/p")
    s.append_message(user("read two files"))
    asked = s.append_message(assistant(call("c1", path="a"), call("c2", path="b")))
    s.append_message(result("c1", "A"))
    last = s.append_message(result("c2", "B"))
    s.append_message(assistant(text("both read")))
    assert s.branch(asked) == last
    assert [m["role"] for m in s.messages] == ["user", "assistant", "toolResult", "toolResult"]


def test_branch_extension_looks_through_entries_appended_while_tools_ran(manager: SessionManager) -> None:
    s = manager.create("/p")
    s.append_message(user("go"))
    asked = s.append_message(assistant(call("c1"), call("c2")))
    s.label(asked, "tools running")
    s.append_message(result("c1", "1"))
    s.set_thinking_level("high")
    last = s.append_message(result("c2", "2"))
    s.append_message(assistant(text("done")))
    assert s.branch(asked) == last


def test_branch_refuses_a_point_whose_tool_calls_have_no_results(manager: SessionManager) -> None:
    s = manager.create("/p")
    s.append_message(user("go"))
    asked = s.append_message(assistant(call("c1"), call("c2")))
    s.append_message(result("c1", "only one"))
    s.append_message(user("interrupted"))
    with pytest.raises(BranchError, match=r"read \(c2\)"):
        s.branch(asked)
    failed = s.append_message(assistant(call("c9"), stop="aborted"))
    assert s.branch(failed) == failed  # an aborted reply owes no results


def test_branch_with_summary_records_where_it_came_from(manager: SessionManager) -> None:
    s = manager.create("/p")
    q = s.append_message(user("q"))
    s.append_message(assistant(text("explored")))
    old_leaf = s.leaf_id
    leaf = s.branch(q, summary="tried X, it failed")
    entry = s.entry(leaf or "")
    assert entry["type"] == "branch_summary" and entry["fromId"] == old_leaf and entry["parentId"] == q
    assert s.messages[-1]["role"] == "branchSummary"
    assert s.messages[-1]["summary"] == "tried X, it failed"  # type: ignore[typeddict-item]


def test_fork_copies_the_path_and_links_the_parent(manager: SessionManager) -> None:
    s = manager.create("/p", title="orig")
    q1 = s.append_message(user("q1"))
    a1 = s.append_message(assistant(text("a1"), cost=1.0))
    s.append_message(user("q2"))
    f = manager.fork(s.id, a1)
    assert f.id != s.id
    assert (f.record.parent_session_id, f.record.parent_entry_id) == (s.id, a1)
    assert [e["id"] for e in f.path()] == [q1, a1]
    assert f.record.title == "orig" and f.record.cost == 1.0
    f.append_message(user("fork's own"))
    assert len(manager.open(s.id, readonly=True).messages) == 3
    with pytest.raises(EntryNotFoundError):
        manager.fork(s.id, "missing")


def test_labels_rename_and_custom_entries(manager: SessionManager) -> None:
    s = manager.create("/p")
    q = s.append_message(user("q"))
    s.label(q, "start")
    s.append_custom("myext.state", {"n": 1})
    s.rename("My session")
    assert s.labels() == {q: "start"}
    s.label(q, None)
    assert s.labels() == {}
    assert [m["role"] for m in s.messages] == ["user"]  # none of these reach the model
    assert manager.list()[0].title == "My session"
    with pytest.raises(ValueError, match="namespaced"):
        s.append_custom("plain", 1)
    with pytest.raises(EntryNotFoundError):
        s.label("nope", "x")


def test_delete_removes_the_session(manager: SessionManager) -> None:
    s = manager.create("/p")
    s.append_message(user("x"))
    s.close()
    manager.delete(s.id)
    assert manager.list() == []
    with pytest.raises(SessionNotFoundError):
        manager.open(s.id)


def test_append_synthetic_gets_real_id_and_timestamp(manager: SessionManager) -> None:
    s = manager.create("/p", model=MODEL)
    s.append_message(user("q"))
    uid = s.append_synthetic({"role": "user", "parts": [text("reminder")]})
    aid = s.append_synthetic({"role": "assistant", "parts": [text("noted")]})
    u, a = s.entry(uid)["message"], s.entry(aid)["message"]
    assert u["synthetic"] is True and u["content"] == [text("reminder")]
    assert abs(u["timestamp"] - timestamp_ms(uid)) < 5_000
    assert (a["provider"], a["model"], a["stopReason"]) == ("test", "scripted-1", "stop")
    with pytest.raises(ValueError, match="parts"):
        s.append_synthetic({"role": "user", "parts": []})


def test_bad_messages_are_refused_with_the_path(manager: SessionManager) -> None:
    s = manager.create("/p")
    bad: Any = {"role": "user", "content": [{"type": "video"}], "timestamp": 1}
    with pytest.raises(ValueError, match=r"message\.content\[0\]\.type: unknown content type 'video'"):
        s.append_message(bad)
    assert s.entries() == []


def _rich_session(manager: SessionManager) -> str:
    s = manager.create("/p", model=MODEL, system_prompt="sys")
    q = s.append_message(user('héllo ✓ \u2028 "quoted"', futureKey={"x": [1.5, 2]}))
    s.append_message(assistant(call("c1", path="a.txt"), cost=0.123456789))
    s.append_message(result("c1", "contents\n\ttabbed"))
    s.append_message(assistant(text("done")))
    s.label(q, "start")
    s.branch(q)
    s.append_message(assistant(text("alternative")))
    s.append_compaction("summary so far", None, 1234)
    s.rename("exported")
    s.append_custom("acme:blob", {"nested": [None, True, 1e300]})
    s.close()
    return s.id


def test_export_import_round_trip_is_exact(manager: SessionManager, tmp_path: Path) -> None:
    sid = _rich_session(manager)
    first = manager.export(sid, tmp_path / "one.jsonl")
    header = json.loads(first.read_text().splitlines()[0])
    assert header["format"] == "tether.session" and header["version"] == 1
    with SessionManager.at(tmp_path / "other.db") as other:
        rec = other.import_file(first)
        second = other.export(rec.id, tmp_path / "two.jsonl")
        assert second.read_bytes() == first.read_bytes()
        original = manager.open(sid, readonly=True)
        imported = other.open(sid, readonly=True)
        assert imported.messages == original.messages
        assert imported.labels() == original.labels()
        assert rec.title == "exported" and rec.leaf_id == original.leaf_id
        with pytest.raises(SessionExistsError):
            other.import_file(first)


def _exported_without(tmp_path: Path, sid: str, damaged: str) -> tuple[list[Any], list[Any]]:
    """Session ``sid`` of ``s.db`` exported with entry ``damaged``'s row no JSON: the file's
    entries, and the imported session's context after its first message (a summary)."""
    import sqlite3

    with sqlite3.connect(tmp_path / "s.db") as db:
        db.execute("UPDATE entries SET payload = x'7b6261' WHERE id = ?", (damaged,))
    db.close()
    told: list[str] = []
    with SessionManager.at(tmp_path / "s.db") as manager:
        out = manager.export(sid, tmp_path / "s.jsonl", on_skip=told.append)
    assert len(told) == 1
    with SessionManager.at(tmp_path / "other.db") as other:
        other.import_file(out)
        kept = other.open(sid, readonly=True).messages[1:]
    return [json.loads(line) for line in out.read_text().splitlines()[1:]], kept


def test_an_export_moves_a_compaction_off_a_damaged_entry_it_kept_from(tmp_path: Path) -> None:
    """The export leaves out an entry whose row is no JSON and hangs its children from its parent,
    but a compaction kept on pointing at it: imported, the session's context began at the summary
    and every message the compaction had kept was gone from it. It starts at the nearest sound
    ancestor now, and a branch summary's ``fromId`` moves up the same way."""
    with SessionManager.at(tmp_path / "s.db") as manager:
        s = manager.create("/p")
        first = s.append_message(user("one"))
        damaged = s.append_message(assistant(text("two")))
        s.branch(first, summary="a way not taken")  # left from ``damaged``
        s.branch(damaged)
        s.append_messages([user("three"), assistant(text("four"))])
        s.append_compaction("one to four", damaged, tokens_before=100)
        s.append_message(user("five"))
        s.close()
    entries, kept = _exported_without(tmp_path, s.id, damaged)
    compaction, summary = (
        next(e for e in entries if e["type"] == kind) for kind in ("compaction", "branch_summary")
    )
    assert compaction["firstKeptEntryId"] == first and summary["fromId"] == first
    assert kept == [user("one"), user("three"), assistant(text("four")), user("five")]


def test_an_export_moves_a_compaction_off_a_damaged_first_entry_to_the_next_it_kept(
    tmp_path: Path,
) -> None:
    """The entry a compaction kept from was left out of the export, with no sound ancestor: its
    ``firstKeptEntryId`` became null, which keeps none of them, and the messages it had kept
    were gone from the imported context. It starts at the next sound entry of its path now."""
    with SessionManager.at(tmp_path / "s.db") as manager:
        s = manager.create("/p")
        damaged = s.append_message(user("one"))
        s.append_messages([assistant(text("two")), user("three")])
        s.append_compaction("one to three", damaged, tokens_before=100)
        s.append_message(user("four"))
        s.close()
    entries, kept = _exported_without(tmp_path, s.id, damaged)
    (compaction,) = (e for e in entries if e["type"] == "compaction")
    assert compaction["firstKeptEntryId"] == entries[0]["id"]
    assert kept == [assistant(text("two")), user("three"), user("four")]


@pytest.mark.parametrize(
    ("lines", "error"),
    [
        (["{}"], r"bad\.jsonl:1: not a tether\.session export"),
        (['{"type":"session","format":"tether.session","version":99}'], "version 99 is not supported"),
        ([], "empty file"),
        (["HEADER", "not json"], r"bad\.jsonl:2: invalid JSON"),
        (["HEADER", '{"type":"message","id":"a","parentId":"zz","timestamp":1}'], "not an earlier entry"),
        (
            ["HEADER", '{"type":"message","id":"a","parentId":null,"timestamp":1,"message":{"role":"x"}}'],
            r"bad\.jsonl:2: message\.role: unknown message role 'x'",
        ),
    ],
)
def test_import_errors_name_the_line(
    manager: SessionManager, tmp_path: Path, lines: list[str], error: str
) -> None:
    header = (
        '{"type":"session","format":"tether.session","version":1,"id":"S","cwd":"/","created":1,"updated":1}'
    )
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(header if line == "HEADER" else line for line in lines) + "\n")
    with pytest.raises(ImportFormatError, match=error):
        manager.import_file(path)
    assert manager.list() == []


def test_replay_reemits_turns_with_tool_executions(manager: SessionManager) -> None:
    s = manager.create("/p")
    s.append_message(user("read"))
    s.append_message(assistant(call("c1", path="a")))
    s.append_message(result("c1", "A"))
    s.append_message(assistant(text("done")))
    s.append_message(user("thanks"))
    events = list(s.replay())
    kinds = [e["type"] for e in events]
    assert kinds == [
        "agent_start",
        "turn_start",
        "message_start", "message_end",  # user
        "message_start", "message_end",  # assistant with call
        "tool_execution_start", "tool_execution_end", "message_start", "message_end",
        "turn_end",
        "turn_start",
        "message_start", "message_end",  # final assistant
        "turn_end",
        "turn_start",
        "message_start", "message_end",  # trailing prompt, no reply yet
        "agent_end",
    ]  # fmt: skip
    assert events[6] == {
        "type": "tool_execution_start",
        "toolCallId": "c1",
        "toolName": "read",
        "args": {"path": "a"},
    }
    # the kinds above place these
    assert cast(TurnEndEvent, events[10])["toolResults"] == [s.messages[2]]
    assert cast(AgentEndEvent, events[-1])["messages"] == s.messages


def test_replay_shows_compacted_history_unless_asked_for_the_context(manager: SessionManager) -> None:
    s = manager.create("/p")
    s.append_message(user("old"))
    s.append_message(assistant(text("old reply")))
    kept = s.append_message(user("new"))
    s.append_compaction("the old part", kept, 100)
    full = [e["message"]["role"] for e in s.replay() if e["type"] == "message_end"]
    ctx = [e["message"]["role"] for e in s.replay(full_history=False) if e["type"] == "message_end"]
    assert full == ["user", "assistant", "user", "compactionSummary"]
    assert ctx == ["compactionSummary", "user"]


def test_a_stored_thinking_level_that_is_not_text_is_no_level(manager: SessionManager) -> None:
    """A ``thinking_level_change`` whose level is not a string (an untyped caller's list, a
    store written by another program) is read as no stored level, as an unknown name is: the
    check of the level raised TypeError (unhashable) on the append and on every open."""
    s = manager.create("/p", thinking_level="high")
    s.set_thinking_level(cast(Any, ["high"]))
    assert s.context.thinking_level is None
    s.close()
    assert manager.open(s.id).context.thinking_level is None
