"""The JSON API and the SSE follow stream of ``tether serve`` on a real uvicorn (127.0.0.1:0)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from serve_support import WAIT_SECONDS, Event, serving, settled, sse_events, text, write_script

from tether.serve.auth import Tokens
from tether.serve.errors import MAX_BODY_BYTES, MAX_MESSAGE_CHARS


async def test_a_session_started_over_http_is_listed_searched_and_read(project: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [text("Hello ", "<b>there</b>")])
    async with serving(project, script) as served, served.client() as client:
        started = await client.post(
            "/api/sessions", json={"message": "fix the <script>alert(1)</script> bug"}
        )
        assert started.status_code == 201
        session_id = started.json()["sessionId"]
        read = await settled(client, session_id)
        messages = [e["message"] for e in read["entries"] if e["type"] == "message"]
        assert [m["role"] for m in messages] == ["user", "assistant"]
        assert messages[1]["content"][0]["text"] == "Hello <b>there</b>"
        assert read["session"]["firstPrompt"] == "fix the <script>alert(1)</script> bug"

        listed = (await client.get("/api/sessions")).json()
        assert [s["id"] for s in listed["sessions"]] == [session_id]
        assert (await client.get("/api/sessions", params={"q": "ALERT(1)"})).json()["total"] == 1
        assert (await client.get("/api/sessions", params={"q": "nothing like it"})).json()["sessions"] == []

        tree = (await client.get(f"/api/sessions/{session_id}/tree")).json()
        assert tree["currentPath"][-1] == tree["leafId"] == read["session"]["leafId"]
        assert {n["id"] for n in tree["nodes"]} == {e["id"] for e in read["entries"]}

        page = (await client.get(f"/api/sessions/{session_id}/html")).text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert "<script>" not in page
        assert "Hello &lt;b&gt;there&lt;/b&gt;" in page


async def test_follow_streams_entries_with_their_ids_and_resumes_after_last_event_id(
    project: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.json", [text("one"), text("two")])
    async with serving(project, script) as served, served.client() as client:
        session_id = (await client.post("/api/sessions", json={"message": "first"})).json()["sessionId"]
        entries = (await settled(client, session_id))["entries"]
        path = f"/api/sessions/{session_id}/events"
        history = await sse_events(client, path, len(entries))
        assert [(i, kind) for i, kind, _ in history] == [(e["id"], "entry") for e in entries]
        assert [json.loads(data) for _, _, data in history] == entries

        resumed = await sse_events(
            client, path, len(entries) - 2, headers={"Last-Event-ID": entries[1]["id"]}
        )
        assert [i for i, _, _ in resumed] == [e["id"] for e in entries[2:]]

        unknown = await client.get(path, headers={"Last-Event-ID": "no-such-entry"})
        assert unknown.status_code == 400
        assert "no-such-entry" in unknown.json()["error"]

        # live: a follower from the end sees the next prompt's entries, and its streamed text
        def assistant_entry(event: Event) -> bool:
            return event[1] == "entry" and json.loads(event[2]).get("message", {}).get("role") == "assistant"

        opened = asyncio.Event()
        last = {"Last-Event-ID": entries[-1]["id"]}
        follower = asyncio.create_task(
            sse_events(client, path, headers=last, until=assistant_entry, opened=opened)
        )
        async with asyncio.timeout(WAIT_SECONDS):
            await opened.wait()  # listening for deltas from here on
        answer = await client.post(f"/api/sessions/{session_id}/prompt", json={"message": "second"})
        assert answer.status_code == 202 and answer.json() == {"disposition": "started"}
        live = await follower
        kinds = [kind for _, kind, _ in live]
        assert kinds.index("delta") < kinds.index("entry", kinds.index("delta"))  # streamed, then stored
        assert [json.loads(data) for _, kind, data in live if kind == "delta"] == [
            {"type": "delta", "key": 2, "kind": "text_delta", "delta": "two"}  # its second answer
        ]
        assert {"type": "status", "running": True} in [
            json.loads(d) for _, kind, d in live if kind == "status"
        ]
        new_ids = [i for i, kind, _ in live if kind == "entry"]
        assert entries[-1]["id"] not in new_ids
        texts = [json.loads(data) for _, kind, data in live if kind == "entry"]
        assert any(e.get("message", {}).get("role") == "user" for e in texts)


async def test_tokens_guard_every_api_route_and_read_only_tokens_cannot_write(
    project: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.json", [text("ok")])
    tokens = Tokens(full="full-secret", read_only="read-secret")
    async with serving(project, script, tokens=tokens) as served:
        async with served.client() as anonymous:
            for path in ("/api/sessions", "/openapi.json", "/api/models", "/api/sessions/x/events"):
                refused = await anonymous.get(path)
                assert refused.status_code == 401, path
                assert refused.json() == {"error": "a bearer token is required"}
                assert refused.headers["www-authenticate"] == "Bearer"
            assert (await anonymous.post("/api/sessions", json={"message": "hi"})).status_code == 401
            # the page itself holds no data: it loads without a token
            page = await anonymous.get("/")
            assert page.status_code == 200 and "/static/app.js" in page.text
            assert "script-src 'self'" in page.headers["content-security-policy"]
            # only the event stream takes the token in its address (EventSource sends no headers)
            for path in ("/api/sessions", "/api/runs/events", "/api/sessions/x/events/more"):
                in_address = await anonymous.get(path, params={"access_token": "full-secret"})
                assert in_address.status_code == 401, path
            missing = await anonymous.get("/api/sessions/x/events", params={"access_token": "read-secret"})
            assert missing.status_code == 404
        async with served.client("wrong") as wrong:
            assert (await wrong.get("/api/sessions")).json() == {"error": "wrong token"}
        async with served.client("read-secret") as reader:
            assert (await reader.get("/api/sessions")).status_code == 200
            refused = await reader.post("/api/sessions", json={"message": "hi"})
            assert refused.status_code == 403
            assert refused.json() == {"error": "this token may only read"}
        async with served.client("full-secret") as writer:
            started = await writer.post("/api/sessions", json={"message": "hi"})
            assert started.status_code == 201
            session_id = started.json()["sessionId"]
            await settled(writer, session_id)
        async with served.client("read-secret") as reader:
            assert (await reader.post(f"/api/sessions/{session_id}/abort")).status_code == 403


async def test_bad_input_gets_one_clear_json_error(project: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [text("ok")])
    async with serving(project, script) as served, served.client() as client:
        cases = [
            ("POST", "/api/sessions", b"{not json", 400, "body: not valid JSON"),
            ("POST", "/api/sessions", b"{}", 422, "message: Field required"),
            (
                "POST",
                "/api/sessions",
                b'{"message": ""}',
                422,
                "message: String should have at least 1 character",
            ),
            ("POST", "/api/sessions", b'{"message": 3}', 422, "message: Input should be a valid string"),
            (
                "POST",
                "/api/sessions",
                b'{"message": "x", "extra": 1}',
                422,
                "extra: Extra inputs are not permitted",
            ),
            ("GET", "/api/sessions?limit=0", b"", 422, "limit: expected an integer from 1 to 1000"),
            ("GET", "/api/sessions?limit=many", b"", 422, "limit: expected an integer from 1 to 1000"),
            ("GET", "/api/sessions/nope", b"", 404, "no session 'nope'"),
            ("POST", "/api/sessions/nope/prompt", b'{"message": "x"}', 404, "no session 'nope'"),
            ("GET", "/api/nothing", b"", 404, "no route /api/nothing"),
            ("DELETE", "/api/sessions", b"", 405, "DELETE is not allowed on /api/sessions"),
        ]
        for method, path, body, status, error in cases:
            answer = await client.request(method, path, content=body)
            assert (answer.status_code, answer.json()) == (status, {"error": error}), (method, path, body)
        prompt = b'{"message": "x", "streamingBehavior": "later"}'
        answer = await client.post("/api/sessions", content=prompt)
        assert answer.status_code == 422  # a new session takes no streamingBehavior


async def test_a_huge_id_is_echoed_cut_in_its_404(project: Path, tmp_path: Path) -> None:
    """A 100 KB session id (or path) in a request came back whole in the error: cut at 200
    characters, saying so, quoted as a short one is. (60,000 characters here: the test's client
    refuses a URL of more than 64 KiB.)"""
    script = write_script(tmp_path / "s.json", [text("ok")])
    long = "x" * 60_000
    cut = f"{'x' * 200!r}… (cut: 60000 characters)"
    async with serving(project, script) as served, served.client() as client:
        cases = [
            ("GET", f"/api/sessions/{long}", None, f"no session {cut}"),
            ("GET", f"/api/sessions/{long}/events", None, f"no session {cut}"),
            ("POST", f"/api/sessions/{long}/prompt", {"message": "x"}, f"no session {cut}"),
            ("GET", f"/api/{long}", None, f"no route /api/{'x' * 195}… (cut: 60005 characters)"),
        ]
        for method, path, body, error in cases:
            answer = await client.request(method, path, json=body)
            assert (answer.status_code, answer.json()) == (404, {"error": error}), (method, path[:40])


async def test_an_oversized_body_is_refused_before_it_is_read_whole(project: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [text("ok")])
    huge = json.dumps({"message": "x" * (MAX_BODY_BYTES + 10)}).encode()

    async def streamed() -> AsyncIterator[bytes]:  # no Content-Length: chunked, cut off at the limit
        for start in range(0, len(huge), 1 << 16):
            yield huge[start : start + (1 << 16)]

    async with serving(project, script) as served, served.client() as client:
        for body in (huge, streamed()):
            answer = await client.post("/api/sessions", content=body)
            assert (answer.status_code, answer.json()) == (
                413,
                {"error": f"body: larger than {MAX_BODY_BYTES} bytes"},
            )
        assert (await client.get("/api/sessions")).json()["total"] == 0
        # the longest prompt, in the widest encoding JSON has, is within the limit
        widest = json.dumps({"message": "\U0001f600" * MAX_MESSAGE_CHARS}).encode()
        assert len(widest) > 1_000_000
        answer = await client.post("/api/sessions", content=widest)
        assert answer.status_code == 201, answer.text


async def test_prompts_are_rate_limited_per_token(project: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [text("ok")])
    tokens = Tokens(full="a")
    async with (
        serving(project, script, tokens=tokens, prompts_per_minute=1) as served,
        served.client("a") as client,
    ):
        session_id = (await client.post("/api/sessions", json={"message": "one"})).json()["sessionId"]
        await settled(client, session_id)
        limited = await client.post(f"/api/sessions/{session_id}/prompt", json={"message": "two"})
        assert limited.status_code == 429
        assert limited.json()["error"].startswith("too many prompts: 1 a minute")
        assert limited.headers["retry-after"] == "60"
        assert (await client.get(f"/api/sessions/{session_id}")).status_code == 200  # reads are not


async def test_a_running_session_queues_steers_and_answers_abort(project: Path, tmp_path: Path) -> None:
    slow = {"content": [{"type": "toolCall", "name": "bash", "arguments": {"command": "sleep 30"}}]}
    script = write_script(tmp_path / "s.json", [slow, text("stopped")])
    async with serving(project, script, yes=True) as served, served.client() as client:
        session_id = (await client.post("/api/sessions", json={"message": "wait"})).json()["sessionId"]
        async with asyncio.timeout(WAIT_SECONDS):
            while not (await client.get(f"/api/sessions/{session_id}/state")).json()["running"]:
                await asyncio.sleep(0.02)
        busy = await client.post(f"/api/sessions/{session_id}/prompt", json={"message": "again"})
        assert busy.status_code == 409
        assert "streamingBehavior" in busy.json()["error"]
        steer = await client.post(
            f"/api/sessions/{session_id}/prompt", json={"message": "hurry", "streamingBehavior": "steer"}
        )
        assert (steer.status_code, steer.json()) == (202, {"disposition": "queued"})
        aborted = await client.post(f"/api/sessions/{session_id}/abort")
        assert aborted.json() == {"aborted": True}
        read = await settled(client, session_id)  # ended within WAIT_SECONDS, not after the sleep
        assistant = [e["message"] for e in read["entries"] if e.get("message", {}).get("role") == "assistant"]
        assert assistant[-1]["stopReason"] == "aborted"
        assert (await client.post(f"/api/sessions/{session_id}/abort")).json() == {"aborted": False}


async def test_steer_and_follow_up_reach_the_model_in_their_turns(project: Path, tmp_path: Path) -> None:
    # the tool waits for a file the test writes once both messages are queued: no race with the run
    wait = {"command": "while [ ! -e go ]; do sleep 0.05; done; echo went"}
    script = write_script(
        tmp_path / "s.json",
        [
            {"content": [{"type": "toolCall", "name": "bash", "arguments": wait}]},
            text("after the steer"),
            text("after the follow-up"),
        ],
    )
    async with serving(project, script, yes=True) as served, served.client() as client:
        session_id = (await client.post("/api/sessions", json={"message": "wait"})).json()["sessionId"]
        async with asyncio.timeout(WAIT_SECONDS):
            while not (await client.get(f"/api/sessions/{session_id}/state")).json()["running"]:
                await asyncio.sleep(0.02)
        steer = await client.post(f"/api/sessions/{session_id}/steer", json={"message": "hurry"})
        later = await client.post(f"/api/sessions/{session_id}/follow-up", json={"message": "then this"})
        assert [(a.status_code, a.json()) for a in (steer, later)] == [(202, {"disposition": "queued"})] * 2
        (project / "go").touch()
        read = await settled(client, session_id)
        said = [
            (e["message"]["role"], str(e["message"]["content"]))
            for e in read["entries"]
            if e["type"] == "message" and e["message"]["role"] != "toolResult"
        ]
        assert [role for role, _ in said] == ["user", "assistant", "user", "assistant", "user", "assistant"]
        assert "hurry" in said[2][1] and "after the steer" in said[3][1]
        assert "then this" in said[4][1] and "after the follow-up" in said[5][1]
        models = (await client.get("/api/models")).json()
        assert models["default"] is None and isinstance(models["models"], list)


async def test_the_openapi_document_names_every_api_route(project: Path, tmp_path: Path) -> None:
    from starlette.routing import Route

    from tether.serve import create_app

    script = write_script(tmp_path / "s.json", [text("ok")])
    async with serving(project, script) as served, served.client() as client:
        document = (await client.get("/openapi.json")).json()
        app = create_app(served.config)
        routes = {
            (route.path, method.lower())
            for route in app.routes
            if isinstance(route, Route) and route.path.startswith("/api/")
            for method in (route.methods or set()) - {"HEAD"}
        }
        documented = {(path, method) for path, item in document["paths"].items() for method in item}
        assert documented == routes
        assert document["openapi"].startswith("3.1")


async def test_cors_only_for_the_configured_origin(project: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [text("ok")])
    preflight = {"Origin": "https://team.example", "Access-Control-Request-Method": "POST"}
    async with serving(project, script) as served, served.client() as client:
        answer = await client.get("/api/sessions", headers={"Origin": "https://team.example"})
        assert "access-control-allow-origin" not in answer.headers
    async with (
        serving(project, script, cors_origins=("https://team.example",)) as served,
        served.client() as client,
    ):
        answer = await client.options("/api/sessions", headers=preflight)
        assert answer.headers["access-control-allow-origin"] == "https://team.example"
        other = await client.options("/api/sessions", headers={**preflight, "Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers


async def test_many_followers_leave_room_for_reads_and_too_many_are_refused(
    project: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.json", [text("ok")])
    async with serving(project, script, max_followers=12) as served, served.client() as client:
        session_id = (await client.post("/api/sessions", json={"message": "one"})).json()["sessionId"]
        entries = (await settled(client, session_id))["entries"]
        path = f"/api/sessions/{session_id}/events"

        async def follower(opened: asyncio.Event) -> list[Event]:
            return await sse_events(client, path, until=lambda e: e[0] == "never", opened=opened)

        # more followers than asyncio's default pool has threads (cpu_count + 4): they hold none
        openings = [asyncio.Event() for _ in range(12)]
        followers = [asyncio.create_task(follower(opened)) for opened in openings]
        try:
            async with asyncio.timeout(WAIT_SECONDS):
                for opened in openings:
                    await opened.wait()
            refused = await client.get(path)
            assert refused.status_code == 503
            assert "follows 12 streams already" in refused.json()["error"]
            read = await client.get(f"/api/sessions/{session_id}")  # answered: a thread was free
            assert len(read.json()["entries"]) == len(entries)
        finally:
            for task in followers:
                task.cancel()
            await asyncio.gather(*followers, return_exceptions=True)


async def test_a_session_the_server_cannot_start_is_one_line_not_a_traceback(
    project: Path, tmp_path: Path
) -> None:
    async with serving(project, tmp_path / "missing.json") as served, served.client() as client:
        answer = await client.post("/api/sessions", json={"message": "hi"})
        assert answer.status_code == 500
        error = answer.json()["error"]
        assert "missing.json" in error and "\n" not in error and "Traceback" not in error


async def test_abort_keeps_the_queue_and_clear_queue_takes_it_back(project: Path, tmp_path: Path) -> None:
    """As pi's RPC ``abort`` and ``clear_queue``: what is queued survives the abort (``state``
    lists it), ``clear-queue`` returns it and empties the queue, and the next prompt goes alone."""
    slow = {"content": [{"type": "toolCall", "name": "bash", "arguments": {"command": "sleep 30"}}]}
    # the call the abort cuts short takes a reply too
    script = write_script(tmp_path / "s.json", [slow, text("never seen"), text("after next")])
    async with serving(project, script, yes=True) as served, served.client() as client:
        session_id = (await client.post("/api/sessions", json={"message": "wait"})).json()["sessionId"]
        state = f"/api/sessions/{session_id}/state"
        async with asyncio.timeout(WAIT_SECONDS):
            while not (await client.get(state)).json()["running"]:
                await asyncio.sleep(0.02)
        await client.post(f"/api/sessions/{session_id}/steer", json={"message": "hurry"})
        await client.post(f"/api/sessions/{session_id}/follow-up", json={"message": "then this"})
        assert (await client.post(f"/api/sessions/{session_id}/abort")).json() == {"aborted": True}
        await settled(client, session_id)
        queued = {"steering": ["hurry"], "followUp": ["then this"]}
        assert (await client.get(state)).json()["queue"] == queued
        taken = await client.post(f"/api/sessions/{session_id}/clear-queue")
        assert (taken.status_code, taken.json()) == (200, queued)
        assert (await client.get(state)).json()["queue"] == {"steering": [], "followUp": []}
        assert (
            await client.post(f"/api/sessions/{session_id}/prompt", json={"message": "next"})
        ).status_code == 202
        read = await settled(client, session_id)
        users = [
            str(e["message"]["content"])
            for e in read["entries"]
            if e.get("message", {}).get("role") == "user"
        ]
        assert len(users) == 2 and "wait" in users[0] and "next" in users[1]
        last = [e["message"] for e in read["entries"] if e["type"] == "message"][-1]
        assert last["role"] == "assistant" and "after next" in str(last["content"])  # the run is over


async def test_prompts_sent_at_once_to_an_idle_session_start_one_run_and_lose_none(
    project: Path, tmp_path: Path
) -> None:
    """Each prompt answered ``started`` runs: the run starts before the answer, so the prompts
    behind it in the same moment see it running (409 without ``streamingBehavior``). A run
    started in a task of its own let them all through as ``started`` when they were checked in
    one step of the event loop (the requests arriving together from several clients), and all
    but one were dropped by the busy agent, said only on the server's stderr."""
    script = write_script(tmp_path / "s.json", [text("first"), *[text("again")] * 8])
    async with serving(project, script, prompts_per_minute=0) as served, served.client() as client:
        session_id = (await client.post("/api/sessions", json={"message": "hi"})).json()["sessionId"]
        await settled(client, session_id)
        hub = served.config.hub
        core, arrived, together = hub.core, [0], asyncio.Event()

        async def core_of_all_at_once(*args: Any) -> Any:
            """Each request gets the core in the same step of the loop: as many clients at once."""
            found = await core(*args)
            arrived[0] += 1
            if arrived[0] == 8:
                together.set()
            await together.wait()
            return found

        hub.core = core_of_all_at_once  # type: ignore[method-assign]
        path = f"/api/sessions/{session_id}/prompt"
        answers = await asyncio.gather(*(client.post(path, json={"message": f"p{i}"}) for i in range(8)))
        started = [a for a in answers if a.status_code == 202]
        assert [a.json() for a in started] == [{"disposition": "started"}]
        assert sorted(a.status_code for a in answers) == [202] + [409] * 7
        read = await settled(client, session_id)
        users = [
            e["message"]["content"] for e in read["entries"] if e.get("message", {}).get("role") == "user"
        ]
        assert len(users) == 2  # the first prompt and the one started
