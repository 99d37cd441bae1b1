"""Session writes off the event loop: ``AgentSession`` defers its appends during a run to the
store's writer thread (``session.writer``), which commits them in batches, in order; every entry
of a run is in the database when the run settles, and a failed write fails the run, once
``agent_settled`` is out."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jiter
import pytest

from narrowing import content_of
from session_helpers import ECHO
from tether.agent import Agent
from tether.session import AgentSession, SessionManager
from tether.store.entries import EntryDict
from tether.store.errors import SessionDatabaseError
from tether.store.sqlite_store import SQLiteStore
from tether.store.store import SessionError, SessionRecord, WriterLease
from tether.store.writer import Append, BatchWriter, Commit
from tether.testing.scripted import ScriptedModel, reply, tool_call
from tether.wire import UserMessage


class WatchedStore(SQLiteStore):
    """A SQLite store noting which thread committed each append, and each batch's size."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.append_threads: list[int] = []
        self.batch_sizes: list[int] = []

    def append(
        self, lease: WriterLease, entries: Sequence[EntryDict], leaf_id: str, updated: int
    ) -> SessionRecord:
        self.append_threads.append(threading.get_ident())
        return super().append(lease, entries, leaf_id, updated)

    def _append_batch(self, batch: Sequence[Append]) -> None:
        self.append_threads += [threading.get_ident()] * len(batch)
        self.batch_sizes.append(len(batch))
        super()._append_batch(batch)


def core_of(manager: SessionManager, turns: int, index: int = 0) -> AgentSession:
    script = [reply(tool_call("echo", {"text": f"{index}-{t}"})) for t in range(turns)] + [
        reply(f"done {index}")
    ]
    model = ScriptedModel(script)
    agent = Agent(model=model.model, stream_fn=model, tools=[ECHO])
    return AgentSession(agent, manager.create(f"/p/{index}"))


async def test_a_runs_entries_are_committed_off_the_loop_and_on_disk_when_it_settles(db_path: Path) -> None:
    store = WatchedStore(db_path)
    manager = SessionManager(store)
    core = core_of(manager, turns=3)
    before = len(store.append_threads)  # the settings entries, written before the run
    loop_thread = threading.get_ident()
    added = await core.prompt("go")
    assert len(added) == 1 + 3 * 2 + 1
    run_threads = store.append_threads[before:]
    assert len(run_threads) >= len(added)
    assert loop_thread not in run_threads, "no append of the run was committed on the event loop's thread"
    session = core.session
    assert session is not None
    # Another connection sees all of it at once, with the counters the handle computed itself.
    with sqlite3.connect(db_path) as other:
        count, leaf = other.execute(
            "SELECT count(*), (SELECT leaf_id FROM sessions WHERE id = ?) FROM entries WHERE session_id = ?",
            (session.id, session.id),
        ).fetchone()
    assert count == len(session.entries())
    assert leaf == session.leaf_id
    assert store.get_session(session.id) == session.record
    await core.close()
    store.close()


async def test_concurrent_runs_share_commits_and_keep_every_sessions_order(db_path: Path) -> None:
    store = WatchedStore(db_path)
    manager = SessionManager(store)
    cores = [core_of(manager, turns=4, index=i) for i in range(20)]
    await asyncio.gather(*(core.prompt(f"go {i}") for i, core in enumerate(cores)))
    assert max(store.batch_sizes) > 1, "appends of several sessions went into one transaction"
    expected = {core.session_id: [e["id"] for e in core.session.entries()] for core in cores if core.session}
    records = {core.session_id: core.session.record for core in cores if core.session}
    for core in cores:
        await core.close()
    store.close()
    with SessionManager.at(db_path) as fresh:
        for session_id, ids in expected.items():
            assert session_id is not None
            reopened = fresh.open(session_id, readonly=True)
            assert [e["id"] for e in reopened.entries()] == ids
            assert [e["id"] for e in reopened.path()] == ids, "one chain, in append order"
            assert reopened.record == records[session_id]


async def test_a_failed_write_fails_the_run_after_it_settled(db_path: Path) -> None:
    manager = SessionManager.at(db_path)
    core = core_of(manager, turns=2)
    session = core.session
    assert session is not None
    events: list[str] = []

    def listen(event: Any) -> None:
        events.append(event["type"])
        if event["type"] == "turn_start" and events.count("turn_start") == 2:
            with sqlite3.connect(db_path) as other:  # the session vanishes under the running agent
                other.execute("DELETE FROM entries WHERE session_id = ?", (session.id,))
                other.execute("DELETE FROM sessions WHERE id = ?", (session.id,))

    core.subscribe(listen)
    # Its entries have no session now: the store's error, as the session error a run raises.
    with pytest.raises(SessionDatabaseError, match="FOREIGN KEY") as raised:
        await core.prompt("go")
    assert isinstance(raised.value.__cause__, sqlite3.IntegrityError)
    assert events[-1] == "agent_settled"
    with pytest.raises(sqlite3.IntegrityError):  # later appends would hang off a missing entry
        session.append_message({"role": "user", "content": "more", "timestamp": 0})
    with pytest.raises(sqlite3.IntegrityError):
        session.close()
    manager.close()


def test_batch_writer_retries_a_failed_batch_one_by_one_and_fails_only_that_session() -> None:
    committed: list[str] = []

    class Lease:
        def __init__(self, session_id: str) -> None:
            self.session_id = session_id
            self.active = True

        def release(self) -> None:
            self.active = False

    tried_alone: list[str] = []

    def commit_one(append: Append) -> None:
        tried_alone.append(append.entries[0]["id"])
        if append.lease.session_id == "bad":
            raise SessionError("bad session")
        committed.append(append.entries[0]["id"])

    def commit_batch(batch: Sequence[Append]) -> None:
        if any(p.lease.session_id == "bad" for p in batch):
            raise SessionError("the batch's transaction failed")
        committed.extend(p.entries[0]["id"] for p in batch)

    gate = threading.Event()

    def slow_batch(batch: Sequence[Append]) -> None:
        gate.wait(5)  # hold the first batch so the next appends queue up behind it
        commit_batch(batch)

    writer = BatchWriter(slow_batch, commit_one, "test-writer")
    good, bad = Lease("good"), Lease("bad")

    def entry(i: str) -> list[Any]:
        return [{"type": "message", "id": i}]

    first = writer.submit(good, entry("g0"), "g0", 0)
    futures = [
        writer.submit(good, entry("g1"), "g1", 0),
        writer.submit(bad, entry("b1"), "b1", 0),
        writer.submit(good, entry("g2"), "g2", 0),
        writer.submit(bad, entry("b2"), "b2", 0),
    ]
    gate.set()
    assert first.wait(5)
    assert futures[-1].wait(5)
    assert futures.count(futures[0]) == 4, "the four queued behind the held batch share its commit"
    assert first.failure(good) is None and futures[0].failure(good) is None
    assert str(futures[0].failure(bad)) == "bad session"
    later = writer.submit(bad, entry("b3"), "b3", 0)  # in a batch of its own
    assert later.wait(5)
    assert later.failure(bad) is futures[0].failure(bad), "b3 inherits b1's failure, untried"
    writer.close()
    assert committed == ["g0", "g1", "g2"]
    assert "b1" in tried_alone and "b2" not in tried_alone, "b2 inherits b1's failure, untried"


def test_the_appends_of_a_batch_share_one_commit() -> None:
    """Thousands of appends wait at once with 1,000 sessions: one ``Commit`` per batch, not a
    future per append."""
    held, gate = threading.Event(), threading.Event()

    def commit_batch(batch: Sequence[Append]) -> None:
        held.set()
        gate.wait(5)  # hold the first batch so the next appends queue up behind it

    writer = BatchWriter(commit_batch, lambda pending: None, "test-writer")
    first = writer.submit(_Lease("a"), [], "e0", 0)
    assert held.wait(5)
    queued = [writer.submit(_Lease(s), [], f"e{i}", 0) for i, s in enumerate("abcab", start=1)]
    assert all(committed is queued[0] for committed in queued)
    assert queued[0] is not first
    gate.set()
    for committed in (first, *queued):
        assert committed.wait(5)
    assert [c.failure(_Lease(s)) for c, s in zip([first, *queued], "aabcab", strict=True)] == [None] * 6
    writer.close()


async def test_a_run_cancelled_while_it_waits_for_its_writes_leaves_the_shared_commit_alone(
    tmp_path: Path,
) -> None:
    """A run cancelled in ``settle_writes`` must not cancel the future its batch shares with
    other sessions' appends: they are still committed and their waiters told so, and the
    writer keeps serving."""
    held, gate = threading.Event(), threading.Event()

    class HeldStore(SQLiteStore):
        def _append_batch(self, batch: Sequence[Append]) -> None:
            held.set()
            gate.wait(5)  # the thread is busy: what is appended now waits in the queue
            super()._append_batch(batch)

    store = HeldStore(tmp_path / "s.db")
    manager = SessionManager(store)
    first, second = manager.create("/a"), manager.create("/b")

    def message(text: str) -> UserMessage:
        return {"role": "user", "content": text, "timestamp": 1}

    for session in (first, second):
        session.defer_writes()
    first.append_message(message("held"))
    assert await asyncio.to_thread(held.wait, 5)
    first.append_message(message("a"))  # both queued behind the held batch: one batch, one future
    second.append_message(message("b"))
    given_up = asyncio.ensure_future(first.settle_writes())
    waiting = asyncio.ensure_future(second.settle_writes())
    await asyncio.sleep(0.01)
    given_up.cancel()
    gate.set()
    await asyncio.wait_for(waiting, 5)  # not cancelled with the other waiter
    with pytest.raises(asyncio.CancelledError):
        await given_up
    await first.settle_writes()
    first.append_message(message("after"))
    first.close()
    second.close()
    with SessionManager.at(tmp_path / "s.db") as fresh:
        assert [content_of(m) for m in fresh.open(first.id, readonly=True).messages] == ["held", "a", "after"]
        assert [content_of(m) for m in fresh.open(second.id, readonly=True).messages] == ["b"]
    store.close()


async def test_the_sessions_waiting_for_one_batch_wake_the_event_loop_once(tmp_path: Path) -> None:
    """Every session of a busy service waits for its batch at the end of each pass: the writer
    wakes the loop once for the batch (one ``call_soon_threadsafe``, one write to its wake-up
    pipe), not once per session waiting; and every one of them is woken."""
    held, gate = threading.Event(), threading.Event()

    class HeldStore(SQLiteStore):
        def _append_batch(self, batch: Sequence[Append]) -> None:
            held.set()
            gate.wait(5)  # the thread is busy: what is appended now waits in the queue
            super()._append_batch(batch)

    store = HeldStore(tmp_path / "s.db")
    manager = SessionManager(store)
    sessions = [manager.create(f"/{i}") for i in range(5)]

    def message(text: str) -> UserMessage:
        return {"role": "user", "content": text, "timestamp": 1}

    for session in sessions:
        session.defer_writes()
    sessions[0].append_message(message("held"))
    assert await asyncio.to_thread(held.wait, 5)
    for i, session in enumerate(sessions):
        session.append_message(message(f"m{i}"))  # all queued behind the held batch: one batch
    loop = asyncio.get_running_loop()
    wakes: list[object] = []
    threadsafe = loop.call_soon_threadsafe

    def counted(callback: Any, *args: Any, context: Any = None) -> asyncio.Handle:
        if threading.current_thread() is not threading.main_thread():
            wakes.append(callback)
        return threadsafe(callback, *args, context=context)

    loop.call_soon_threadsafe = counted  # type: ignore[method-assign]
    try:
        waiting = [asyncio.ensure_future(session.settle_writes()) for session in sessions]
        await asyncio.sleep(0.01)
        gate.set()
        await asyncio.wait_for(asyncio.gather(*waiting), 5)
    finally:
        del loop.call_soon_threadsafe
    assert len(wakes) == 1, f"the loop was woken {len(wakes)} times for one batch"
    for session in sessions:
        session.close()
    store.close()


def test_a_batch_with_several_appends_of_a_session_stores_what_appending_one_by_one_stores(
    tmp_path: Path,
) -> None:
    """The writer thread's batch updates each session's row once (counters summed, last leaf):
    entries, their order and the row must be those of the same appends made one at a time. A
    batch of two sessions' appends encodes with pydantic-core, one append alone with the standard
    library (``encode_entry``): the payloads must read back the same, a tool's ``details`` with
    values JSON has no type for included."""

    def user(text: str) -> Any:
        return {"role": "user", "content": text, "timestamp": 1}

    def assistant(cost: float) -> Any:
        usage = {"input": 10, "output": 2, "cacheRead": 1, "cacheWrite": 0, "totalTokens": 13,
                 "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost}}  # fmt: skip
        return {"role": "assistant", "content": [], "api": "a", "provider": "p", "model": "m",
                "usage": usage, "stopReason": "stop", "timestamp": 2}  # fmt: skip

    def entry(i: str, parent: str | None, **fields: Any) -> Any:
        return {"id": i, "parentId": parent, "timestamp": int(i[1:]), **fields}

    appends: list[tuple[str, list[Any], str, int]] = [
        ("a", [entry("a1", None, type="message", message=user("first"))], "a1", 1),
        ("b", [entry("b2", None, type="session_info", title="B")], "b2", 2),
        ("a", [entry("a3", "a1", type="message", message=assistant(0.5))], "a3", 3),
        (
            "a",
            [
                entry("a4", "a3", type="message", message=user("second")),
                entry("a5", "a4", type="session_info", title="A"),
            ],
            "a5",
            5,
        ),
        ("b", [entry("b6", "b2", type="message", message=assistant(0.00004))], "b6", 4),
        (
            "b",
            [
                entry(
                    "b7", "b6", type="custom", customType="t.x", data=Details({2, 1}, b"\xc3\xa9", "\u2028é")
                )
            ],
            "b7",
            7,
        ),
    ]
    stores = [SQLiteStore(tmp_path / "batched.db"), SQLiteStore(tmp_path / "one_by_one.db")]
    leases: list[dict[str, Any]] = []
    for store in stores:
        for session_id in ("a", "b"):
            store.create_session(session_id, "/w", 0, version=1)
        leases.append({s: store.acquire_writer(s) for s in ("a", "b")})
    stores[0]._append_batch([Append(leases[0][s], e, leaf, t) for s, e, leaf, t in appends])  # pyright: ignore[reportPrivateUsage]
    for s, e, leaf, t in appends:
        stores[1].append(leases[1][s], e, leaf, t)
    for session_id in ("a", "b"):
        batched, one_by_one = (store.get_session(session_id) for store in stores)
        assert batched == one_by_one
        assert [e.id for e in stores[0].entries(session_id)] == [e.id for e in stores[1].entries(session_id)]
        payloads = [[jiter.from_json(e.payload) for e in store.entries(session_id)] for store in stores]
        assert payloads[0] == payloads[1]
    assert jiter.from_json(stores[0].entries("b")[-1].payload)["data"] == {
        "ids": [1, 2],
        "raw": "é",
        "text": "\u2028é",
    }
    assert stores[0].get_session("a").title == "A" and stores[0].get_session("a").first_prompt == "first"
    assert stores[0].get_session("a").leaf_id == "a5" and stores[0].get_session("a").updated == 5
    for store in stores:
        store.close()


@dataclass
class Details:
    """A tool's details as an extension may leave them: a set, bytes, a dataclass."""

    ids: set[int]
    raw: bytes
    text: str


class _Lease:
    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.active = True

    def release(self) -> None:
        self.active = False


def test_the_writer_waits_for_more_appends_only_while_sessions_share_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A session writing alone gets each append committed at once (a `tether -p` run would
    otherwise wait the batch window for its last entries); once a batch held appends of two
    sessions, the writer waits the window before the next one, to let them share a commit."""
    import tether.store.writer as writer_module

    waits: list[float] = []
    monkeypatch.setattr(writer_module.time, "sleep", waits.append)
    gate, held = threading.Event(), threading.Event()

    def commit_batch(batch: Sequence[Append]) -> None:
        held.set()
        gate.wait(5)  # hold this batch, so that the next appends queue up together behind it

    writer = BatchWriter(commit_batch, lambda pending: None, "test-writer")
    alone, other = _Lease("alone"), _Lease("other")
    writer.submit(alone, [], "e0", 0)
    assert held.wait(5)
    second = writer.submit(alone, [], "e1", 0)
    gate.set()
    assert second.wait(5)
    assert waits == []  # one session: no window, before or after its batches
    gate.clear()
    held.clear()
    writer.submit(alone, [], "e2", 0)
    assert held.wait(5)
    writer.submit(alone, [], "e3", 0)  # queued behind the held batch, with another session's
    last = writer.submit(other, [], "e4", 0)
    gate.set()
    assert last.wait(5)
    assert writer.submit(other, [], "e5", 0).wait(5)  # after a shared batch: the window
    assert waits == [writer_module.BATCH_WINDOW]
    writer.close()


def _many_sessions_batch(store: SQLiteStore, sessions: int) -> list[Append]:
    """Two appends per session (a user message, then an assistant reply with a cost), in turn."""
    appends: list[Append] = []
    leases: dict[int, WriterLease] = {}
    for s in range(sessions):
        store.create_session(f"s{s}", "/w", 0, version=1)
        leases[s] = store.acquire_writer(f"s{s}")
    for turn in range(2):
        for s in range(sessions):
            entry_id = f"s{s}e{turn}"
            message: Any = {"role": "user", "content": f"prompt {s}", "timestamp": 1}
            if turn:
                usage = {"input": s, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": s + 2,
                         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": s / 7}}  # fmt: skip
                message = {"role": "assistant", "content": [{"type": "text", "text": f"reply {s}"}],
                           "api": "a", "provider": "p", "model": "m", "usage": usage, "stopReason": "stop",
                           "timestamp": 2}  # fmt: skip
            parent = f"s{s}e0" if turn else None
            entry: Any = {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": turn + 1,
                "message": message,
            }
            appends.append(Append(leases[s], [entry], entry_id, turn + 1))
    return appends


def test_a_commit_wakes_a_blocked_waiter_and_answers_later_ones_at_once() -> None:
    """``Commit.wait`` makes its event only when someone blocks: one waiting before the batch
    ends is woken, one asking after it is answered without waiting."""
    commit = Commit()
    assert not commit.wait(0)
    woken: list[bool] = []
    waiter = threading.Thread(target=lambda: woken.append(commit.wait(5)))
    waiter.start()
    commit.finish()
    waiter.join(5)
    assert woken == [True]
    assert commit.wait(0) and Commit().wait(0.01) is False


def test_close_commits_the_appends_still_queued_and_finishes_their_commits() -> None:
    """Appends queued behind a batch in flight when the store closes are committed before the
    thread stops, and whoever waits for them is told: none is left waiting forever."""
    held, gate = threading.Event(), threading.Event()
    written: list[str] = []

    def commit_batch(batch: Sequence[Append]) -> None:
        held.set()
        gate.wait(5)
        written.extend(a.leaf_id for a in batch)

    writer = BatchWriter(commit_batch, lambda append: None, "test-writer")
    lease = _Lease("a")
    writer.submit(lease, [], "e0", 0)
    assert held.wait(5)
    queued = [writer.submit(lease, [], f"e{i}", 0) for i in (1, 2)]
    closing = threading.Thread(target=writer.close)
    closing.start()
    gate.set()
    closing.join(5)
    assert not closing.is_alive()
    assert all(c.finished and c.failure(lease) is None for c in queued)
    assert written == ["e0", "e1", "e2"]
    with pytest.raises(RuntimeError, match="closed"):
        writer.submit(lease, [], "e3", 0)


def test_a_batch_of_many_sessions_takes_a_few_statements_and_stores_what_one_by_one_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows go in many at a time: a statement execution per row would hand the interpreter lock
    back and forth with the event loop's thread once per row. Chunks of 8 rows here (the real
    size is larger), so 150 sessions' 300 entries span full chunks and a power-of-two rest; the
    result must equal appending one by one: entries in order, counters and leaves."""
    import tether.store.sqlite_store as sqlite_store

    monkeypatch.setattr(sqlite_store, "ROWS_PER_STATEMENT", 8)
    batched, one_by_one = SQLiteStore(tmp_path / "batched.db"), SQLiteStore(tmp_path / "one.db")
    appends = _many_sessions_batch(batched, 150)
    statements: list[str] = []
    batched._db.set_trace_callback(statements.append)  # pyright: ignore[reportPrivateUsage]
    batched._append_batch(appends)  # pyright: ignore[reportPrivateUsage]
    batched._db.set_trace_callback(None)  # pyright: ignore[reportPrivateUsage]
    # 300 entries: 37 chunks of 8, then 4; 150 sessions: 18 of 8, then 4 and 2; BEGIN, COMMIT
    assert len(statements) == 38 + 20 + 2
    for pending in _many_sessions_batch(one_by_one, 150):
        one_by_one.append(pending.lease, pending.entries, pending.leaf_id, pending.updated)
    for s in range(150):
        assert batched.get_session(f"s{s}") == one_by_one.get_session(f"s{s}")
        assert batched.entries(f"s{s}") == one_by_one.entries(f"s{s}")
    assert batched.get_session("s149").cost == 149 / 7 and batched.get_session("s149").input_tokens == 149
    assert [row[0] for row in batched._db.execute("SELECT id FROM entries ORDER BY seq")] == [  # pyright: ignore[reportPrivateUsage]
        p.entries[0]["id"] for p in appends
    ]
    for store in (batched, one_by_one):
        store.close()


def test_a_batch_naming_a_deleted_session_fails_whole(tmp_path: Path) -> None:
    """The batch is one transaction: a session deleted meanwhile fails it (its entries' foreign
    key), leaving nothing of it written; the writer then retries each append alone, so only that
    session's appends fail (``test_batch_writer_retries_a_failed_batch_one_by_one_...``)."""
    store = SQLiteStore(tmp_path / "s.db")
    appends = _many_sessions_batch(store, 3)
    store._db.execute("DELETE FROM sessions WHERE id = 's1'")  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(sqlite3.IntegrityError):
        store._append_batch(appends)  # pyright: ignore[reportPrivateUsage]
    assert store.entries("s0") == [] and store.get_session("s0").entry_count == 0
    store.close()


async def test_a_session_dropped_unclosed_after_a_run_lets_go_of_its_writer_lock(db_path: Path) -> None:
    """The lock's ``__del__`` releases it when a handle is dropped without ``close()``; but the
    writer thread, waiting for more, still held the last batch it committed, its appends and
    their lease: the dropped session stayed locked ("open for writing by pid <ours>") until the
    store wrote for someone else."""
    import gc

    manager = SessionManager.at(db_path)
    model = ScriptedModel([reply("hi")])
    core = AgentSession(Agent(model=model.model, stream_fn=model), manager.create("/p"))
    await core.prompt("go")
    session_id = core.session_id
    assert session_id is not None
    del core, model  # the scripted model's records of requests lead back to the core
    gc.collect()
    reopened = manager.open(session_id)
    assert [m["role"] for m in reopened.messages] == ["user", "assistant"]
    reopened.close()
    manager.close()


class _Dying(BaseException):
    """What a bug's ``BaseException`` (or one raised into the thread) does to the writer."""


def _expected(args: threading.ExceptHookArgs) -> None:
    """The writer thread's end on ``_Dying``, expected: not printed."""
    assert args.exc_type is _Dying


def test_a_writer_thread_dying_fails_the_appends_queued_and_refuses_later_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The thread stopped on a ``BaseException``: the batch in flight failed, but the appends
    queued behind it, and any made later, went to a queue no thread would take again; whoever
    waited for them waited forever."""
    monkeypatch.setattr(threading, "excepthook", _expected)
    held, gate = threading.Event(), threading.Event()

    def commit_batch(batch: Sequence[Append]) -> None:
        held.set()
        gate.wait(5)
        raise _Dying("stopped")

    writer = BatchWriter(commit_batch, lambda append: None, "test-writer")
    lease = _Lease("a")
    in_flight = writer.submit(lease, [], "e0", 0)
    assert held.wait(5)
    queued = writer.submit(lease, [], "e1", 0)
    gate.set()
    assert in_flight.wait(5) and queued.wait(5), "every commit ends"
    for committed in (in_flight, queued):
        failure = committed.failure(lease)
        assert isinstance(failure, SessionError) and isinstance(failure.__cause__, _Dying)
        assert "test-writer" in str(failure) and "stopped" in str(failure)
    with pytest.raises(SessionError, match="writer thread stopped") as later:
        writer.submit(lease, [], "e2", 0)
    assert isinstance(later.value.__cause__, _Dying)
    writer.close()


def test_each_submit_to_a_dead_writer_raises_an_error_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """A dead writer raised one shared error object for every later ``submit``: each raise added
    its frames to that object's traceback, which grew without bound and kept the callers' frames
    (and their locals) alive."""
    monkeypatch.setattr(threading, "excepthook", _expected)

    def commit_batch(batch: Sequence[Append]) -> None:
        raise _Dying("stopped")

    writer = BatchWriter(commit_batch, lambda append: None, "test-writer")
    lease = _Lease("a")
    assert writer.submit(lease, [], "e0", 0).wait(5)
    depths: list[int] = []
    for _ in range(1000):
        with pytest.raises(SessionError, match="writer thread stopped") as later:
            writer.submit(lease, [], "e1", 0)
        assert isinstance(later.value.__cause__, _Dying)
        depths.append(len(traceback.extract_tb(later.value.__traceback__)))
    assert max(depths) < 5
    writer.close()


def test_flush_writes_and_close_end_with_an_error_when_the_writer_thread_died(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session's deferred appends queued behind the batch that killed the thread: its
    ``flush_writes`` and ``close`` say why they were not written, not block forever."""
    monkeypatch.setattr(threading, "excepthook", _expected)
    manager = SessionManager.at(db_path)
    store = manager.store
    assert isinstance(store, SQLiteStore)
    held, gate = threading.Event(), threading.Event()

    def dying_batch(batch: Sequence[Append]) -> None:
        held.set()
        gate.wait(5)
        raise _Dying("stopped")

    monkeypatch.setattr(store, "_append_batch", dying_batch)
    session = manager.create("/p")
    session.append_message({"role": "user", "content": "stored now", "timestamp": 0})
    session.defer_writes()
    session.record_message({"role": "user", "content": "in flight", "timestamp": 0})
    assert held.wait(5)
    session.record_message({"role": "user", "content": "queued behind", "timestamp": 0})
    gate.set()
    outcomes: list[BaseException | None] = []

    def flush_then_close() -> None:
        for step in (session.flush_writes, session.close):
            try:
                step()
                outcomes.append(None)
            except BaseException as exc:  # the test looks at what it was
                outcomes.append(exc)

    flushing = threading.Thread(target=flush_then_close, daemon=True)
    flushing.start()
    flushing.join(5)
    assert not flushing.is_alive(), "flush_writes waited for a thread that is gone"
    assert [type(o) for o in outcomes] == [SessionError, SessionError]
    assert all("writer thread stopped" in str(o) for o in outcomes)
    manager.close()
