"""Many followers, one watch: real SSE clients of one session all get every entry, through one
store watch (one feed thread) however many they are; a follower that falls behind is dropped
with a ``dropped`` event and resumes exactly where it was."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from pathlib import Path
from typing import Any, cast

import httpx2
import pytest
from serve_support import WAIT_SECONDS, Event, serving, settled, sse_events, text, write_script

from session_helpers import user
from tether.serve import feeds as feeds_module
from tether.serve.feeds import Feeds
from tether.session import SessionManager
from tether.store import open_store
from tether.store.sqlite_store import SQLiteStore

FOLLOWERS = 300


def _feed_threads(session_id: str) -> int:
    return sum(t.name == f"tether-feed-{session_id}" and t.is_alive() for t in threading.enumerate())


async def test_hundreds_of_real_sse_clients_all_receive_every_entry_through_one_watch(
    project: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.json", [text("first answer"), text("second ", "answer")])
    async with serving(project, script) as served, served.client() as client:
        session_id = (await client.post("/api/sessions", json={"message": "one"})).json()["sessionId"]
        before = (await settled(client, session_id))["entries"]
        path = f"/api/sessions/{session_id}/events"

        def second_answer(event: Event) -> bool:
            if event[1] != "entry":
                return False
            message = json.loads(event[2]).get("message", {})
            return message.get("role") == "assistant" and "second answer" in json.dumps(message)

        limits = httpx2.Limits(max_connections=FOLLOWERS + 10, max_keepalive_connections=0)
        async with httpx2.AsyncClient(base_url=served.url, timeout=WAIT_SECONDS, limits=limits) as many:
            opened = [asyncio.Event() for _ in range(FOLLOWERS)]
            # half from the start, half from the end: both kinds of join at once
            followers = [
                asyncio.create_task(
                    sse_events(
                        many,
                        path + ("" if i % 2 else "?history=false"),
                        until=second_answer,
                        opened=opened[i],
                    )
                )
                for i in range(FOLLOWERS)
            ]
            async with asyncio.timeout(WAIT_SECONDS * 3):
                await asyncio.gather(*(o.wait() for o in opened))
            assert _feed_threads(session_id) == 1  # one store watch for all of them
            answer = await client.post(f"/api/sessions/{session_id}/prompt", json={"message": "two"})
            assert answer.status_code == 202
            async with asyncio.timeout(WAIT_SECONDS * 3):
                streams = await asyncio.gather(*followers)
        after = (await settled(client, session_id))["entries"]
        new = after[len(before) :]
        assert [e["id"] for e in after[: len(before)]] == [e["id"] for e in before]
        upto = [e["id"] for e in after].index(
            next(e["id"] for e in new if e["type"] == "message" and e["message"]["role"] == "assistant")
        )
        for i, events in enumerate(streams):
            got = [json.loads(data) for _, kind, data in events if kind == "entry"]
            expected = after[: upto + 1] if i % 2 else after[len(before) : upto + 1]
            assert got == expected, f"follower {i}"
            assert [event_id for event_id, kind, _ in events if kind == "entry"] == [
                e["id"] for e in expected
            ]


async def test_a_follower_that_falls_behind_is_dropped_and_resumes_where_it_was(project: Path) -> None:
    store = open_store()
    manager = SessionManager(store)
    session = manager.create(str(project))
    first = session.append_message(user("already there"))
    feeds = Feeds(store, buffer=1)
    try:
        subscriber, backlog = await feeds.subscribe(session.id, None)
        assert [e.id for e in backlog] == [first]
        second = session.append_message(user("two"))
        async with asyncio.timeout(WAIT_SECONDS):  # the feed passed it on: one chunk waits
            while subscriber.pending == 0:
                await asyncio.sleep(0.01)
        third = session.append_message(user("three"))  # one more than it may hold
        async with asyncio.timeout(WAIT_SECONDS):
            while not subscriber.dropped:
                await asyncio.sleep(0.01)
        assert await subscriber.take(0) == []  # its buffer is freed
        assert subscriber.pending == 0
        # it resumes after the last entry it got: nothing skipped, nothing twice
        resumed, backlog = await feeds.subscribe(session.id, first)
        assert [e.id for e in backlog] == [second, third]
        fourth = session.append_message(user("four"))
        async with asyncio.timeout(WAIT_SECONDS):
            chunks = await resumed.take(WAIT_SECONDS)
        assert [c.last_id for c in chunks] == [fourth]
        assert feeds.followers == 1 and feeds.watched == 1
        feeds.unsubscribe(session.id, resumed)
        assert feeds.watched == 0
    finally:
        await feeds.close()
        session.close()
        store.close()  # the test's: the manager leaves a store it was given open


async def test_a_stream_that_does_not_read_is_dropped_with_the_entry_to_resume_after(
    project: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.json", [text("stored")])
    async with serving(project, script, follower_buffer=2) as served, served.client() as client:
        session_id = (await client.post("/api/sessions", json={"message": "one"})).json()["sessionId"]
        entries = (await settled(client, session_id))["entries"]
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window: it fills soon
        sock.connect(("127.0.0.1", int(served.url.rsplit(":", 1)[1])))
        sock.setblocking(False)
        reader, writer = await asyncio.open_connection(sock=sock)
        request = f"GET /api/sessions/{session_id}/events?history=false HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        writer.write(request.encode())
        async with asyncio.timeout(WAIT_SECONDS):
            while not (await reader.readline()).startswith(b"retry:"):
                pass
            # this client reads nothing more while far more than its socket holds comes for it
            publish = served.config.hub.on_live
            assert publish is not None
            for _ in range(64):
                publish(session_id, {"type": "delta", "kind": "text_delta", "delta": "x" * 200_000})
                await asyncio.sleep(0)
            seen: list[bytes] = []
            while not (line := await reader.readline()).startswith(b"event: dropped"):
                assert line, "the stream ended without a dropped event"
                seen.append(line[:40])
            data = json.loads((await reader.readline()).decode().removeprefix("data: "))
        writer.close()
        assert data == {
            "type": "dropped",
            "reason": "this follower fell behind",
            "lastEventId": entries[-1]["id"],
        }
        assert sum(line.startswith(b"event: delta") for line in seen) < 64
        # where it resumes: after that entry, none skipped or repeated
        resumed = await sse_events(
            client,
            f"/api/sessions/{session_id}/events",
            headers={"Last-Event-ID": data["lastEventId"]},
            count=1,
            until=lambda e: e[1] == "status",
        )
        assert [kind for _, kind, _ in resumed] == ["status"]


async def test_appends_that_continue_from_the_leaf_are_passed_on_without_reading_the_session_row(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A feed reads the session row only when the new entries (or their absence) do not explain
    the leaf: the ordinary appends cost one query per wake-up, a move is still a ``leaf`` event,
    and an append after a move is passed on."""
    monkeypatch.setattr(feeds_module, "IDLE_CHECK_SECONDS", WAIT_SECONDS)  # no idle wake-up here
    store = open_store()
    manager = SessionManager(store)
    session = manager.create(str(project))
    first = session.append_message(user("one"))
    reads: list[tuple[str, int]] = []  # the feed's queries, in order: (what, entries found)
    get_session, entries_after = store.get_session, store.entries_after

    def counted_row(session_id: str) -> Any:
        reads.append(("row", 0))
        return get_session(session_id)

    def counted_entries(session_id: str, after: str | None) -> Any:
        found = entries_after(session_id, after)
        reads.append(("entries", len(found)))
        return found

    monkeypatch.setattr(store, "get_session", counted_row)
    monkeypatch.setattr(store, "entries_after", counted_entries)
    feeds = Feeds(store)

    async def until(subscriber: Any, wanted: str) -> str:
        text = ""
        async with asyncio.timeout(WAIT_SECONDS):
            while wanted not in text:
                text += "".join(c.text for c in await subscriber.take(WAIT_SECONDS))
        return text

    subscriber, _ = await feeds.subscribe(session.id, None, from_end=True)
    try:
        start = len(reads)
        ids = [session.append_message(user(f"message {i}")) for i in range(3)]
        await until(subscriber, f"id: {ids[-1]}")
        assert reads[start:] and all(what == "entries" and found for what, found in reads[start:])

        moved = len(reads)
        session.branch(first)
        assert f'"leafId": "{first}"' in await until(subscriber, "event: leaf")
        assert ("row", 0) in reads[moved:]
        after_move = session.append_message(user("from the first again"))
        assert "event: leaf" not in await until(subscriber, f"id: {after_move}")  # its parent says where
    finally:
        feeds.unsubscribe(session.id, subscriber)
        session.append_message(user("wakes the feed to see it is stopped"))
        await feeds.close()
        session.close()
        store.close()


async def test_a_sqlite_file_deleted_under_the_server_is_said_to_followers_and_readers_and_logged_once(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server goes on reading the unlinked file: its followers heard nothing, ever again,
    and its readers got the sessions as they were. Followers get an ``error`` event naming the
    file, new followers and readers a 500 saying the same, and stderr has the line once however
    many followers, reads and reloads meet it."""
    script = write_script(tmp_path / "s.json", [text("ok")])
    async with serving(project, script) as served, served.client() as client:
        session_id = (await client.post("/api/sessions", json={"message": "one"})).json()["sessionId"]
        await settled(client, session_id)
        opened = [asyncio.Event() for _ in range(3)]
        followers = [
            asyncio.ensure_future(
                sse_events(
                    client,
                    f"/api/sessions/{session_id}/events?history=false",
                    until=lambda event: event[1] == "error",
                    opened=ready,
                )
            )
            for ready in opened
        ]
        async with asyncio.timeout(WAIT_SECONDS):
            await asyncio.gather(*(ready.wait() for ready in opened))
        database = Path(cast(SQLiteStore, served.config.store).path)
        database.unlink()
        gone = f"{database}: the session database was deleted or replaced while tether had it open"
        for events in await asyncio.gather(*followers):
            assert events[-1][1] == "error"
            assert json.loads(events[-1][2])["error"].startswith(gone)
        for _ in range(3):  # a page that comes back, or reloads
            for path in ("events", "", "tree", "html", "state"):
                answer = await client.get(f"/api/sessions/{session_id}/{path}".rstrip("/"))
                assert answer.status_code == 500, path
                assert answer.json()["error"].startswith(gone), path
            answer = await client.get("/api/sessions")
            assert (answer.status_code, answer.json()["error"][: len(gone)]) == (500, gone)
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if gone in line]
    assert len(said) == 1, err
