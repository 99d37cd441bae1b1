"""The PostgreSQL store listens on one connection for all its watches (``postgres_listen``): a
process follows more sessions than the server has connections, through a restart of the server
(``pg_ctl stop -m immediate``, then started again) with no entry missed, and the listening
connection is closed once nothing is watched.

A private server per test, with room for only ``MAX_CONNECTIONS`` connections (a connection per
watch would need ``SESSIONS``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import LiteralString

import psycopg
import pytest

from session_helpers import user
from tether.session import Session, SessionManager
from tether.store import PostgresStore
from tether.store.follow import follow
from tether.store.store import StoredEntry
from tether.testing.postgres import CRASH_SAFE_SETTINGS, PostgresServer, postgres_server

MAX_CONNECTIONS = 40
SESSIONS = 120
DOWN_SECONDS = 2.0
WAIT_SECONDS = 120.0


@pytest.fixture
def server(postgres: PostgresServer) -> Iterator[PostgresServer]:  # needs the shared one's binaries
    settings = {**CRASH_SAFE_SETTINGS, "max_connections": str(MAX_CONNECTIONS)}
    with postgres_server(postgres.bin_dir, settings) as own:
        yield own


def _backends(url: str, where: LiteralString) -> int:
    """How many of the server's processes ``where`` names in ``pg_stat_activity``, counted on a
    connection of its own."""
    with psycopg.connect(url, autocommit=True) as db:
        row = db.execute("SELECT count(*) FROM pg_stat_activity WHERE " + where).fetchone()
    assert row is not None
    return int(row[0])


def _client_connections(url: str) -> int:
    """Client connections but the one counting."""
    return _backends(url, "backend_type = 'client backend'") - 1


def _listening_connections(url: str) -> int:
    """Backends whose last statement was a LISTEN or UNLISTEN: the listeners."""
    return _backends(url, "query LIKE 'LISTEN %' OR query LIKE 'UNLISTEN %'")


class _Followers:
    """A thread per session following it on ``store``, recording the ids of the entries it got."""

    def __init__(self, store: PostgresStore, sessions: list[Session]) -> None:
        self.stop = threading.Event()
        self.seen: dict[str, list[str]] = {s.id: [] for s in sessions}
        self.failures: list[BaseException] = []
        entries = [follow(store, s.id, stop=self.stop) for s in sessions]  # all watching now
        self.threads = [
            threading.Thread(target=self._read, args=(s.id, e))
            for s, e in zip(sessions, entries, strict=True)
        ]
        for thread in self.threads:
            thread.start()

    def _read(self, session_id: str, entries: Iterator[StoredEntry]) -> None:
        try:
            for entry in entries:
                self.seen[session_id].append(entry.id)
        except BaseException as err:  # the assertion below names it
            self.failures.append(err)

    def wait_for(self, sessions: list[Session]) -> None:
        """Until every follower got every entry of its session (or the time is up)."""
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline and not self.failures:
            if all(self.seen[s.id] == _ids(s) for s in sessions):
                return
            time.sleep(0.1)

    def end(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join()


def _ids(session: Session) -> list[str]:
    return [e["id"] for e in session.entries()]


def _append_round(sessions: list[Session], word: str) -> None:
    for s in sessions:
        s.append_message(user(f"{word} {s.id}"))


def test_more_sessions_than_connections_followed_through_a_restart(server: PostgresServer) -> None:
    url = server.url()
    store = PostgresStore(url, max_connections=4)
    try:
        with SessionManager.at(url) as writer:
            sessions = [writer.create("/p") for _ in range(SESSIONS)]
            _append_round(sessions, "before")
            followers = _Followers(store, sessions)
            try:
                _append_round(sessions, "one")
                followers.wait_for(sessions)
                assert not followers.failures
                assert all(followers.seen[s.id] == _ids(s) for s in sessions)
                used = _client_connections(url)
                assert used < MAX_CONNECTIONS
                assert _listening_connections(url) == 1

                server.crash()
                # Appended while the server is down: they land once it is back, as it listens again.
                appender = threading.Thread(target=_append_round, args=(sessions, "two"))
                appender.start()
                time.sleep(DOWN_SECONDS)
                server.start_again()
                appender.join()
                _append_round(sessions, "three")
                followers.wait_for(sessions)
            finally:
                followers.end()
            assert not followers.failures
            for s in sessions:
                assert followers.seen[s.id] == _ids(s)  # every entry, once, in order
                assert len(followers.seen[s.id]) == len(_ids(s)) >= 4
    finally:
        store.close()


def test_the_listening_connection_closes_with_the_last_watch(server: PostgresServer) -> None:
    url = server.url()
    store = PostgresStore(url)
    try:
        with SessionManager.at(url) as writer:
            a, b = writer.create("/p"), writer.create("/p")
            first, second = store.watch(a.id), store.watch(b.id)
            assert _listening_connections(url) == 1
            a.append_message(user("hello"))
            assert first.wait(WAIT_SECONDS)
            first.close()
            b.append_message(user("still here"))
            assert second.wait(WAIT_SECONDS)
            second.close()
            deadline = time.monotonic() + WAIT_SECONDS
            while _listening_connections(url) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _listening_connections(url) == 0
            again = store.watch(a.id)  # a new listener for the next watch
            a.append_message(user("again"))
            assert again.wait(WAIT_SECONDS)
            again.close()
    finally:
        store.close()
