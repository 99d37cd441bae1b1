"""The PostgreSQL store rides out a server restart (``pg_ctl stop -m immediate``, then started
again): a writer's append made while the server is down lands once it is back, under the lease
the writer held (taken back on a new lock connection); no second writer gets the session in
between; a follower goes on from the last entry it saw; one warning says the database is away;
a worker's store opened while the server is down waits for it.

A private server per test: crashing the shared one would cut every other test's connections."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from psycopg_pool import PoolClosed

from narrowing import content_of
from session_helpers import assistant, text, user
from tether.session import SessionManager
from tether.store import (
    PostgresStore,
    SessionError,
    SessionLockedError,
    SessionNotFoundError,
    postgres_store,
)
from tether.store.database import open_store
from tether.store.errors import SessionDatabaseUnreachableError
from tether.store.follow import follow
from tether.store.postgres_errors import unreachable
from tether.testing.postgres import CRASH_SAFE_SETTINGS, PostgresServer, postgres_server

DOWN_SECONDS = 2.0
"""A short outage: long enough that every connection is refused for a while."""


@pytest.fixture
def server(postgres: PostgresServer) -> Iterator[PostgresServer]:  # needs the shared one's binaries
    with postgres_server(postgres.bin_dir, CRASH_SAFE_SETTINGS) as own:
        yield own


def _outage(server: PostgresServer, seconds: float) -> threading.Thread:
    """Crash the server now and start it again ``seconds`` later, in the background."""
    server.crash()
    return _outage_ending(server, seconds)


@pytest.mark.parametrize("seconds", [0.1, DOWN_SECONDS])
def test_a_writer_rides_out_a_restart_and_keeps_its_session(
    server: PostgresServer, seconds: float, caplog: pytest.LogCaptureFixture
) -> None:
    url = server.url()
    with SessionManager.at(url) as first, SessionManager.at(url) as second:
        s = first.create("/p")
        s.append_message(user("before"))
        restarting = _outage(server, seconds)
        with caplog.at_level(logging.WARNING, logger="tether.store"):
            # The paid answer of a run, appended while the server is down: it waits, then lands.
            s.append_message(assistant(text("a paid answer"), cost=0.5))
        restarting.join()
        away = [r.getMessage() for r in caplog.records if "unreachable" in r.getMessage()]
        assert len(away) == 1 and url.split("@")[1] in away[0], away
        # The lock connection died with the server: the lease was taken back, so no one else gets it.
        with pytest.raises(SessionLockedError):
            second.open(s.id)
        s.append_message(user("after"))
        stored = second.open(s.id, readonly=True)
        assert [content_of(m) for m in stored.messages][::2] == ["before", "after"]
        assert stored.record.cost == 0.5 and stored.record.entry_count == 3


def test_a_second_writer_during_the_outage_is_refused_and_the_first_writes_on(server: PostgresServer) -> None:
    url = server.url()
    with SessionManager.at(url) as first, SessionManager.at(url) as second:
        s = first.create("/p")
        s.append_message(user("before"))
        _outage(server, 0.1).join()
        # The server is back; the first writer has not written since, so its lock is gone.
        with pytest.raises(SessionLockedError):
            second.open(s.id)
        s.append_message(user("after"))
        s.close()
        second.open(s.id).append_message(user("the second, once the first closed"))
        assert [content_of(m) for m in second.open(s.id, readonly=True).messages] == [
            "before",
            "after",
            "the second, once the first closed",
        ]


def test_a_follower_goes_on_after_a_restart_from_the_last_entry_it_saw(server: PostgresServer) -> None:
    url = server.url()
    store = PostgresStore(url)
    try:
        with SessionManager.at(url) as writer:
            s = writer.create("/p")
            s.append_message(user("one"))
            stop = threading.Event()
            seen: list[str] = []
            entries = follow(store, s.id, stop=stop)

            def read() -> None:
                for entry in entries:
                    seen.append(entry.id)

            reader = threading.Thread(target=read)
            reader.start()
            _outage(server, DOWN_SECONDS).join()
            s.append_message(user("two"))
            s.append_message(user("three"))
            deadline = time.monotonic() + 30
            while len(seen) < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            stop.set()
            reader.join()
            assert seen == [e["id"] for e in s.entries()]
    finally:
        store.close()


def test_a_patient_open_waits_for_a_restarting_server_and_a_plain_one_fails_at_once(
    server: PostgresServer,
) -> None:
    server.crash()
    with pytest.raises(SessionError, match="cannot open the session database"):
        open_store(server.url())  # a person's command: no wait
    restart = _outage_ending(server, DOWN_SECONDS)
    store = open_store(server.url(), patient=True)  # a worker's first run, mid-restart
    try:
        restart.join()
        assert store.list_sessions() == []
    finally:
        store.close()


def _outage_ending(server: PostgresServer, seconds: float) -> threading.Thread:
    """Start the (crashed) server again ``seconds`` from now, in the background."""

    def later() -> None:
        time.sleep(seconds)
        server.start_again()

    thread = threading.Thread(target=later)
    thread.start()
    return thread


def test_a_closed_store_is_not_an_outage() -> None:
    """A closed store's pool raises ``PoolClosed``, an ``OperationalError`` without a SQLSTATE as
    a lost connection is: taken for the server's absence, every call on a closed store waited out
    ``OUTAGE_SECONDS`` (60 s) before saying it was closed (``test_a_closed_store_says_so`` took
    two minutes)."""
    assert not unreachable(PoolClosed("the pool 'tether-sessions' is already closed"))


def test_a_verdict_on_a_session_is_not_an_outage() -> None:
    """Taking a lease rides out an outage; a session id is whatever a user typed or an imported
    file held, and one with "connection" in it made its "no session" or "locked" an outage,
    said only after ``OUTAGE_SECONDS``."""
    assert not unreachable(SessionNotFoundError("connection-test"))
    assert not unreachable(SessionLockedError("connection-test", "pid 7 on host"))
    assert not unreachable(SessionError("cannot open the session database here: connection refused"))
    assert unreachable(SessionDatabaseUnreachableError("cannot open the session database here: refused"))


@pytest.mark.parametrize("whom", ["role", "database"])
def test_a_patient_open_that_the_server_refuses_fails_at_once(
    postgres: PostgresServer, whom: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker's store opened with a role or database the server does not know: the server
    answered, so waiting changes nothing. libpq's failure carries no SQLSTATE, and every such
    failure was an outage: the worker logged the database as unreachable and said the real
    reason only after ``outage_seconds`` (60 s by default)."""
    url = postgres.url().replace("tether@", "nobody@") if whom == "role" else postgres.url("no_such_db")
    with caplog.at_level(logging.WARNING, logger="tether.store"), pytest.raises(SessionError) as raised:
        PostgresStore(url, patient=True, outage_seconds=5)
    assert "does not exist" in str(raised.value)
    assert not isinstance(raised.value, SessionDatabaseUnreachableError)
    assert [r.getMessage() for r in caplog.records if "unreachable" in r.getMessage()] == []


@pytest.mark.parametrize("step", ["lock connection settings", "migration"])
def test_a_patient_open_rides_out_a_server_gone_in_the_middle_of_opening(
    server: PostgresServer, step: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker opening its store as the server crashes: the crash can come after the connection
    was made, before the lock connection's settings or the migration ran. Only the connecting
    waited out an outage; the opening failed with "cannot open the session database" (the
    flaky ``test_workers_ride_out_a_blip_and_an_outage``)."""
    crashed: list[threading.Thread] = []

    def crash_once() -> None:
        if not crashed:
            crashed.append(_outage(server, DOWN_SECONDS))

    if step == "migration":
        real_migrate = postgres_store.migrate

        def migrate(db: Any, schema: str) -> None:
            crash_once()
            real_migrate(db, schema)

        monkeypatch.setattr(postgres_store, "migrate", migrate)
    else:
        real_connect = PostgresStore.connect

        def connect(self: PostgresStore) -> Any:
            db = real_connect(self)
            crash_once()
            return db

        monkeypatch.setattr(PostgresStore, "connect", connect)

    try:
        store = PostgresStore(server.url(), patient=True, outage_seconds=30)  # bounded: 30 s at most
    finally:
        for restart in crashed:
            restart.join()
    try:
        assert crashed, "the hook did not run"
        assert store.list_sessions() == []
    finally:
        store.close()
