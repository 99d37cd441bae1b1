"""``/api/runs``: durable runs (DBOS on SQLite) listed, shown and cancelled over HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from serve_support import serving, settled, text, write_script

from session_helpers import user
from tether.durable import runs
from tether.durable.client import DurableClient
from tether.durable.config import DurableConfig
from tether.durable.worker import launch, shutdown
from tether.durable.workflow import Runtime
from tether.serve.auth import Tokens
from tether.session import SessionManager
from tether.store.sqlite_store import SQLiteStore
from tether.testing.postgres import PostgresServer, postgres_server


@pytest.fixture
def durable(project: Path, tmp_path: Path) -> DurableConfig:
    """A run database where a worker started (making its tables) and stopped: a run submitted
    then waits in the queue."""
    config = DurableConfig(system_database=f"sqlite:///{tmp_path / 'durable.sqlite'}")
    dispatcher = launch(Runtime(config, tmp_path / "home" / "config"))
    shutdown(dispatcher)
    return config


async def test_runs_are_listed_shown_and_cancelled(
    project: Path, tmp_path: Path, durable: DurableConfig
) -> None:
    script = write_script(tmp_path / "s.json", [text("ok")])
    tokens = Tokens(full="w", read_only="r")
    async with serving(project, script, tokens=tokens) as served, served.client("w") as client:
        session_id = (await client.post("/api/sessions", json={"message": "hi"})).json()["sessionId"]
        await settled(client, session_id)
        with DurableClient(durable) as submitter:
            run_id = submitter.submit(session_id, "a durable prompt")

        off = await client.get("/api/runs")
        assert off.status_code == 501 and "tether[durable]" in off.json()["error"]

    async with (
        serving(project, script, tokens=tokens, durable=durable) as served,
        served.client("w") as client,
    ):
        listed = (await client.get("/api/runs")).json()["runs"]
        assert [(r["id"], r["status"], r["session"], r["prompt"]) for r in listed] == [
            (run_id, "ENQUEUED", session_id, "a durable prompt")
        ]
        assert (await client.get("/api/runs", params={"session": "other"})).json() == {"runs": []}
        assert (await client.get("/api/runs", params={"status": "done"})).status_code == 422
        shown = (await client.get(f"/api/runs/{run_id}")).json()
        assert (shown["run"]["id"], shown["steps"], shown["cost"]) == (run_id, [], 0.0)
        missing = await client.get("/api/runs/no-such-run")
        assert (missing.status_code, missing.json()) == (404, {"error": "no durable run 'no-such-run'"})
        async with served.client("r") as reader:
            assert (await reader.post(f"/api/runs/{run_id}/cancel")).status_code == 403
        cancelled = await client.post(f"/api/runs/{run_id}/cancel")
        assert cancelled.json()["status"] == "CANCELLED"
        assert (await client.get("/api/runs", params={"status": "cancelled"})).json()["runs"][0][
            "id"
        ] == run_id


async def test_a_run_is_submitted_only_on_a_session_recorded_in_the_servers_folder(
    project: Path, tmp_path: Path, durable: DurableConfig
) -> None:
    """A worker runs a session in the folder it was recorded in: a session whose (imported)
    record said ``/`` would run there, so the server refuses it as it refuses to prompt it."""
    with SessionManager() as manager:
        ids: list[str] = []
        for folder in ("/", str(project / "inside")):
            session = manager.create(folder)
            session.append_message(user("hello"))
            ids.append(session.id)
            session.close()
    (project / "inside").mkdir()
    script = write_script(tmp_path / "s.json", [text("ok")])
    async with serving(project, script, durable=durable) as served, served.client() as client:
        refused = await client.post("/api/runs", json={"sessionId": ids[0], "message": "go"})
        assert refused.status_code == 409
        assert refused.json()["error"].startswith(
            f"session {ids[0]} was recorded in /, outside this server's"
        )
        taken = await client.post("/api/runs", json={"sessionId": ids[1], "message": "go"})
        assert taken.status_code == 201, taken.text
        listed = (await client.get("/api/runs")).json()["runs"]
        assert [r["session"] for r in listed] == [ids[1]]


async def test_a_run_is_handed_the_folder_the_server_checked_resolved(
    project: Path, tmp_path: Path, durable: DurableConfig
) -> None:
    """The server checked the session's folder resolved but enqueued the run with nothing but the
    session, and the worker opened the recorded folder as it then stood: a link inside the
    server's folder, swapped after the check, led the run out of it. The run now carries the
    folder checked, resolved, as a prompt on this server runs in (``SessionHub.workspace``)."""
    inside = project / "inside"
    inside.mkdir()
    (project / "link").symlink_to(inside)
    with SessionManager() as manager:
        session = manager.create(str(project / "link"))
        session.append_message(user("hello"))
        session.close()
    script = write_script(tmp_path / "s.json", [text("ok")])
    async with serving(project, script, durable=durable) as served, served.client() as client:
        taken = await client.post("/api/runs", json={"sessionId": session.id, "message": "go"})
        assert taken.status_code == 201, taken.text
        listed = (await client.get("/api/runs")).json()["runs"]
    assert [(r["id"], r.get("cwd")) for r in listed] == [(taken.json()["runId"], str(inside.resolve()))]
    with DurableClient(durable) as submitter:  # a retry works where the run was sent to work
        again = runs.retry(submitter, taken.json()["runId"])
        assert runs.show(submitter, again).run.cwd == str(inside.resolve())


async def test_a_submit_reads_the_session_row_once(
    project: Path, tmp_path: Path, durable: DurableConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server read the session's row to check its folder, then the submit read it again to
    see that it exists: the row could change between (deleted, moved to another folder), the
    run enqueued on a row nobody checked. Now the folder is checked on the row the submit reads,
    and a session there is none of is still a 404."""
    with SessionManager() as manager:
        session = manager.create(str(project))
        session.append_message(user("hello"))
        session.close()
    reads: list[str] = []
    read = SQLiteStore.get_session

    def counted(store: SQLiteStore, session_id: str) -> Any:
        reads.append(session_id)
        return read(store, session_id)

    monkeypatch.setattr(SQLiteStore, "get_session", counted)
    script = write_script(tmp_path / "s.json", [text("ok")])
    async with serving(project, script, durable=durable) as served, served.client() as client:
        taken = await client.post("/api/runs", json={"sessionId": session.id, "message": "go"})
        assert taken.status_code == 201, taken.text
        assert reads == [session.id]
        missing = await client.post("/api/runs", json={"sessionId": "nope", "message": "go"})
    assert (missing.status_code, missing.json()) == (404, {"error": "sessionId: no session 'nope'"})


async def test_the_runs_of_a_database_that_stopped_answering_are_a_503(
    project: Path, tmp_path: Path, postgres: PostgresServer
) -> None:
    """A server frozen (SIGSTOP: its kernel still acknowledges) held each request for ever."""
    script = write_script(tmp_path / "s.json", [text("ok")])
    with postgres_server(postgres.bin_dir) as frozen:
        config = DurableConfig(system_database=frozen.url(), answer_wait_seconds=1)
        frozen.freeze()
        async with serving(project, script, durable=config) as served, served.client() as client:
            listed = await client.get("/api/runs")
            cancelled = await client.post("/api/runs/r1/cancel")
    silent = f"durable database {frozen.url()} did not answer within 1 s"
    assert (listed.status_code, listed.json()) == (503, {"error": silent})
    assert (cancelled.status_code, cancelled.json()) == (
        503,
        {"error": f"{silent}: the cancel may still take effect"},
    )
