"""One ``LISTEN`` connection per PostgreSQL store, shared by every watch of the process.

A watch per followed session with a connection of its own would make 100 followed sessions 100
connections: PostgreSQL's default ``max_connections`` is 100, and ``tether serve`` follows that
many sessions at once. So a store has one ``SharedListener``: one connection, ``LISTEN`` on the
channel of each watched session (``tether.<session id>``), and one thread that waits on that
connection's socket and wakes the watches of the channel each notification names.

The thread alone uses the connection: a new watch registers its channel and waits until the thread
has sent the ``LISTEN`` (appends committed after ``watch`` returns are noticed, as the store's
contract says); a watch closed last on its channel has it ``UNLISTEN``ed. The thread wakes from its
``select`` through a pipe of its own. It starts with the first watch and ends, closing its
connection, when the last one is closed (or with the store).

Restarts: when the connection is lost (the server restarted, the network blinked), every watch is
woken (its follower re-reads, riding out the outage with the store's patience), the thread
reconnects with the same patience, listens again on every channel, then wakes every watch once
more: whatever was committed while nobody listened is re-read from each follower's last entry.
If the server stays away longer than that patience, each watch's next ``wait`` raises
``SessionError``, as the follower's own reads would.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql

from tether.store.store import SessionError

Connection = psycopg.Connection[tuple[Any, ...]]

REGISTER_TIMEOUT = 30.0
"""Extra bound on a new watch's wait for its ``LISTEN``, beyond the store's outage patience."""


class ListenWatch:
    """One session's watch (``SessionWatch``): woken by the store's shared listener."""

    def __init__(self, listener: SharedListener, channel: str) -> None:
        self._listener = listener
        self.channel = channel
        self._woken = threading.Event()
        self.failure: str | None = None
        """Why the listener stopped for good (the database stayed away), once it did."""

    def wait(self, timeout: float) -> bool:
        woken = self._woken.wait(timeout)
        if woken:
            # A notification arriving after this clear wakes the next wait; one arriving before it
            # was committed before the caller's re-read, which sees it.
            self._woken.clear()
        if self.failure is not None:
            raise SessionError(self.failure)
        return woken

    def close(self) -> None:
        self._listener.remove(self)

    def wake(self) -> None:
        self._woken.set()


class SharedListener:
    """The store's one listening connection and its thread (see the module docstring).

    Args:
        reconnect: A new autocommit connection, tried again while the server is unreachable
            (the store's patience); ``SessionError`` once that runs out.
        where: The database as messages name it.
        patience_seconds: The store's outage patience: a new watch waits for its ``LISTEN``
            that long (and ``REGISTER_TIMEOUT`` more) while the thread reconnects.
    """

    def __init__(self, reconnect: Callable[[], Connection], where: str, patience_seconds: float) -> None:
        self._reconnect = reconnect
        self._where = where
        self._register_timeout = patience_seconds + REGISTER_TIMEOUT
        self._mutex = threading.Lock()
        self._watches: dict[str, set[ListenWatch]] = {}
        self._registering: list[tuple[ListenWatch, threading.Event]] = []
        """New watches waiting for the thread to listen on their channels."""
        self._thread: threading.Thread | None = None
        self._closed = False
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)

    def watch(self, channel: str) -> ListenWatch:
        """A watch of ``channel``, listened to when this returns."""
        watch = ListenWatch(self, channel)
        listening = threading.Event()
        with self._mutex:
            if self._closed:
                raise SessionError(f"session database {self._where}: the store is closed")
            self._watches.setdefault(channel, set()).add(watch)
            self._registering.append((watch, listening))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="tether-pg-listen", daemon=True)
                self._thread.start()
            else:
                self._poke()
        if not listening.wait(self._register_timeout):
            watch.close()
            raise SessionError(f"session database {self._where}: no answer to LISTEN")
        if watch.failure is not None:
            watch.close()
            raise SessionError(watch.failure)
        return watch

    def remove(self, watch: ListenWatch) -> None:
        with self._mutex:
            watchers = self._watches.get(watch.channel)
            if watchers is None or watch not in watchers:
                return
            watchers.discard(watch)
            if not watchers:
                del self._watches[watch.channel]  # the thread unlistens it, or ends if it was the last
                self._poke()

    def close(self) -> None:
        """End the thread and its connection; watches still open fail at their next wait."""
        with self._mutex:
            self._closed = True
            thread = self._thread
            self._fail_all(f"session database {self._where}: the store is closed")
            self._poke()
        if thread is not None:
            thread.join(timeout=10)  # longer only while it reconnects; it ends after that
        with self._mutex:
            if thread is None or not thread.is_alive():
                self._thread_ended(thread)

    def _thread_ended(self, thread: threading.Thread | None) -> None:
        """``thread`` ended (or is about to); once the store is closed and no thread is left, the
        pipe goes too (never under a thread still selecting on it). Caller holds the mutex."""
        if self._thread is thread:
            self._thread = None
        if self._closed and self._thread is None and self._wake_write >= 0:
            os.close(self._wake_read)
            os.close(self._wake_write)
            self._wake_read = self._wake_write = -1

    # -- the thread ------------------------------------------------------------------------------

    def _run(self) -> None:
        db: Connection | None = None
        listened: set[str] = set()
        resumed = False
        try:
            while True:
                if db is None:
                    db = self._connect()
                    if db is None:
                        return
                    listened.clear()
                try:
                    if not listened:  # a new connection: it sits idle between notifications
                        db.execute("SET idle_session_timeout = 0")
                    if not self._listen(db, listened):
                        return  # no watch left (or the store closed)
                    if resumed:
                        resumed = False
                        self._wake_all()  # listening again: re-read what came while nobody listened
                    self._receive(db)
                except psycopg.OperationalError:
                    db.close()
                    db = None
                    resumed = True
                    self._wake_all()  # each follower re-reads now, riding out the outage itself
        except psycopg.Error as err:  # not the connection's loss: a statement the server refused
            with self._mutex:
                self._fail_all(f"session database {self._where}: {err}")
                self._thread_ended(threading.current_thread())
        finally:
            if db is not None:
                db.close()

    def _connect(self) -> Connection | None:
        """A new connection, or ``None`` when the database stayed away (every watch failed)."""
        try:
            db = self._reconnect()
        except SessionError as err:
            with self._mutex:
                self._fail_all(str(err))
                self._thread_ended(threading.current_thread())
            return None
        # Notifications read along with a statement's answer (a LISTEN's) come through here.
        db.add_notify_handler(lambda notify: self._wake({notify.channel}))
        return db

    def _listen(self, db: Connection, listened: set[str]) -> bool:
        """``LISTEN``/``UNLISTEN`` until the connection listens on the channels watched, then
        release the new watches; False (the thread is to end) once no watch is left."""
        while True:
            with self._mutex:
                wanted = set(self._watches)
                registering, self._registering = self._registering, []
                if not wanted and not registering:
                    self._thread_ended(threading.current_thread())
                    return False
            for channel in wanted - listened:
                db.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
                listened.add(channel)
            for channel in listened - wanted:
                db.execute(sql.SQL("UNLISTEN {}").format(sql.Identifier(channel)))
                listened.discard(channel)
            for _, listening in registering:
                listening.set()
            with self._mutex:
                if set(self._watches) == listened and not self._registering:
                    return True

    def _receive(self, db: Connection) -> None:
        """Wait for notifications (waking their watches) or a poke (a watch came or went)."""
        pgconn = db.pgconn
        while True:
            self._dispatch(db)  # any libpq read along with the last answer
            readable, _, _ = select.select([pgconn.socket, self._wake_read], [], [])
            if self._wake_read in readable:
                with contextlib.suppress(BlockingIOError):
                    while os.read(self._wake_read, 4096):
                        pass
            if pgconn.socket in readable:
                pgconn.consume_input()  # OperationalError once the connection is lost
                self._dispatch(db)
            if self._wake_read in readable:
                return

    def _dispatch(self, db: Connection) -> None:
        pgconn = db.pgconn
        channels: set[str] = set()
        while (notify := pgconn.notifies()) is not None:
            channels.add(notify.relname.decode())
        if channels:
            self._wake(channels)

    def _wake(self, channels: set[str]) -> None:
        with self._mutex:
            woken = [w for channel in channels for w in self._watches.get(channel, ())]
        for watch in woken:
            watch.wake()

    # -- helpers (the caller holds the mutex where it says so) -----------------------------------

    def _poke(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._wake_write, b"x")

    def _wake_all(self) -> None:
        with self._mutex:
            woken = [w for watchers in self._watches.values() for w in watchers]
        for watch in woken:
            watch.wake()

    def _fail_all(self, reason: str) -> None:
        """Every watch fails at its next wait, and is forgotten; caller holds the mutex."""
        for watchers in self._watches.values():
            for watch in watchers:
                watch.failure = reason
                watch.wake()
        for watch, listening in self._registering:
            watch.failure = reason
            listening.set()
        self._watches.clear()
        self._registering.clear()
