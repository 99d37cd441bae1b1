"""P6's semantic floor of a stored session: the least a program must do to store what tether stores.

``p6_concurrency``'s floor stores a message as one JSON text in a table of two columns, one commit
each on the event loop's thread: cheaper than tether, but not the same thing stored. This floor
keeps tether's storage semantics and drops only its machinery, so "tether / semantic floor" says
how far tether's storing is from what its own guarantees cost:

- the same bare ``Agent`` per session as tether's in-memory run (the difference to that run is
  storing alone);
- tether's own schema, indexes and journal (``tether.store.sqlite_schema.migrate``: WAL,
  ``synchronous=NORMAL``), a sessions row with its counters, an entries row per message with a
  sortable id (``tether.store.ids.new_id``), its parent, type, timestamp and the entry's JSON;
- per message: the entry (id, parent, type, timestamp, the message) queued to a writer thread, as
  its ``message_end`` event is heard;
- the writer thread batches whatever queued in ``BATCH_WINDOW`` (15 ms, tether's), encodes each
  entry once, and writes the rows and each session's counters in one transaction;
- each prompt waits until its messages are committed (tether's ``agent_end`` does the same).

What it leaves out, tether's own: the in-memory entry tree and context, the compaction token
count, writer leases and their checks, session records, settings entries, message validation.
Session 33's measurement (callgrind, then unpublished): ~92k instructions a stored message
(loop 28k, writer 64k) against tether's ~254k.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import httpx2

BATCH_WINDOW = 0.015
"""tether's (``tether.store.writer.BATCH_WINDOW``): the writer waits this long for a batch."""
_NOT_STORED = frozenset((
    "agent_start", "agent_end", "turn_start", "turn_end", "message_start", "message_update",
    "tool_execution_start", "tool_execution_update", "tool_execution_end",
))  # fmt: skip
"""Every event of a bare ``Agent`` but ``message_end``: the floor's listener hears only those."""
_INSERT_SESSION = "INSERT INTO sessions (id, cwd, created, updated, version) VALUES (?, ?, ?, ?, 3)"
_INSERT_ENTRY = (
    "INSERT INTO entries (session_id, id, parent_id, type, created, payload) VALUES (?, ?, ?, ?, ?, ?)"
)
_UPDATE_COUNTERS = """UPDATE sessions SET leaf_id = ?, updated = max(updated, ?),
    entry_count = entry_count + ?, message_count = message_count + ? WHERE id = ?"""


class Writer:
    """One thread committing the queued entries of every session, a batch per transaction.

    One queue (``SimpleQueue``, in C) carries the entries and the waiters alike: a prompt's
    waiter, queued after its entries, is woken with the batch that holds it, so by then they are
    committed."""

    def __init__(self, store: Path) -> None:
        from tether.store.sqlite_schema import migrate

        self._db = sqlite3.connect(store, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = NORMAL")
        self._db.execute("PRAGMA foreign_keys = ON")
        migrate(self._db)
        self._queue: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        """("entry", session id, entry), ("session", session id): its row, ("waiter", loop,
        future), or ``None``: stop."""
        self._thread = threading.Thread(target=self._run, name="semantic-floor writer", daemon=True)
        self._thread.start()

    def submit(self, item: tuple[Any, ...]) -> None:
        self._queue.put(item)

    async def committed(self) -> None:
        """Wait until everything queued before is written."""
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        self._queue.put(("waiter", loop, waiter))
        await waiter

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join()
        self._db.close()

    def _run(self) -> None:
        from tether.wire import dumpb

        stop = False
        while not stop:
            batch = [self._queue.get()]
            time.sleep(BATCH_WINDOW)
            with contextlib.suppress(queue.Empty):
                while True:
                    batch.append(self._queue.get_nowait())
            sessions: list[tuple[object, ...]] = []
            rows: list[tuple[object, ...]] = []
            counters: dict[str, list[Any]] = {}
            waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
            for item in batch:
                if item is None:
                    stop = True
                elif item[0] == "entry":
                    _, session_id, entry = item
                    rows.append((session_id, entry["id"], entry["parentId"], "message", entry["timestamp"],
                                 dumpb(entry)))  # fmt: skip
                    counter = counters.get(session_id)
                    if counter is None:
                        counters[session_id] = [entry["id"], entry["timestamp"], 1, 1, session_id]
                    else:
                        counter[0], counter[1] = entry["id"], entry["timestamp"]
                        counter[2] += 1
                        counter[3] += 1
                elif item[0] == "session":
                    now = time.time_ns() // 1_000_000
                    sessions.append((item[1], "/bench", now, now))
                else:
                    waiters.append((item[1], item[2]))
            db = self._db
            db.execute("BEGIN")
            db.executemany(_INSERT_SESSION, sessions)
            db.executemany(_INSERT_ENTRY, rows)
            db.executemany(_UPDATE_COUNTERS, counters.values())
            db.execute("COMMIT")
            for loop, waiter in waiters:
                loop.call_soon_threadsafe(_wake, waiter)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


async def run_semantic_floor(
    sessions: int, url: str, store: Path, transport: httpx2.AsyncBaseTransport | None = None
) -> None:
    """``sessions`` conversations of ``PROMPTS`` prompts, each a bare ``Agent`` whose messages
    are stored as the module docstring says."""
    from p6_concurrency import ECHO_SCHEMA, PROMPTS
    from tether.agent import Agent, AgentTool, AgentToolResult
    from tether.ai import SimpleStreamOptions
    from tether.store.ids import new_id

    async def echo(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
        return AgentToolResult(content=[{"type": "text", "text": params["text"]}])

    tool = AgentTool(name="echo", label="echo", description="Echo text", parameters=ECHO_SCHEMA, execute=echo)
    model: Any = {"id": "m", "name": "m", "api": "openai-completions", "provider": "bench",
                  "baseUrl": url, "reasoning": False, "input": ["text"], "contextWindow": 100_000,
                  "maxTokens": 1_000, "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0}}  # fmt: skip

    writer = Writer(store)
    client = None if transport is None else httpx2.AsyncClient(transport=transport)

    async def conversation(i: int) -> None:
        options = SimpleStreamOptions(api_key="k", session_id=f"s{i}", http_client=client)
        agent = Agent(model=model, tools=[tool], options=options)
        session_id = new_id()
        last: str | None = None  # the newest entry's id

        def on_event(event: Any) -> None:
            nonlocal last
            if last is None:
                writer.submit(("session", session_id))
            now = time.time_ns() // 1_000_000
            entry_id = new_id(last, now)  # one clock read, as tether
            entry = {"type": "message", "id": entry_id, "parentId": last, "timestamp": now,
                     "message": event["message"]}  # fmt: skip
            writer.submit(("entry", session_id, entry))
            last = entry_id

        agent.subscribe(on_event, skip=_NOT_STORED)  # as tether's recorder: streamed deltas skipped
        for prompt in range(PROMPTS):
            await agent.prompt(f"session {i} prompt {prompt}: call echo")
            await writer.committed()

    try:
        await asyncio.gather(*(conversation(i) for i in range(sessions)))
    finally:
        if client is not None:
            await client.aclose()
        writer.close()


def check_semantic(store: Path, sessions: int, messages: int) -> None:
    """Raise unless ``store`` holds ``sessions`` sessions of ``messages`` entries each."""
    db = sqlite3.connect(store)
    try:
        counts = db.execute(
            "SELECT count(*), min(message_count), max(message_count) FROM sessions"
        ).fetchone()
        assert counts == (sessions, messages, messages), counts
        assert db.execute("SELECT count(*) FROM entries").fetchone()[0] == sessions * messages
    finally:
        db.close()
