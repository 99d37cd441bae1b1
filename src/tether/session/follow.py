"""Following a session while another process (or host) writes it: its entries as they commit.

    for entry in follow(store, session_id):       # blocks between appends
        print(entry.type, entry.id)

PostgreSQL wakes the follower by ``NOTIFY`` on each append, from any host; SQLite by polling
(``PRAGMA data_version``), so on one host only. Either way the follower re-reads what was
appended after the last entry it yielded, so a missed or spurious wake-up costs nothing but a
query: no entry is skipped or repeated.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator

from tether.session.store import SessionStore, SessionWatch, StoredEntry

IDLE_CHECK_SECONDS = 1.0
"""How long a watch waits before checking anyway: that the session still exists, and whether
anything arrived that its wake-up missed."""


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
    return _follow(store, session_id, watch, last, stop)


def _follow(
    store: SessionStore,
    session_id: str,
    watch: SessionWatch,
    last: str | None,
    stop: threading.Event | None,
) -> Iterator[StoredEntry]:
    try:
        while stop is None or not stop.is_set():
            new = store.entries_after(session_id, last)
            if new:
                last = new[-1].id
                yield from new
            else:
                store.get_session(session_id)  # raises once the session is gone
            watch.wait(IDLE_CHECK_SECONDS)
    finally:
        watch.close()


async def follow_async(
    store: SessionStore, session_id: str, *, after: str | None, stop: threading.Event
) -> AsyncIterator[StoredEntry]:
    """``follow`` for asyncio: each entry committed after entry ``after``, waited for in a worker
    thread; ends within ``IDLE_CHECK_SECONDS`` of ``stop`` being set."""
    entries = follow(store, session_id, after=after, stop=stop)
    while (entry := await asyncio.to_thread(next, entries, None)) is not None:
        yield entry
