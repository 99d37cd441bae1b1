"""Following a session while another process (or host) writes it: its entries as they commit.

    for entry in follow(store, session_id):       # blocks between appends
        print(entry.type, entry.id)

PostgreSQL wakes the follower by ``NOTIFY`` on each append, from any host; SQLite by polling
(``PRAGMA data_version``), so on one host only. Either way the follower re-reads what was
appended after the last entry it yielded, so a missed or spurious wake-up costs nothing but a
query: no entry is skipped or repeated.

``follow`` yields entries only: of the session row it needs nothing but that the row is still
there (a deleted session ends the iterator), which the entries cannot say. So a wake-up that
brought entries costs one query (the session is there: it was just appended to), and the row
is read only once no entry came for ``IDLE_CHECK_SECONDS``: on SQLite, every write to the file
wakes every follower, so a follower of a quiet session woken by the others pays one query a
wake-up, not two.

``follow_changes`` is the same watch for a follower that keeps the session open (``Session
.catch_up``): per wake-up, the session row as well as the new entries, so the follower's leaf,
title and counters move with the writer's (an append changes the counters, a branch the leaf
with no entry at all: the row is read every time), each wake-up costing two small queries
however long the session is.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Generator, Iterator
from typing import NamedTuple

from tether.store.store import SessionRecord, SessionStore, SessionWatch, StoredEntry

IDLE_CHECK_SECONDS = 1.0
"""How long a watch waits before checking anyway: that the session still exists, and whether
anything arrived that its wake-up missed."""


class SessionChange(NamedTuple):
    """What one wake-up of a follower found: the session row, then the entries appended since
    the last change (possibly none: a leaf move, or a spurious wake-up)."""

    record: SessionRecord
    """Read *before* ``entries``: its leaf is among the entries the follower has seen (an append
    writes its entries and the leaf in one transaction); ``entries`` may run past it, when the
    writer appended in between, and the next change brings the row that says so."""
    entries: list[StoredEntry]


def follow(
    store: SessionStore,
    session_id: str,
    *,
    after: str | None = None,
    history: bool = True,
    stop: threading.Event | None = None,
) -> Iterator[StoredEntry]:
    """The session's entries from the start (after entry ``after`` when given; only new ones
    when ``history`` is false), then each new one as it is committed, until ``stop`` is set.

    The watch is set up before this returns: whatever is committed afterwards will be yielded.
    The iterator ends with ``SessionNotFoundError`` if the session is (or gets) deleted.
    """
    watch = store.watch(session_id)  # before the first read, so no append falls in between
    try:
        last = after if history else store.newest_entry_id(session_id)
    except BaseException:
        watch.close()
        raise
    return _entries(_follow(store, session_id, watch, last, stop, rows=False))


def _entries(changes: Generator[SessionChange]) -> Iterator[StoredEntry]:
    try:
        for change in changes:
            yield from change.entries
    finally:
        changes.close()  # closing this closes the watch too


def follow_changes(
    store: SessionStore, session_id: str, *, after: str | None, stop: threading.Event | None = None
) -> Generator[SessionChange]:
    """Each change of the session after entry ``after`` (``None``: from the start), one per
    wake-up that found the session row or its entries changed, until ``stop`` is set; ends with
    ``SessionNotFoundError`` once the session is deleted. Watching starts before this returns."""
    watch = store.watch(session_id)
    return _follow(store, session_id, watch, after, stop, rows=True)


def _follow(
    store: SessionStore,
    session_id: str,
    watch: SessionWatch,
    last: str | None,
    stop: threading.Event | None,
    *,
    rows: bool,
) -> Generator[SessionChange]:
    """The changes after entry ``last``; ``rows``: each with the session row read before its
    entries; otherwise the row is read only to tell that the session is still there, once no
    entry came for ``IDLE_CHECK_SECONDS`` (the changes then carry the row of that check)."""
    seen: SessionRecord | None = None
    checked = float("-inf")
    try:
        while stop is None or not stop.is_set():
            now = time.monotonic()
            if rows or seen is None or now - checked >= IDLE_CHECK_SECONDS:
                record = store.get_session(session_id)  # raises once the session is gone
                checked = now
            else:
                record = seen
            new = store.entries_after(session_id, last)
            if new:
                last = new[-1].id
                checked = now  # appended to: still there
            if new or record != seen:
                seen = record
                yield SessionChange(record, new)
            watch.wait(IDLE_CHECK_SECONDS)
    finally:
        watch.close()


async def follow_changes_async(
    store: SessionStore, session_id: str, *, after: str | None, stop: threading.Event
) -> AsyncIterator[SessionChange]:
    """``follow_changes`` for asyncio, waited for in a worker thread; ends within
    ``IDLE_CHECK_SECONDS`` of ``stop`` being set (the way to end it: a task cancelled while the
    thread waits leaves that thread to notice ``stop``)."""
    changes = await asyncio.to_thread(follow_changes, store, session_id, after=after, stop=stop)
    try:
        while (change := await asyncio.to_thread(next, changes, None)) is not None:
            yield change
    finally:
        with contextlib.suppress(ValueError):  # still running in its thread: it ends on ``stop``
            changes.close()  # a consumer that left early: release the watch now
