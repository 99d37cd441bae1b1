"""A writer whose lock connection died takes every lease back, whichever of its threads notices
first: a durable worker's event loop and its store's writer thread both write, and after a
server restart both find the locks gone at about the same time. Neither may leave the other's
session marked lost (its run then ended in ERROR, "read-only here", in the middle of riding out
the restart: the fresh-clone CI of session 21, ``test_workers_ride_out_a_blip_and_an_outage``).

The interleavings are driven deterministically: one thread's take-back runs at the exact point
where the other's write has failed its fence (``_take_back`` wrapped), and a write's fence check
in flight is a transaction holding the session's advisory lock in shared mode, as the fence's
``pg_try_advisory_xact_lock_shared`` holds it until its write's transaction ends.

A restart may also land between a write's taking its lease back and its writing again (the
fresh-clone CI of session 23): that write rides the second restart out too, and its lease is
taken back again. And a write whose lease could not be taken back says whether another process
took the session over or this one failed to take its own lease back.

Taking leases back, and taking a new one, run on the lock connection made again after a restart;
a restart may come again just after it is made (the server's own restart, or a second one), so
the take-back and the taking ride the outage out as writes do, and when the server stays away
they end in one ``SessionError`` naming the database."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Generator, Iterator
from contextlib import closing, contextmanager

import psycopg
import pytest

from narrowing import content_of
from session_helpers import user
from tether.session import ReadOnlySessionError, Session, SessionManager
from tether.store import PostgresStore, SessionError, postgres_relock
from tether.store.postgres_schema import lock_key
from tether.store.postgres_store import OUTAGE_SECONDS, AdvisoryLease, Connection
from tether.testing.postgres import CRASH_SAFE_SETTINGS, PostgresServer, postgres_server

WAITER_SECONDS = 10.0
"""A bound on waiting for the take-back to queue for the lock (not a timing assertion: it only
ends the wait when the code under test never queues, as it did not before the fix)."""
GIVE_UP_SECONDS = 1.0
"""The outage bound of a store whose server does not come back: how long it keeps trying."""


@pytest.fixture
def server(postgres: PostgresServer) -> Iterator[PostgresServer]:  # the shared one's binaries
    """A server of the test's own, to restart (crashing the shared one would cut every test's)."""
    with postgres_server(postgres.bin_dir, CRASH_SAFE_SETTINGS) as own:
        yield own


@contextmanager
def _two_sessions(
    postgres_url: str, outage_seconds: float = OUTAGE_SECONDS
) -> Generator[tuple[Session, Session, PostgresStore]]:
    """Two sessions with a message each, written through one store (one process's writers)."""
    store = PostgresStore(postgres_url, outage_seconds=outage_seconds)
    with closing(store), SessionManager(store) as manager:
        a, b = manager.create("/p"), manager.create("/p")
        a.append_message(user("a before"))
        b.append_message(user("b before"))
        yield a, b, store


def _kill_lock_connection(postgres: PostgresServer, store: PostgresStore) -> None:
    """The store's lock connection dies as in a server restart: every lock it held is gone."""
    pid = store._lock_db.info.backend_pid  # pyright: ignore[reportPrivateUsage]
    with psycopg.connect(postgres.url(), autocommit=True) as db:
        db.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,))  # waits till it is gone


def _contents(postgres_url: str, session: Session) -> list[object]:
    with SessionManager.at(postgres_url) as reader:
        return [content_of(m) for m in reader.open(session.id, readonly=True).messages]


def test_a_lease_another_thread_took_back_after_its_write_failed_the_fence_is_kept(
    postgres: PostgresServer, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _two_sessions(postgres_url) as (a, b, store):
        _kill_lock_connection(postgres, store)
        take_back = store._take_back  # pyright: ignore[reportPrivateUsage]
        interleaved: list[str] = []

        def other_thread_first(lease: AdvisoryLease) -> bool:
            # A's write found the lock gone; before it takes the lease back, B's write on another
            # thread notices the dead connection and takes every lease back, A's included.
            if lease.session_id == a.id and not interleaved:
                interleaved.append(b.id)
                other = threading.Thread(target=b.append_message, args=(user("b after"),))
                other.start()
                other.join()
            return take_back(lease)

        monkeypatch.setattr(store, "_take_back", other_thread_first)
        a.append_message(user("a after"))
        assert interleaved == [b.id]
        assert not a.readonly and not b.readonly
        a.append_message(user("a again"))
        assert _contents(postgres_url, a) == ["a before", "a after", "a again"]
        assert _contents(postgres_url, b) == ["b before", "b after"]


def test_a_lease_whose_fence_check_is_in_flight_while_it_is_taken_back_is_kept(
    postgres: PostgresServer, postgres_url: str
) -> None:
    with _two_sessions(postgres_url) as (a, b, store):
        _kill_lock_connection(postgres, store)
        key = lock_key("session", store.schema, b.id)
        with psycopg.connect(postgres_url) as fence:  # not autocommit: B's write's transaction
            fence.execute("SELECT pg_try_advisory_xact_lock_shared(%s)", (key,))

            def end_the_write_once_the_lock_is_awaited() -> None:
                deadline = time.monotonic() + WAITER_SECONDS
                with psycopg.connect(postgres.url(), autocommit=True) as db:
                    while time.monotonic() < deadline:
                        waiting = db.execute(
                            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                            " AND classid::bigint = %s AND objid::bigint = %s",
                            ((key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF),
                        ).fetchone()
                        if waiting and waiting[0]:
                            break
                        time.sleep(0.05)
                fence.commit()

            ender = threading.Thread(target=end_the_write_once_the_lock_is_awaited)
            ender.start()
            # A's write finds its lock gone and takes every lease back on a new connection, B's
            # while B's fence check holds its lock for a moment.
            a.append_message(user("a after"))
            ender.join()
        assert not b.readonly
        b.append_message(user("b after"))
        assert _contents(postgres_url, a) == ["a before", "a after"]
        assert _contents(postgres_url, b) == ["b before", "b after"]


def test_an_append_after_a_deferred_one_lost_the_lease_says_it_was_taken_over(postgres_url: str) -> None:
    with _two_sessions(postgres_url) as (a, _, _):
        with psycopg.connect(postgres_url, autocommit=True) as db:  # another writer took it over
            db.execute(
                "UPDATE tether_sessions SET writer_token = 'theirs', writer_pid = 7 WHERE id = %s", (a.id,)
            )
        a.defer_writes()
        a.append_message(user("a after, too late"))  # committed (or not) by the writer thread
        asyncio.run(a.written())
        assert a.readonly
        with pytest.raises(SessionError, match="taken over by pid 7") as raised:
            a.append_message(user("a again"))
        assert not isinstance(raised.value, ReadOnlySessionError)
        assert _contents(postgres_url, a) == ["a before"]


def test_a_restart_between_taking_a_lease_back_and_writing_again_is_ridden_out(
    server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _two_sessions(server.url()) as (a, b, store):
        take_back = store._take_back  # pyright: ignore[reportPrivateUsage]
        restarted: list[str] = []

        def restart_once_taken_back(lease: AdvisoryLease) -> bool:
            # The first write after a blip takes its lease back; the next restart (the test's
            # outage) comes before it writes again, and its lock dies with its connection again.
            held = take_back(lease)
            if not restarted:
                restarted.append(lease.session_id)
                server.crash()
                server.start_again()
            return held

        monkeypatch.setattr(store, "_take_back", restart_once_taken_back)
        server.crash()  # the blip
        server.start_again()
        a.append_message(user("a after"))
        assert restarted == [a.id]
        assert not a.readonly and not b.readonly
        b.append_message(user("b after"))
        a.append_message(user("a again"))
        assert _contents(server.url(), a) == ["a before", "a after", "a again"]
        assert _contents(server.url(), b) == ["b before", "b after"]


def test_a_lease_this_process_cannot_take_back_says_so_not_that_it_was_taken_over(
    postgres: PostgresServer, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres_relock, "RELOCK_WAIT_SECONDS", 0.5)
    with (
        _two_sessions(postgres_url) as (a, _, store),
        psycopg.connect(postgres_url, autocommit=True) as other,
    ):
        take_back = store._take_back  # pyright: ignore[reportPrivateUsage]

        def lock_taken_elsewhere_first(lease: AdvisoryLease) -> bool:
            # Another connection holds the session's lock, not its row, past the relock's wait.
            other.execute("SELECT pg_advisory_lock(%s)", (lease.key,))
            return take_back(lease)

        monkeypatch.setattr(store, "_take_back", lock_taken_elsewhere_first)
        _kill_lock_connection(postgres, store)
        with pytest.raises(SessionError) as raised:
            a.append_message(user("a after"))
        said = str(raised.value)
        assert "taken over" not in said, said
        assert f"session {a.id!r}: this process could not take its writer lease back" in said, said
        assert _contents(postgres_url, a) == ["a before"]


def _says_where(err: SessionError, server: PostgresServer) -> None:
    said = str(err)
    assert "\n" not in said and f"session database {server.url()}" in said, said


@pytest.mark.parametrize("back", [True, False], ids=["back", "stays-down"])
def test_a_restart_just_after_the_take_back_reconnected_is_ridden_out(
    server: PostgresServer, back: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restart comes just after the lock connection is made again, before the leases are taken
    back on it: twice, so that the take-back's second try, after reconnecting once more, finds
    its connection dead too. It tried only twice and let psycopg's error out of the write."""
    with _two_sessions(server.url(), OUTAGE_SECONDS if back else GIVE_UP_SECONDS) as (a, b, store):
        connect_locks = store._connect_locks  # pyright: ignore[reportPrivateUsage]
        crashes: list[int] = []

        def crash_twice_once_connected() -> Connection:
            db = connect_locks()
            if len(crashes) < 2:
                crashes.append(db.info.backend_pid)
                server.crash()
                if back or len(crashes) == 1:
                    server.start_again()
            return db

        monkeypatch.setattr(store, "_connect_locks", crash_twice_once_connected)
        _kill_lock_connection(server, store)
        if not back:
            with pytest.raises(SessionError) as raised:
                a.append_message(user("a after"))
            assert len(crashes) == 2
            _says_where(raised.value, server)
            return
        a.append_message(user("a after"))
        assert len(crashes) == 2
        assert not a.readonly and not b.readonly
        b.append_message(user("b after"))
        assert _contents(server.url(), a) == ["a before", "a after"]
        assert _contents(server.url(), b) == ["b before", "b after"]


@pytest.mark.parametrize("back", [True, False], ids=["back", "stays-down"])
def test_a_restart_just_after_taking_a_lease_reconnected_is_ridden_out(
    server: PostgresServer, back: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run opens a session on a lock connection that died (a restart while the process was
    idle), and a restart comes again just after the lock connection is made again: taking the
    lease tried only once more and failed the run's start with "session database ...". The
    lease the process already held is taken back on the new connection too."""
    with _two_sessions(server.url(), OUTAGE_SECONDS if back else GIVE_UP_SECONDS) as (a, b, store):
        a.close()
        reconnect_locks = store._reconnect_locks  # pyright: ignore[reportPrivateUsage]
        crashes: list[None] = []

        def crash_once_reconnected() -> None:
            reconnect_locks()
            if not crashes:
                crashes.append(None)
                server.crash()
                if back:
                    server.start_again()

        monkeypatch.setattr(store, "_reconnect_locks", crash_once_reconnected)
        _kill_lock_connection(server, store)
        manager = SessionManager(store)  # the helper's store: it closes it
        if not back:
            with pytest.raises(SessionError) as raised:
                manager.open(a.id)
            assert crashes
            _says_where(raised.value, server)
            return
        with manager.open(a.id) as again:
            assert crashes
            again.append_message(user("a again"))
        b.append_message(user("b after"))
        assert _contents(server.url(), a) == ["a before", "a again"]
        assert _contents(server.url(), b) == ["b before", "b after"]
