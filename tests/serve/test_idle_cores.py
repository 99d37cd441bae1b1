"""Idle sessions are closed: a server that prompted many sessions keeps open only those that run,
queue, wait for an approval or are followed; the others are closed once idle for ``idle_close``
seconds (their store lease, files and memory given back) and opened again on demand."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from serve_support import WAIT_SECONDS, Served, serving, settled, sse_events, text, write_script

IDLE = 0.3


def open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


async def closed(served: Served, *session_ids: str) -> None:
    """Wait (bounded) until the hub has closed each of ``session_ids``."""
    async with asyncio.timeout(WAIT_SECONDS):
        while any(served.config.hub.is_open(s) for s in session_ids):
            await asyncio.sleep(0.02)


async def test_idle_sessions_are_closed_and_opened_again_on_demand(project: Path, tmp_path: Path) -> None:
    """Files do not grow with the sessions served: SQLite keeps a closed connection's file open
    while the server's own connection holds the database (POSIX locks are per process), and
    reuses it for the next connection, so a second wave of sessions opens no more files."""
    script = write_script(tmp_path / "s.json", [text(f"answer {i}") for i in range(12)])
    async with serving(project, script, idle_close=IDLE) as served, served.client() as client:

        async def wave(count: int) -> list[str]:
            ids = [
                (await client.post("/api/sessions", json={"message": f"first {i}"})).json()["sessionId"]
                for i in range(count)
            ]
            for session_id in ids:
                await settled(client, session_id)
            await closed(served, *ids)
            return ids

        ids = await wave(4)
        after_first = open_files()
        await wave(4)
        assert served.config.hub.open_count == 0
        assert open_files() <= after_first + 2  # give or take the client's connections

        again = await client.post(f"/api/sessions/{ids[0]}/prompt", json={"message": "once more"})
        assert again.status_code == 202 and again.json() == {"disposition": "started"}
        read = await settled(client, ids[0])
        messages = [e["message"] for e in read["entries"] if e["type"] == "message"]
        assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
        assert messages[2]["content"] == "once more"
        await closed(served, ids[0])


async def test_a_followed_session_stays_open_until_its_follower_leaves(project: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [text("one")])
    async with serving(project, script, idle_close=IDLE) as served, served.client() as client:
        session_id = (await client.post("/api/sessions", json={"message": "go"})).json()["sessionId"]
        await settled(client, session_id)
        opened = asyncio.Event()
        path = f"/api/sessions/{session_id}/events"
        follower = asyncio.create_task(sse_events(client, path, until=lambda _event: False, opened=opened))
        async with asyncio.timeout(WAIT_SECONDS):
            await opened.wait()
        await asyncio.sleep(IDLE * 5)  # several sweeps: followed, so kept
        assert served.config.hub.is_open(session_id)
        follower.cancel()
        await asyncio.gather(follower, return_exceptions=True)
        await closed(served, session_id)


@pytest.mark.parametrize("seconds", [0, -1, float("nan")])
def test_an_idle_close_that_is_no_positive_time_is_refused(project: Path, seconds: float) -> None:
    """A sweep every ``idle_close / 4`` seconds: 0 made it a loop that never waited."""
    from tether.serve.hub import SessionHub
    from tether.session import Settings
    from tether.session.options import SessionOptions

    with pytest.raises(ValueError, match="idle_close must be a positive number of seconds"):
        SessionHub(SessionOptions(), lambda _folder: Settings(), project, idle_close=seconds)
