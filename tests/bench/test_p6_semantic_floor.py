"""P6's semantic floor stores what tether stores: every message of every session as an entry of
tether's schema, chained by parent, with the session's counters, readable by tether's own store.
No assertion is about time."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import httpx2

import p6_concurrency
import p6_storage
from _p6_semantic_floor import check_semantic, run_semantic_floor


def test_the_semantic_floor_stores_every_message_as_tethers_entries(tmp_path: Path) -> None:
    store = tmp_path / "floor.db"
    transport = httpx2.MockTransport(p6_storage._answer)  # pyright: ignore[reportPrivateUsage]
    asyncio.run(run_semantic_floor(3, p6_storage.URL, store, transport))
    messages = p6_concurrency.PROMPTS * 4
    check_semantic(store, 3, messages)
    db = sqlite3.connect(store)
    try:
        for session_id, leaf_id in db.execute("SELECT id, leaf_id FROM sessions").fetchall():
            rows = db.execute(
                "SELECT id, parent_id, type, created, payload FROM entries WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
            assert [row[1] for row in rows] == [None, *(row[0] for row in rows[:-1])]  # a chain
            assert leaf_id == rows[-1][0]
            assert [json.loads(row[4])["message"]["role"] for row in rows[:4]] == [
                "user", "assistant", "toolResult", "assistant"
            ]  # fmt: skip
            assert all(row[2] == "message" for row in rows)
    finally:
        db.close()
