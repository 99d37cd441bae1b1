"""What only the PostgreSQL store has: json rows, migrations under a concurrent start, appends
retried after a lost connection, fencing of a writer that lost its lock, two processes with
their own pools contending for one session, connection errors as one clear line, and the writer
thread committing a run's appends, many sessions' at once, while the event loop goes on."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import socket
import threading
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from multiprocessing.context import ForkServerContext

import psycopg
import pytest
import session_children

from narrowing import content_of
from session_helpers import ECHO, assistant, text, user
from tether.agent import Agent
from tether.session import AgentSession, Session, SessionManager
from tether.store import PostgresStore, SchemaVersionError, SessionError, SessionLockedError, SessionRecord
from tether.store.entries import EntryDict
from tether.store.lease import WriterLease
from tether.store.postgres_schema import SCHEMA_VERSION
from tether.store.writer import Append, Commit
from tether.testing.postgres import PostgresServer
from tether.testing.scripted import ScriptedModel, reply, tool_call
from tether.wire import dumpb

PRELOAD = ["tether.session", "tether.store.postgres_store", "session_children"]


def _forkserver() -> ForkServerContext:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


def test_entries_are_json_rows_in_append_order_exactly_as_written(postgres_url: str) -> None:
    with SessionManager.at(postgres_url) as manager:
        s = manager.create("/p")
        s.append_messages([user("hello"), assistant(text("hi"), cost=0.5)])
        s.append_message(user("a NUL \x00 inside, as a binary file read by a tool"))
        with psycopg.connect(postgres_url) as db:
            kinds = dict(
                db.execute(
                    "SELECT column_name, data_type FROM information_schema.columns"
                    " WHERE table_name = 'tether_entries' AND table_schema = current_schema()"
                ).fetchall()
            )
            assert kinds["payload"] == "json"
            payloads = db.execute(
                "SELECT payload::text FROM tether_entries WHERE session_id = %s ORDER BY seq", (s.id,)
            ).fetchall()
            # Queryable as JSON (PostgreSQL turns no string with a NUL into text: skip those).
            roles = db.execute(
                "SELECT payload->'message'->>'role' FROM tether_entries WHERE session_id = %s"
                " AND strpos(payload::text, '\\u0000') = 0 ORDER BY seq",
                (s.id,),
            ).fetchall()
        # The very bytes tether wrote, a NUL escape included.
        assert [p.encode() for (p,) in payloads] == [dumpb(e) for e in s.entries()]
        assert roles == [("user",), ("assistant",)]
        reopened = manager.open(s.id, readonly=True)
        assert content_of(reopened.messages[-1]) == "a NUL \x00 inside, as a binary file read by a tool"
        assert manager.list()[0].first_prompt == "hello"


def test_processes_starting_together_migrate_once(postgres_url: str) -> None:
    ctx = _forkserver()
    start = ctx.Barrier(6)
    children = [
        ctx.Process(target=session_children.open_store_at_once, args=(postgres_url, start)) for _ in range(6)
    ]
    for child in children:
        child.start()
    for child in children:
        child.join()
    assert [child.exitcode for child in children] == [0] * 6
    with psycopg.connect(postgres_url) as db:
        versions = [v for (v,) in db.execute("SELECT version FROM tether_migrations ORDER BY version")]
    assert versions == list(range(1, SCHEMA_VERSION + 1))


def test_a_newer_schema_is_refused_with_a_clear_error(postgres_url: str) -> None:
    PostgresStore(postgres_url).close()
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute("INSERT INTO tether_migrations (version) VALUES (%s)", (SCHEMA_VERSION + 1,))
    with pytest.raises(SchemaVersionError, match="newer than this tether supports"):
        PostgresStore(postgres_url)


def test_a_retried_append_neither_duplicates_entries_nor_counts_twice(postgres_url: str) -> None:
    store = PostgresStore(postgres_url)
    try:
        store.create_session("S", "/p", 1, version=1)
        lease = store.acquire_writer("S")
        entries = [
            {"type": "message", "id": "E1", "parentId": None, "timestamp": 2, "message": user("q")},
            {
                "type": "message",
                "id": "E2",
                "parentId": "E1",
                "timestamp": 3,
                "message": assistant(cost=0.25),
            },
        ]
        first = store.append(lease, entries, "E2", 3)
        # The same append again: what a retry sends when the first commit's answer was lost.
        again = store.append(lease, entries, "E2", 3)
        assert again == first
        assert (first.entry_count, first.message_count, first.cost) == (2, 2, 0.25)
        assert [e.id for e in store.entries("S")] == ["E1", "E2"]
    finally:
        store.close()


@contextmanager
def _one_message(postgres_url: str, text: str) -> Generator[tuple[SessionManager, Session, PostgresStore]]:
    """A manager on the server, a session of its holding one user message ``text``, and the
    PostgreSQL store behind them."""
    with SessionManager.at(postgres_url) as manager:
        s = manager.create("/p")
        s.append_message(user(text))
        store = manager.store
        assert isinstance(store, PostgresStore)
        yield manager, s, store


def _lock_backend(store: PostgresStore) -> int:
    """The server process of the store's lock connection (the one holding its sessions' locks)."""
    return store._lock_db.info.backend_pid  # pyright: ignore[reportPrivateUsage]


def _kill_backends(postgres: PostgresServer, spare: list[int]) -> int:
    """Terminate every client connection but ``spare`` (and the admin one); how many died."""
    with psycopg.connect(postgres.url(), autocommit=True) as db:
        killed = db.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE backend_type = 'client backend'"
            " AND pid <> pg_backend_pid() AND NOT (pid = ANY(%s))",
            (spare,),
        ).fetchone()
    return killed[0] if killed else 0


def test_an_append_is_retried_on_a_new_connection_when_its_own_drops(
    postgres: PostgresServer, postgres_url: str
) -> None:
    with _one_message(postgres_url, "before") as (manager, s, store):
        assert _kill_backends(postgres, spare=[_lock_backend(store)]) >= 1  # the pool's connections
        s.append_message(user("after"))
        assert [content_of(m) for m in manager.open(s.id, readonly=True).messages] == ["before", "after"]
        assert manager.list()[0].entry_count == 2


def test_a_writer_that_lost_its_lock_keeps_its_session_and_writes_again(
    postgres: PostgresServer, postgres_url: str
) -> None:
    with (
        _one_message(postgres_url, "first writes") as (_, s, store),
        SessionManager.at(postgres_url) as second,
    ):
        # The first writer's lock connection dies (a network cut) while its process lives on.
        with psycopg.connect(postgres.url(), autocommit=True) as db:
            db.execute("SELECT pg_terminate_backend(%s)", (_lock_backend(store),))
        # The lock is free, but its holder is alive: a second writer is refused...
        with pytest.raises(SessionLockedError, match=f"pid {os.getpid()} on {socket.gethostname()}"):
            second.open(s.id)
        # ... and the first takes its lease back at its next write, which lands.
        s.append_message(user("first again"))
        with pytest.raises(SessionLockedError):
            second.open(s.id)
        s.close()
        taker = second.open(s.id)  # released cleanly: free at once
        taker.append_message(user("second writes"))
        contents = [content_of(m) for m in second.open(s.id, readonly=True).messages]
        assert contents == ["first writes", "first again", "second writes"]


def test_a_write_after_the_lock_connection_died_lands_only_once_the_lock_is_held_again(
    postgres: PostgresServer, postgres_url: str
) -> None:
    with _one_message(postgres_url, "before") as (manager, s, store):
        with psycopg.connect(postgres.url(), autocommit=True) as db:
            db.execute(
                "SELECT pg_terminate_backend(%s, 10000)", (_lock_backend(store),)
            )  # waits till it is gone
            s.append_message(user("after"))
            # The append's fence found the lock free, so the writer took it back first.
            holders = db.execute(
                "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND mode = 'ExclusiveLock' AND granted"
            ).fetchall()
        assert holders == [(_lock_backend(store),)]
        assert [content_of(m) for m in manager.open(s.id, readonly=True).messages] == ["before", "after"]


def test_a_writer_whose_session_was_taken_over_is_fenced_off(postgres_url: str) -> None:
    with SessionManager.at(postgres_url) as first:
        s = first.create("/p")
        s.append_message(user("first writes"))
        with psycopg.connect(postgres_url, autocommit=True) as db:  # another writer took it over
            db.execute(
                "UPDATE tether_sessions SET writer_token = 'theirs', writer_pid = 7 WHERE id = %s", (s.id,)
            )
        with pytest.raises(SessionError, match="taken over by pid 7"):
            s.append_message(user("first again, too late"))
        contents = [content_of(m) for m in first.open(s.id, readonly=True).messages]
        assert contents == ["first writes"]


def test_two_processes_with_their_own_pools_take_turns_on_one_session(postgres_url: str) -> None:
    with SessionManager.at(postgres_url) as manager:
        session_id = manager.create("/p").id
    ctx = _forkserver()
    rounds, batch = 15, 4
    children = [
        ctx.Process(target=session_children.contend, args=(postgres_url, session_id, rounds, batch))
        for _ in range(2)
    ]
    for child in children:
        child.start()
    for child in children:
        child.join()
    assert [child.exitcode for child in children] == [0, 0]
    with SessionManager.at(postgres_url) as manager:
        s = manager.open(session_id, readonly=True)
        entries = s.entries()
        # One chain: each holder appended at the leaf the previous one left, never beside it.
        assert [e["id"] for e in s.path()] == [e["id"] for e in entries]
        words = [str(e["message"]["content"]).split() for e in entries]
        assert len(words) == 2 * rounds * batch and s.record.entry_count == len(words)
        for start in range(0, len(words), batch):  # each holding is one unbroken run
            pid, r = words[start][:2]
            assert [w for w in words[start : start + batch]] == [[pid, r, str(i)] for i in range(batch)]
        assert {w[0] for w in words} == {str(child.pid) for child in children}


def test_connection_errors_are_one_line_without_the_password(postgres: PostgresServer) -> None:
    url = f"postgresql://tether:s3cret@127.0.0.1:{postgres.port}/no_such_db"
    with pytest.raises(SessionError) as caught:
        SessionManager.at(url)
    message = str(caught.value)
    assert message.startswith(
        f"cannot open the session database postgresql://tether:***@127.0.0.1:{postgres.port}/no_such_db: "
    )
    assert 'database "no_such_db" does not exist' in message
    assert "s3cret" not in message and "\n" not in message


def test_a_read_only_database_is_said_at_once_in_one_line(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A hot standby, or ``default_transaction_read_only``, refuses every write (SQLSTATE 25006):
    that is said at once, naming the cause (the server's words name only the statement), not
    waited out as an outage."""
    read_only = postgres_url + "%20-cdefault_transaction_read_only%3Don"
    with caplog.at_level(logging.WARNING, logger="tether.store"):
        with pytest.raises(SessionError) as opening:
            PostgresStore(read_only)  # a new schema: the migration cannot create its tables
        with SessionManager.at(postgres_url) as writable:
            session_id = writable.create("/p").id
        with SessionManager.at(read_only) as m:
            with pytest.raises(SessionError) as creating:
                m.create("/q")
            with pytest.raises(SessionError) as taking:
                m.open(session_id)  # taking the writer lease records the writer on the row
            assert m.open(session_id, readonly=True).id == session_id
    for caught in (opening, creating, taking):
        said = str(caught.value)
        assert "the database is read-only" in said and "in a read-only transaction" in said, said
        assert "\n" not in said, said
    assert not [r for r in caplog.records if "unreachable" in r.getMessage()]


# -- the writer thread -----------------------------------------------------------------------------


def _message_entry(entry_id: str, parent: str | None, content: str) -> EntryDict:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": 2, "message": user(content)}


def test_a_deferred_append_waits_for_the_server_on_the_writer_thread_not_the_callers(
    postgres_url: str,
) -> None:
    store = PostgresStore(postgres_url)
    try:
        store.create_session("S", "/p", 1, version=1)
        lease = store.acquire_writer("S")
        watch = store.watch("S")
        queued: list[Commit] = []
        returned = threading.Event()

        def append_later() -> None:
            queued.append(store.append_later(lease, [_message_entry("E1", None, "q")], "E1", 2))
            returned.set()

        with psycopg.connect(postgres_url) as blocker:  # a transaction holding the session's row
            blocker.execute("SELECT 1 FROM tether_sessions WHERE id = 'S' FOR UPDATE")
            caller = threading.Thread(target=append_later, daemon=True)
            caller.start()
            returned_at_once = returned.wait(5)
            committed_meanwhile = bool(queued) and queued[0].finished
            blocker.rollback()
        caller.join()
        assert returned_at_once, "append_later waited for the server"
        assert not committed_meanwhile
        assert queued[0].wait(10)
        assert queued[0].failure(lease) is None
        assert [e.id for e in store.entries("S")] == ["E1"]
        assert store.get_session("S").leaf_id == "E1"
        assert watch.wait(5), "a follower hears of a batched append"
        watch.close()
    finally:
        store.close()


def test_a_batch_with_a_session_taken_over_writes_nothing_and_then_fails_only_that_one(
    postgres_url: str,
) -> None:
    store = PostgresStore(postgres_url)
    try:
        leases: list[WriterLease] = []
        for i in range(3):
            store.create_session(f"s{i}", "/p", 1, version=1)
            leases.append(store.acquire_writer(f"s{i}"))
        with psycopg.connect(postgres_url, autocommit=True) as db:  # another writer took s1 over
            db.execute("UPDATE tether_sessions SET writer_token = 'theirs', writer_pid = 7 WHERE id = 's1'")
        batch = [
            Append(lease, [_message_entry(f"E{i}", None, f"to s{i}")], f"E{i}", 2)
            for i, lease in enumerate(leases)
        ]
        with pytest.raises(Exception):  # noqa: B017 - which exception is the store's own business
            store._append_batch(batch)  # pyright: ignore[reportPrivateUsage]
        assert [store.get_session(f"s{i}").entry_count for i in range(3)] == [0, 0, 0]
        queued = [
            store.append_later(lease, [_message_entry(f"F{i}", None, f"to s{i}")], f"F{i}", 3)
            for i, lease in enumerate(leases)
        ]
        for committed in queued:
            assert committed.wait(10)
        failures = [committed.failure(lease) for committed, lease in zip(queued, leases, strict=True)]
        assert failures[0] is None and failures[2] is None
        assert isinstance(failures[1], SessionError)
        assert "taken over by pid 7" in str(failures[1])
        assert [[e.id for e in store.entries(f"s{i}")] for i in range(3)] == [["F0"], [], ["F2"]]
        assert [store.get_session(f"s{i}").message_count for i in range(3)] == [1, 0, 1]
    finally:
        store.close()


class _WatchedStore(PostgresStore):
    """Notes the thread and the number of sessions of each batch it commits."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.batches: list[tuple[int, int]] = []

    def _append_batch(self, batch: Sequence[Append]) -> None:
        self.batches.append((threading.get_ident(), len({p.lease.session_id for p in batch})))
        super()._append_batch(batch)


async def test_concurrent_runs_commit_off_the_loop_in_shared_batches_and_keep_each_sessions_order(
    postgres_url: str,
) -> None:
    store = _WatchedStore(postgres_url)
    manager = SessionManager(store)
    cores: list[AgentSession] = []
    for i in range(20):
        model = ScriptedModel(
            [reply(tool_call("echo", {"text": f"{i}-{t}"})) for t in range(4)] + [reply(f"done {i}")]
        )
        cores.append(
            AgentSession(Agent(model=model.model, stream_fn=model, tools=[ECHO]), manager.create(f"/p/{i}"))
        )
    await asyncio.gather(*(core.prompt(f"go {i}") for i, core in enumerate(cores)))
    loop_thread = threading.get_ident()
    assert store.batches and all(thread != loop_thread for thread, _ in store.batches)
    assert max(sessions for _, sessions in store.batches) > 1, (
        "appends of several sessions in one transaction"
    )
    expected: dict[str, tuple[list[str], SessionRecord]] = {}
    for core in cores:
        assert core.session is not None
        expected[core.session.id] = ([e["id"] for e in core.session.entries()], core.session.record)
        await core.close()
    store.close()
    with SessionManager.at(postgres_url) as fresh:
        for session_id, (ids, record) in expected.items():
            reopened = fresh.open(session_id, readonly=True)
            # the two settings entries, the prompt, four calls and their results, the answer
            assert len(ids) == 2 + 1 + 4 * 2 + 1 and [e["id"] for e in reopened.entries()] == ids
            assert [e["id"] for e in reopened.path()] == ids, "one chain, in append order"
            assert reopened.record == record
