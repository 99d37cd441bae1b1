"""Branch, fork, approvals and run submission over HTTP: what each answers for a mistake, and
what the extensions' session_before_fork/_tree hooks decide of them."""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path
from typing import cast

from serve_support import WAIT_SECONDS, serving, settled, sse_events, text, write_script


async def test_tree_routes_move_fork_and_say_what_was_wrong(project: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [text("one"), text("two")])
    async with serving(project, script) as served, served.client() as client:
        session_id = (await client.post("/api/sessions", json={"message": "a"})).json()["sessionId"]
        await settled(client, session_id)
        await client.post(f"/api/sessions/{session_id}/prompt", json={"message": "b"})
        entries = (await settled(client, session_id))["entries"]
        answers = [e for e in entries if e["type"] == "message" and e["message"]["role"] == "assistant"]
        assert len(answers) == 2

        tree = (await client.get(f"/api/sessions/{session_id}/tree")).json()
        previews = {n["id"]: (n["role"], n["preview"]) for n in tree["nodes"]}
        assert previews[answers[0]["id"]] == ("assistant", "one")

        opened = asyncio.Event()
        follower = asyncio.create_task(
            sse_events(
                client,
                f"/api/sessions/{session_id}/events?history=false",
                until=lambda event: event[1] == "leaf",
                opened=opened,
            )
        )
        async with asyncio.timeout(WAIT_SECONDS):
            await opened.wait()
        moved = await client.post(f"/api/sessions/{session_id}/branch", json={"entryId": answers[0]["id"]})
        assert moved.json() == {"leafId": answers[0]["id"]}
        # the follower hears it from the store (SQLite: its polled watch), as on PostgreSQL
        leaf_events = [json.loads(d) for _, kind, d in await follower if kind == "leaf"]
        assert leaf_events == [{"type": "leaf", "leafId": answers[0]["id"]}]
        assert (await client.get(f"/api/sessions/{session_id}")).json()["session"]["leafId"] == answers[0][
            "id"
        ]
        unknown = await client.post(f"/api/sessions/{session_id}/branch", json={"entryId": "nope"})
        assert (unknown.status_code, unknown.json()) == (
            404,
            {"error": f"entryId: no entry 'nope' in session {session_id}"},
        )
        missing = await client.post(f"/api/sessions/{session_id}/branch", json={})
        assert (missing.status_code, missing.json()) == (422, {"error": "entryId: Field required"})

        forked = await client.post(f"/api/sessions/{session_id}/fork", json={"entryId": answers[0]["id"]})
        assert forked.status_code == 201
        copy = (await client.get(f"/api/sessions/{forked.json()['sessionId']}")).json()
        assert copy["session"]["parentSessionId"] == session_id
        assert copy["session"]["parentEntryId"] == answers[0]["id"]  # where it was forked
        assert copy["entries"][-1]["id"] == answers[0]["id"]
        assert (await client.post("/api/sessions/nope/fork", json={"entryId": None})).status_code == 404

        assert (await client.get(f"/api/sessions/{session_id}/approvals")).json() == {"approvals": []}
        stale = await client.post(f"/api/sessions/{session_id}/approvals/abc", json={"allow": True})
        assert (stale.status_code, stale.json()) == (
            404,
            {"error": f"no approval 'abc' waits in session {session_id}"},
        )
        typed = await client.post(f"/api/sessions/{session_id}/approvals/abc", json={"allow": "yes"})
        assert typed.status_code == 422 and typed.json()["error"].startswith("allow:")

        off = await client.post("/api/runs", json={"sessionId": session_id, "message": "later"})
        assert off.status_code == 501
        nobody = await client.post("/api/runs", json={"sessionId": "nope", "message": "later"})
        assert (nobody.status_code, nobody.json()) == (404, {"error": "sessionId: no session 'nope'"})


async def test_an_abort_answers_the_approval_its_run_waits_for(project: Path, tmp_path: Path) -> None:
    call = {"command": "echo never", "escalate": True, "justification": "test"}
    asks = {"content": [{"type": "toolCall", "name": "bash", "arguments": call}]}
    script = write_script(tmp_path / "s.json", [asks, text("after")])
    async with serving(project, script) as served, served.client() as client:  # no --yes: it asks
        session_id = (await client.post("/api/sessions", json={"message": "go"})).json()["sessionId"]
        async with asyncio.timeout(WAIT_SECONDS):
            while not (
                pending := (await client.get(f"/api/sessions/{session_id}/approvals")).json()["approvals"]
            ):
                await asyncio.sleep(0.02)
        assert [(p["tool"], p["question"]) for p in pending] == [
            ("bash", "Run command OUTSIDE the sandbox: echo never (reason: test)")
        ]
        assert (await client.post(f"/api/sessions/{session_id}/abort")).json() == {"aborted": True}
        entries = (await settled(client, session_id))["entries"]
        assert (await client.get(f"/api/sessions/{session_id}/approvals")).json() == {"approvals": []}
        results = [
            e["message"] for e in entries if e["type"] == "message" and e["message"]["role"] == "toolResult"
        ]
        assert all("never" not in json.dumps(r["content"]).replace("echo never", "") for r in results)
        late = await client.post(
            f"/api/sessions/{session_id}/approvals/{pending[0]['id']}", json={"allow": True}
        )
        assert late.status_code == 404


GUARD = """
import json
from pathlib import Path
from tether.session import SessionBeforeResult

LOG = Path(__file__).with_suffix(".log")
CLOSED = Path(__file__).with_suffix(".closed")

def setup(api):
    def guard(event):
        with LOG.open("a") as f:
            f.write(json.dumps(event) + "\\n")
        if CLOSED.exists():
            return SessionBeforeResult(cancel=True, reason=CLOSED.read_text())

    api.on("session_before_fork")(guard)
    api.on("session_before_tree")(guard)
"""


async def test_extensions_may_cancel_a_fork_and_a_move_of_a_session_the_server_runs(
    project: Path, tmp_path: Path
) -> None:
    """serve's fork and branch ask the session's extensions, as the slash commands do: a cancel
    is a 409 with the extension's reason, and nothing is forked or moved."""
    guard = tmp_path / "guard.py"
    guard.write_text(textwrap.dedent(GUARD))
    closed, log = guard.with_suffix(".closed"), guard.with_suffix(".log")
    script = write_script(tmp_path / "s.json", [text("one"), text("two")])
    async with serving(project, script, extensions=(guard,)) as served, served.client() as client:
        session_id = (await client.post("/api/sessions", json={"message": "a"})).json()["sessionId"]
        await settled(client, session_id)
        await client.post(f"/api/sessions/{session_id}/prompt", json={"message": "b"})
        entries = (await settled(client, session_id))["entries"]
        answers = [e["id"] for e in entries if e["type"] == "message" and e["message"]["role"] == "assistant"]
        assert len(answers) == 2
        sessions = len((await client.get("/api/sessions")).json()["sessions"])

        closed.write_text("the notes are not saved")
        refused = await client.post(f"/api/sessions/{session_id}/fork", json={"entryId": answers[0]})
        assert (refused.status_code, refused.json()) == (
            409,
            {"error": "cancelled by extension guard: the notes are not saved"},
        )
        assert len((await client.get("/api/sessions")).json()["sessions"]) == sessions  # nothing forked
        kept = await client.post(f"/api/sessions/{session_id}/branch", json={"entryId": answers[0]})
        assert kept.status_code == 409 and "cancelled by extension guard" in kept.json()["error"]
        assert (await client.get(f"/api/sessions/{session_id}")).json()["session"]["leafId"] == answers[1]

        closed.unlink()
        forked = await client.post(f"/api/sessions/{session_id}/fork", json={"entryId": None})
        assert forked.status_code == 201
        copy = (await client.get(f"/api/sessions/{forked.json()['sessionId']}")).json()
        assert copy["session"]["parentEntryId"] == answers[1]  # the leaf
        assert (await client.get(f"/api/sessions/{session_id}")).json()["session"]["leafId"] == answers[1]

    asked = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["type"], e.get("entryId"), e.get("position")) for e in asked] == [
        ("session_before_fork", answers[0], "at"),
        ("session_before_tree", None, None),
        ("session_before_fork", answers[1], "at"),
    ]
    assert asked[1]["preparation"]["targetId"] == answers[0]


SLOW_TREE_HOOK = """
import asyncio
from pathlib import Path

ASKED = Path(__file__).with_suffix(".asked")
GO = Path(__file__).with_suffix(".go")

def setup(api):
    async def wait(event):
        ASKED.touch()
        while not GO.exists():
            await asyncio.sleep(0.02)

    api.on("session_before_tree")(wait)
"""


async def test_a_prompt_that_starts_while_the_extensions_are_asked_about_a_move_keeps_its_place(
    project: Path, tmp_path: Path
) -> None:
    """The move was checked against a running session before its extensions were asked, not
    after: a prompt started while a ``session_before_tree`` hook waited, and the session moved
    under the run (answered 200), whose later entries then hung off the new leaf, a tool result
    cut from its call. Now the move is a 409 and the run's path is whole."""
    hook = tmp_path / "slow_tree.py"
    hook.write_text(textwrap.dedent(SLOW_TREE_HOOK))
    wait = {"command": "while [ ! -e go ]; do sleep 0.05; done"}
    script = write_script(
        tmp_path / "s.json",
        [text("one"), {"content": [{"type": "toolCall", "name": "bash", "arguments": wait}]}, text("two")],
    )
    async with serving(project, script, extensions=(hook,), yes=True) as served, served.client() as client:
        session_id = (await client.post("/api/sessions", json={"message": "a"})).json()["sessionId"]
        await settled(client, session_id)
        move = asyncio.create_task(client.post(f"/api/sessions/{session_id}/branch", json={"entryId": None}))
        async with asyncio.timeout(WAIT_SECONDS):
            while not hook.with_suffix(".asked").exists():
                await asyncio.sleep(0.02)
        started = await client.post(f"/api/sessions/{session_id}/prompt", json={"message": "b"})
        assert started.json() == {"disposition": "started"}
        hook.with_suffix(".go").touch()  # the move goes on, the run still runs
        (project / "go").touch()
        moved = await move
        assert moved.status_code == 409 and "run" in moved.json()["error"]
        entries = (await settled(client, session_id))["entries"]
    parents = {e["id"]: e.get("parentId") for e in entries}
    path = [entries[-1]["id"]]
    while parents[path[-1]] is not None:
        path.append(cast(str, parents[path[-1]]))
    assert len(path) == len(entries)  # one line of entries, from the first to the last
