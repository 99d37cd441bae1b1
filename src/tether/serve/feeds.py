"""One watch per followed session, fanned out to every client following it.

A thousand people watching one run must not cost a thousand store watches (each a thread, and
on PostgreSQL a ``LISTEN`` channel). So a session that has followers has one ``_Feed``: one
thread waiting on the store's watch (``SessionStore.watch``) that reads each append once, formats
it once as SSE text and hands that same text to each follower's ``Subscriber``, a bounded buffer
in the event loop. A follower that falls ``buffer`` chunks behind (its connection does not take
what it is sent) is dropped: its buffer is freed, and its stream ends with a ``dropped`` event
naming the last entry it got, which is where it resumes (``Last-Event-ID``).

Joining is exact without relying on how ids sort: under the feed's lock, a joiner first lets the
feed catch up with the store (the feed's followers get what is new), then reads its own history
from the store and keeps only what the feed has already passed on; everything after that reaches
it through the feed, which it joins before the lock is released.

A move of the session's leaf (``POST /branch`` on any server, ``/tree`` in a CLI or RPC process)
reaches the followers the same way: a wake-up whose new entries do not continue from the leaf
the followers know (or that finds none) reads the session row before the entries appended since
(as ``tether.store.follow`` does), and a leaf the appends do not explain is sent as a ``leaf``
event. On PostgreSQL the move's ``NOTIFY`` wakes the feed of every server; a move that shares one
wake-up with appends may be told at the next one (``IDLE_CHECK_SECONDS`` at most).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tether.serve.errors import say_once
from tether.store import SessionNotFoundError
from tether.store.store import SessionStore, StoredEntry

IDLE_CHECK_SECONDS = 1.0
"""How long a feed waits on the store before checking anyway: that the session still exists,
that its stop was not asked for, and (at most this often, busy or not) that the store's file is
still where it was opened (``SessionStore.check_present``)."""

START_TIMEOUT_SECONDS = 30.0
"""Bound on a feed's start (its store watch and first read); a store that stalls fails the join."""

SUBSCRIBER_BUFFER = 2000
"""Chunks (an entry, a streamed delta, a status) a follower may be behind before it is dropped."""

Present = Callable[[str], list[dict[str, Any]]]
"""The live events that bring a joining follower of a session to the present (its run's status,
the words streamed so far of the message under way: ``SessionHub.live_state``); called in the
event loop, where live events are published, so that none falls between them and the next."""


def _nothing_live(_session_id: str) -> list[dict[str, Any]]:
    return []


@dataclass(frozen=True, slots=True)
class Chunk:
    """SSE text to send as it is, and the id of the last entry in it (``None``: no entry)."""

    text: str
    last_id: str | None = None


def _continues(leaf: str | None, entries: list[StoredEntry]) -> bool:
    """Whether ``entries`` were appended one after the other from ``leaf``: the leaf is then
    their last, with no move in between."""
    parent = leaf
    for entry in entries:
        if entry.parent_id != parent:
            return False
        parent = entry.id
    return True


def entry_chunk(entries: list[StoredEntry]) -> Chunk:
    text = "".join(f"id: {e.id}\nevent: entry\ndata: {e.payload.decode()}\n\n" for e in entries)
    return Chunk(text, entries[-1].id if entries else None)


def event_chunk(event: dict[str, Any]) -> Chunk:
    return Chunk(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n")


class Subscriber:
    """One follower's buffer, in the event loop: chunks in, batches out, dropped when full."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._chunks: deque[Chunk] = deque()
        self._ready = asyncio.Event()
        self.dropped = False
        self.ended = False
        """The feed ended (the session was deleted, or the server stops)."""
        self.start_after: str | None = None
        """The entry the feed brings this subscriber what comes after (its backlog ends there)."""

    @property
    def pending(self) -> int:
        return len(self._chunks)

    def put(self, chunk: Chunk) -> None:
        if self.dropped or self.ended:
            return
        if len(self._chunks) >= self._limit:
            self.dropped = True
            self._chunks.clear()
        else:
            self._chunks.append(chunk)
        self._ready.set()

    def end(self, last: Chunk | None = None) -> None:
        if last is not None:
            self.put(last)
        self.ended = True
        self._ready.set()

    async def take(self, timeout: float) -> list[Chunk]:
        """What has come since the last call; empty after ``timeout`` seconds of nothing, or
        when the subscriber was dropped or ended (see ``dropped``, ``ended``)."""
        if not self._chunks and not self.dropped and not self.ended:
            self._ready.clear()
            try:
                await asyncio.wait_for(self._ready.wait(), timeout)
            except TimeoutError:
                return []
        chunks = list(self._chunks)
        self._chunks.clear()
        return chunks


class _Feed:
    """The one watch of a session, running in a thread of its own while it has followers."""

    def __init__(
        self, store: SessionStore, session_id: str, loop: asyncio.AbstractEventLoop, present: Present
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.loop = loop
        self.present = present
        self.subscribers: set[Subscriber] = set()
        self.joining = 0
        """Joins under way (counted in the loop): a feed with one is not stopped."""
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self._started = threading.Event()
        self._failure: BaseException | None = None
        self._last: str | None = None
        self._leaf: str | None = None
        """The session's leaf as the followers know it (from the entries, or a ``leaf`` event)."""
        self._ending: Chunk | None = None
        self.thread = threading.Thread(target=self._run, name=f"tether-feed-{session_id}", daemon=True)

    def join(self, subscriber: Subscriber, after: str | None, from_end: bool) -> list[StoredEntry]:
        """(In a worker thread.) Add ``subscriber`` to the feed; the entries after ``after`` it
        must be sent first (none when ``from_end``)."""
        if not self._started.wait(START_TIMEOUT_SECONDS):
            raise TimeoutError(f"following session {self.session_id}: the store did not answer in time")
        if self._failure is not None:
            raise self._failure
        with self._lock:
            self._advance()
            backlog = [] if from_end else self.store.entries_after(self.session_id, after)
            ids = [e.id for e in backlog]
            backlog = backlog[: ids.index(self._last) + 1] if self._last in ids else []
            subscriber.start_after = self._last
            self.loop.call_soon_threadsafe(self._add, subscriber)
        return backlog

    def _add(self, subscriber: Subscriber) -> None:
        """(In the loop, where live events are published.) The subscriber gets the present first
        (``Present``), then every live event after it: none falls in between."""
        self.joining -= 1
        if self.stop.is_set():  # the feed ended while this one joined (the session was deleted)
            subscriber.end(self._ending)
        else:
            for event in self.present(self.session_id):
                subscriber.put(event_chunk(event))
            self.subscribers.add(subscriber)

    def _run(self) -> None:
        """The watch, until stopped. A SQLite file deleted under the server goes on being read
        (and written) unlinked, so its followers heard nothing ever again: the store is checked
        at start and every ``IDLE_CHECK_SECONDS``, and such a failure ends their streams with an
        ``error`` event (said once on stderr: ``say_once``) and refuses new ones."""
        try:
            self.store.check_present()
            watch = self.store.watch(self.session_id)
        except BaseException as exc:
            self._failure = exc
            self._started.set()
            self.stop.set()
            return
        try:
            with self._lock:
                self._leaf = self.store.get_session(self.session_id).leaf_id
                self._last = self.store.newest_entry_id(self.session_id)
            self._started.set()
            checked = time.monotonic()
            while True:
                watch.wait(IDLE_CHECK_SECONDS)
                if self.stop.is_set():
                    break
                if time.monotonic() - checked >= IDLE_CHECK_SECONDS:
                    self.store.check_present()
                    checked = time.monotonic()
                with self._lock:
                    self._advance()
        except SessionNotFoundError:
            self._finish(event_chunk({"type": "deleted"}))
        except Exception as exc:  # the store failed past its patience: say so, followers resume later
            say_once(f"tether serve: {exc}")
            self._finish(event_chunk({"type": "error", "error": str(exc)}))
        finally:
            self.stop.set()
            self._started.set()
            watch.close()

    def _finish(self, chunk: Chunk) -> None:
        self._ending = chunk
        if not self.stop.is_set():  # else nobody follows any more, or the server is stopping
            self.loop.call_soon_threadsafe(self.end, chunk)

    def _advance(self) -> None:
        """(Under the lock.) Pass on what was appended since the last entry passed on, and a
        ``leaf`` event when the leaf moved otherwise; ``SessionNotFoundError`` once the session
        is gone.

        Appends that continue from the leaf the followers know explain the leaf by themselves
        (each entry's parent the one before): most wake-ups are those, and pass them on without
        reading the session row. Otherwise the row is read, then what was appended until then:
        its leaf is among the entries passed on by the end (an append writes its entries and the
        leaf in one transaction)."""
        new = self.store.entries_after(self.session_id, self._last)
        if new and _continues(self._leaf, new):
            self._last = self._leaf = new[-1].id
            self.loop.call_soon_threadsafe(self.publish, entry_chunk(new))
            return
        leaf = self.store.get_session(self.session_id).leaf_id  # raises once the session is gone
        if not new and leaf == self._leaf:
            return  # nothing moved (an append since then moved the leaf, and wakes us again)
        new += self.store.entries_after(self.session_id, new[-1].id if new else self._last)
        if new:
            self._last = new[-1].id
            self.loop.call_soon_threadsafe(self.publish, entry_chunk(new))
        if new and (leaf == self._leaf or any(e.id == leaf for e in new)):
            self._leaf = new[-1].id  # the appends moved it: their parentIds say where
            return
        if leaf != self._leaf:
            self._leaf = leaf
            self.loop.call_soon_threadsafe(self.publish, event_chunk({"type": "leaf", "leafId": leaf}))

    def publish(self, chunk: Chunk) -> None:
        for subscriber in list(self.subscribers):
            subscriber.put(chunk)
            if subscriber.dropped:
                self.subscribers.discard(subscriber)

    def end(self, chunk: Chunk | None) -> None:
        """(In the loop.) End every follower's stream, with ``chunk`` last."""
        self._ending = chunk
        for subscriber in self.subscribers:
            subscriber.end(chunk)
        self.subscribers.clear()


class Feeds:
    """The feeds of the sessions this server's clients follow (all in one event loop)."""

    def __init__(
        self, store: SessionStore, buffer: int = SUBSCRIBER_BUFFER, present: Present = _nothing_live
    ) -> None:
        self.store = store
        self.buffer = buffer
        self.present = present
        self._feeds: dict[str, _Feed] = {}
        self._threads: set[threading.Thread] = set()
        """Every feed thread that may still run, stopped ones included: ``close`` waits for them."""

    @property
    def followers(self) -> int:
        return sum(len(f.subscribers) + f.joining for f in self._feeds.values())

    def following(self, session_id: str) -> bool:
        """Whether a client follows (or is joining) the session."""
        feed = self._feeds.get(session_id)
        return feed is not None and bool(feed.subscribers or feed.joining)

    @property
    def watched(self) -> int:
        return len(self._feeds)

    async def subscribe(
        self, session_id: str, after: str | None, *, from_end: bool = False
    ) -> tuple[Subscriber, list[StoredEntry]]:
        """A new follower of the session, and the history to send it before what its
        subscriber brings. ``SessionNotFoundError`` if there is no such session."""
        feed = self._feeds.get(session_id)
        if feed is None or feed.stop.is_set():
            feed = _Feed(self.store, session_id, asyncio.get_running_loop(), self.present)
            self._feeds[session_id] = feed
            self._threads = {t for t in self._threads if t.is_alive()}
            self._threads.add(feed.thread)
            feed.thread.start()
        subscriber = Subscriber(self.buffer)
        feed.joining += 1
        try:
            backlog = await asyncio.to_thread(feed.join, subscriber, after, from_end)
        except BaseException:
            feed.joining -= 1
            self._release(feed)
            raise
        return subscriber, backlog

    def unsubscribe(self, session_id: str, subscriber: Subscriber) -> None:
        feed = self._feeds.get(session_id)
        if feed is not None:
            feed.subscribers.discard(subscriber)
            self._release(feed)

    def publish(self, session_id: str, event: dict[str, Any]) -> None:
        """A live event of the session (a streamed delta, a status) to each of its followers."""
        feed = self._feeds.get(session_id)
        if feed is not None and feed.subscribers:
            feed.publish(event_chunk(event))

    def _release(self, feed: _Feed) -> None:
        """Stop a feed nobody follows any more (its thread ends within ``IDLE_CHECK_SECONDS``)."""
        if not feed.subscribers and feed.joining == 0:
            feed.stop.set()
            if self._feeds.get(feed.session_id) is feed:
                del self._feeds[feed.session_id]

    async def close(self) -> None:
        """End every feed and wait for their threads (bounded: each checks ``stop`` every
        ``IDLE_CHECK_SECONDS``)."""
        feeds = list(self._feeds.values())
        self._feeds.clear()
        for feed in feeds:
            feed.stop.set()
            feed.end(None)
        for thread in self._threads:
            await asyncio.to_thread(thread.join, IDLE_CHECK_SECONDS * 5)
