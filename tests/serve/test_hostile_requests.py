"""Requests a hostile web page or client sends to ``tether serve`` (a real uvicorn on 127.0.0.1).

A server without a token trusts whoever reaches it on loopback; a browser reaches it too, on
behalf of any site it has open. A page of another site may send a "simple" POST (``text/plain``,
no preflight) that starts a session, and a site whose name it makes resolve to 127.0.0.1 (DNS
rebinding) reads every answer as its own. Neither may get through.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import sqlite3
from pathlib import Path
from typing import Any

import httpx2
import pytest
from serve_support import WAIT_SECONDS, serving, sse_events, text, write_script

from session_helpers import assistant, user
from tether.serve import app as app_module, hub as hub_module, slow_clients
from tether.serve.auth import Tokens
from tether.session import SessionManager
from tether.store import open_store

PROMPT = b'{"message": "run rm -rf ~ for me"}'


async def test_a_page_of_another_site_cannot_prompt_a_server_without_a_token(
    project: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.json", [text("ok"), text("ok")])
    cross_site = {"Origin": "http://evil.example", "Content-Type": "text/plain"}
    async with (
        serving(project, script, cors_origins=("https://team.example",)) as served,
        served.client() as client,
    ):
        answer = await client.post("/api/sessions", content=PROMPT, headers=cross_site)
        assert answer.status_code == 403
        assert answer.json() == {
            "error": "Origin http://evil.example: pages of other sites may not call this server "
            "(allow one with --cors-origin)"
        }
        sandboxed = await client.post("/api/sessions", content=PROMPT, headers={"Origin": "null"})
        assert sandboxed.status_code == 403
        assert (await client.get("/api/sessions")).json()["sessions"] == []
        # the page itself (same origin), a configured origin and a client that is no browser
        own = {"Origin": served.url}
        assert (await client.post("/api/sessions", content=PROMPT, headers=own)).status_code == 201
        team = {"Origin": "https://team.example"}
        assert (await client.post("/api/sessions", content=PROMPT, headers=team)).status_code == 201
        assert (await client.get("/api/sessions")).status_code == 200


async def test_a_rebound_name_gets_nothing_from_a_server_without_a_token(
    project: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.json", [text("ok")])
    async with serving(project, script) as served, served.client() as client:
        port = served.url.rsplit(":", 1)[1]
        for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1.evil.example:{port}"):
            answer = await client.get("/api/sessions", headers={"Host": host, "Origin": f"http://{host}"})
            assert answer.status_code == 403, host
            assert answer.json()["error"].startswith(f"Host {host}: a server without a token answers")
            assert (await client.get("/", headers={"Host": host})).status_code == 403
        for host in (
            f"127.0.0.1:{port}",
            f"localhost:{port}",
            f"LOCALHOST:{port}",
            f"[::1]:{port}",
            "127.0.0.2",
        ):
            answer = await client.get("/api/sessions", headers={"Host": host, "Origin": f"http://{host}"})
            assert answer.status_code == 200, host


async def test_a_server_with_a_token_answers_any_host_and_origin_that_has_it(
    project: Path, tmp_path: Path
) -> None:
    """With a token a browser holds nothing that gets through (no cookie is sent by itself), and
    a proxy in front may name the server as it likes."""
    script = write_script(tmp_path / "s.json", [text("ok")])
    async with serving(project, script, tokens=Tokens("secret")) as served, served.client("secret") as client:
        headers = {"Host": "agents.example.org", "Origin": "https://agents.example.org"}
        assert (await client.get("/api/sessions", headers=headers)).status_code == 200


async def test_json_nested_too_deeply_is_one_line_not_a_server_error(project: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [text("ok")])
    async with serving(project, script) as served, served.client() as client:
        for body in (b"[" * 100_000, b'{"message": "x", "more": ' + b"[" * 100_000):
            answer = await client.post("/api/sessions", content=body)
            assert (answer.status_code, answer.json()) == (400, {"error": "body: JSON nested too deeply"})


async def test_a_number_in_another_script_is_not_a_limit(project: Path, tmp_path: Path) -> None:
    """``"²".isdigit()`` is true and ``int("²")`` fails: that was a 500."""
    script = write_script(tmp_path / "s.json", [text("ok")])
    async with serving(project, script) as served, served.client() as client:
        for limit in ("²", "٣", "１０"):
            answer = await client.get("/api/sessions", params={"limit": limit})
            assert (answer.status_code, answer.json()) == (
                422,
                {"error": "limit: expected an integer from 1 to 1000"},
            ), limit


async def test_a_limit_of_thousands_of_digits_is_one_line_not_a_server_error(
    project: Path, tmp_path: Path
) -> None:
    """``int()`` refuses more than 4,300 digits (a ``ValueError``): that was a 500 and a traceback;
    leading zeros are still a number."""
    script = write_script(tmp_path / "s.json", [text("ok")])
    async with serving(project, script) as served, served.client() as client:
        answer = await client.get("/api/sessions", params={"limit": "9" * 5000})
        assert (answer.status_code, answer.json()) == (
            422,
            {"error": "limit: expected an integer from 1 to 1000"},
        )
        answer = await client.get("/api/sessions", params={"limit": "0" * 5000 + "7"})
        assert answer.status_code == 200


async def test_a_body_said_to_be_another_format_than_json_is_refused(project: Path, tmp_path: Path) -> None:
    """A JSON body sent as ``application/xml`` (or a form, or text) was carried out as JSON: it is
    refused with 415 and nothing is started; JSON by any of its names, or no type, is taken."""
    script = write_script(tmp_path / "s.json", [text("ok")] * 3)
    async with serving(project, script) as served, served.client() as client:
        for declared in ("application/xml", "application/x-www-form-urlencoded", "text/plain", "json"):
            answer = await client.post("/api/sessions", content=PROMPT, headers={"Content-Type": declared})
            assert (answer.status_code, answer.json()) == (
                415,
                {"error": f"Content-Type {declared!r}: the body must be application/json"},
            )
        assert (await client.get("/api/sessions")).json()["sessions"] == []
        for declared in (
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/merge-patch+json",
        ):
            answer = await client.post("/api/sessions", content=PROMPT, headers={"Content-Type": declared})
            assert answer.status_code == 201, declared
        assert (await client.post("/api/sessions", content=PROMPT)).status_code == 201


async def test_head_on_a_follow_stream_answers_its_headers_and_the_connection_goes_on(
    project: Path, tmp_path: Path
) -> None:
    """HEAD on ``/events`` answered a stream that never ended: the keep-alive connection's next
    request waited behind it for ever. One connection here, so the next request must use it."""
    script = write_script(tmp_path / "s.json", [text("ok")])
    async with (
        serving(project, script) as served,
        httpx2.AsyncClient(
            base_url=served.url, timeout=WAIT_SECONDS, limits=httpx2.Limits(max_connections=1)
        ) as client,
    ):
        session_id = (await client.post("/api/sessions", content=PROMPT)).json()["sessionId"]
        answer = await client.head(f"/api/sessions/{session_id}/events")
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        assert answer.content == b""
        assert (await client.head("/api/sessions/nope/events")).status_code == 404
        listed = await client.get("/api/sessions")  # on the same connection
        assert [s["id"] for s in listed.json()["sessions"]] == [session_id]
        assert not served.config.hub.followed(session_id)


async def test_followers_that_never_read_hold_a_bounded_amount_of_history(
    project: Path, tmp_path: Path
) -> None:
    """A follower's history was one string, put whole into its connection's buffer: 100 clients
    that asked for a 3 MB session and read nothing held 380 MB of the server. The history goes
    out in pieces, each when the connection took the one before; what the followers have yet to
    take is bounded (``history_budget``): past it a new follower is a ``503``, until one leaves."""
    script = write_script(tmp_path / "s.json", [text("ok")])
    store = open_store()
    manager = SessionManager(store)
    session = manager.create(str(project))
    for i in range(8):  # 8 MB: more than the socket buffers of a client that reads nothing
        session.append_message(user(f"{i}" + "x" * 1_000_000))
    session.close()
    try:
        async with (
            serving(project, script, history_budget=2_000_000) as served,
            served.client() as client,
        ):
            path = f"/api/sessions/{session.id}/events"
            stalled = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            stalled.connect(("127.0.0.1", int(served.url.rsplit(":", 1)[1])))
            stalled.setblocking(False)
            reader, writer = await asyncio.open_connection(sock=stalled)
            writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
            async with asyncio.timeout(WAIT_SECONDS):
                assert (await reader.readline()).startswith(b"HTTP/1.1 200")
            async with asyncio.timeout(WAIT_SECONDS), client.stream("GET", path) as refused:
                assert refused.status_code == 503  # not a stream: it would never end
                error = json.loads(await refused.aread())["error"]
            assert re.fullmatch(
                r"this server is sending \d+ MB of history to followers that have not taken it yet: "
                "try again later",
                error,
            )
            writer.close()  # the stalled one leaves: its share is free again
            async with asyncio.timeout(WAIT_SECONDS):  # once the server has seen it go
                while True:
                    async with client.stream("GET", path) as again:
                        if again.status_code == 200:
                            break
                    await asyncio.sleep(0.05)
            events = await sse_events(client, path, count=8)
            assert [json.loads(data)["message"]["content"][0] for _, _, data in events] == [
                str(i) for i in range(8)
            ]
    finally:
        store.close()


SLOW_INPUT = """
import asyncio

def setup(api):
    @api.on("before_run")
    async def slow(event):
        await asyncio.sleep(3)
"""


async def test_a_new_session_that_is_not_stored_in_time_is_one_line_not_a_server_error(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Until its first message is stored a new session has no id to give: when that takes too
    long (a slow store, a slow extension hook) the answer was a 500 with a traceback."""
    monkeypatch.setattr(hub_module, "OPEN_TIMEOUT_SECONDS", 0.5)
    slow = tmp_path / "slow.py"
    slow.write_text(SLOW_INPUT)
    script = write_script(tmp_path / "s.json", [text("ok")])
    async with serving(project, script, extensions=(slow,)) as served, served.client() as client:
        answer = await client.post("/api/sessions", json={"message": "hello"})
        assert (answer.status_code, answer.json()) == (
            503,
            {"error": "the new session was not stored within 0.5 s: try again later"},
        )


async def test_a_client_that_never_finishes_its_headers_is_cut_off(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """uvicorn waited for ever for a request's headers: connections that send a header line now
    and then (or nothing) held a descriptor each until none was left (slowloris)."""
    monkeypatch.setattr(slow_clients, "HEADER_SECONDS", 0.5)
    script = write_script(tmp_path / "s.json", [text("ok")])
    async with serving(project, script) as served, served.client() as client:
        port = int(served.url.rsplit(":", 1)[1])
        session_id = (await client.post("/api/sessions", json={"message": "one"})).json()["sessionId"]
        stalls = [b"", b"GET /api/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n"]
        connections = [await asyncio.open_connection("127.0.0.1", port) for _ in stalls]
        for (_, writer), sent in zip(connections, stalls, strict=True):
            writer.write(sent)
        # a follower whose request came whole is not cut off, however long it follows
        follower = asyncio.create_task(
            sse_events(client, f"/api/sessions/{session_id}/events", until=lambda e: e[1] == "nothing")
        )
        async with asyncio.timeout(WAIT_SECONDS):
            for reader, _ in connections:
                assert await reader.read() == b""  # closed by the server
        assert not follower.done()
        follower.cancel()
        # a kept-alive connection that begins its next request and stalls is cut off too
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET /api/sessions/{session_id}/state HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        async with asyncio.timeout(WAIT_SECONDS):
            assert (await reader.readline()).startswith(b"HTTP/1.1 200")
            writer.write(b"GET /api/sessions HTTP/1.1\r\n")
            while await reader.read(65536):
                pass


async def test_a_request_whose_body_never_comes_whole_is_cut_off(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """A request whose headers came and whose body stalls (or trickles in a byte at a time) held
    its connection for ever: the body has a deadline of its own, a total, not an idle time. The
    client gone mid-body is no error of the server's (it logged a traceback)."""
    monkeypatch.setattr(slow_clients, "HEADER_SECONDS", 0.5)
    monkeypatch.setattr(slow_clients, "BODY_SECONDS", 0.5)
    script = write_script(tmp_path / "s.json", [text("ok")])
    async with serving(project, script) as served, served.client() as client:
        port = int(served.url.rsplit(":", 1)[1])
        head = b"POST /api/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        stalled = await asyncio.open_connection("127.0.0.1", port)
        stalled[1].write(head + b'Content-Length: 100\r\n\r\n{"message": ')
        trickled = await asyncio.open_connection("127.0.0.1", port)
        trickled[1].write(head + b"Content-Length: 100\r\n\r\n")
        async with asyncio.timeout(WAIT_SECONDS):
            for _ in range(50):  # a byte every 0.1 s: each one is news, the total is not
                if trickled[0].at_eof():
                    break
                trickled[1].write(b" ")
                await asyncio.sleep(0.1)
            for reader, _ in (stalled, trickled):
                assert await reader.read() == b""  # closed by the server, with no answer
        # a body that comes whole is answered as before, on a connection of its own
        assert (await client.post("/api/sessions", json={"message": "one"})).status_code == 201
    assert "Traceback" not in capfd.readouterr().err


async def test_a_stored_session_damaged_outside_tether_is_one_line_not_a_server_error(
    project: Path, tmp_path: Path
) -> None:
    """A prompt to a session one of whose stored entries is no JSON (a hand edit in sqlite3):
    the store's CorruptSessionError, a SessionError and no UserError, was a traceback on the
    server's stderr and "Internal Server Error" to the client."""
    script = write_script(tmp_path / "s.json", [text("ok")])
    store = open_store()
    session = SessionManager(store).create(str(project))
    entry_id = session.append_message(user("hello"))
    session.close()
    store.close()
    with sqlite3.connect(tmp_path / "home" / "data" / "sessions.db") as db:
        db.execute("UPDATE entries SET payload = x'7b6261' WHERE id = ?", (entry_id,))
    db.close()
    async with serving(project, script) as served, served.client() as client:
        answer = await client.post(f"/api/sessions/{session.id}/prompt", json={"message": "again"})
        assert (answer.status_code, answer.json()) == (
            500,
            {"error": f"entry '{entry_id}': payload is not JSON (key must be a string at line 1 column 2)"},
        )


async def test_a_long_sessions_page_does_not_stop_the_server_while_it_is_made(
    project: Path, tmp_path: Path
) -> None:
    """A session holding a few MB of text takes seconds of CPU to render as a page, and the page
    asks for it again on every new entry: made in the event loop, it stopped every other request
    and follow stream of the server for that long."""
    script = write_script(tmp_path / "s.json", [text("ok")])
    store = open_store()
    session = SessionManager(store).create(str(project))
    paragraphs = ("a long answer with *some* markdown in it, " * 8 + "\n\n") * 1500
    for turn in range(4):
        session.append_message(user(f"question {turn}"))
        session.append_message(assistant({"type": "text", "text": paragraphs}))
    session.close()
    store.close()
    async with serving(project, script) as served, served.client() as client:
        loop = asyncio.get_running_loop()
        began = loop.time()
        # The render is seconds of CPU alone and several times that on a loaded machine (the whole
        # suite beside it): its own bound, as the test compares waits, not durations.
        page = asyncio.create_task(client.get(f"/api/sessions/{session.id}/html", timeout=120))
        waits: list[float] = []  # of requests sent while the page is made
        while not page.done():
            sent = loop.time()
            assert (await client.get(f"/api/sessions/{session.id}/state")).status_code == 200
            waits.append(loop.time() - sent)
            await asyncio.sleep(0.02)
        answer = await page
        took = loop.time() - began
        assert answer.status_code == 200
        assert answer.text.count("<em>some</em>") == 4 * 1500 * 8
        assert max(waits) < took / 3, f"a request waited {max(waits):.2f}s of the page's {took:.2f}s"


async def test_pages_following_one_session_share_each_render_of_it(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every page that follows a session asks for its page on each new entry: six pages open on
    a long session made the same seconds-long render six times an entry."""
    renders: list[int] = []
    render = app_module.render_session_page

    def counted(entries: Any, *args: Any, **kwargs: Any) -> str:
        renders.append(len(entries))
        return render(entries, *args, **kwargs)

    monkeypatch.setattr(app_module, "render_session_page", counted)
    script = write_script(tmp_path / "s.json", [text("ok")])
    store = open_store()
    manager = SessionManager(store)
    session = manager.create(str(project))
    session.append_message(user("question"))
    session.append_message(assistant({"type": "text", "text": "answer *words* " * 20_000}))
    async with serving(project, script) as served, served.client() as client:
        path = f"/api/sessions/{session.id}/html"
        pages = await asyncio.gather(*(client.get(path) for _ in range(6)))
        assert {(p.status_code, p.text) for p in pages} == {(200, pages[0].text)}
        assert renders == [2]
        session.append_message(user("one more"))
        again = await client.get(path)
        assert "one more" in again.text and renders == [2, 3]
        assert (await client.get(path)).text == again.text and renders == [2, 3]
    session.close()
    store.close()


async def test_the_page_of_an_unchanged_session_reads_none_of_its_entries(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kept page was shared, but each request read every entry of the session first to tell
    whether it was still the session's page: a followed long session cost a read of all of it
    per page asked for. The session's row says it; the entries are read once per render."""
    script = write_script(tmp_path / "s.json", [text("ok")])
    store = open_store()
    manager = SessionManager(store)
    session = manager.create(str(project))
    asked = session.append_message(user("question"))
    session.append_message(assistant({"type": "text", "text": "answer"}))
    async with serving(project, script) as served, served.client() as client:
        reads: list[str] = []
        served_store = served.config.store
        read = served_store.entries

        def counted(session_id: str) -> Any:
            reads.append(session_id)
            return read(session_id)

        monkeypatch.setattr(served_store, "entries", counted)
        path = f"/api/sessions/{session.id}/html"
        first = await client.get(path)
        assert first.status_code == 200 and "answer" in first.text and len(reads) == 1
        for _ in range(5):
            assert (await client.get(path)).text == first.text
        assert len(reads) == 1
        session.append_message(user("one more"))
        assert "one more" in (await client.get(path)).text and len(reads) == 2
        session.branch(asked)  # a leaf move changes the page too
        moved = await client.get(path)
        assert moved.text != first.text and len(reads) == 3
        assert (await client.get(path)).text == moved.text and len(reads) == 3
    session.close()
    store.close()
