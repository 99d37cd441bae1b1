"""A stored session runs in the folder it was recorded in, not where ``tether serve`` was started,
when that folder is the server's or inside it; when it is outside, or gone, prompting it is
refused in one line (reading it is not)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import httpx2
import pytest
from serve_support import WAIT_SECONDS, serving, settled, tether_serve, text, write_script

from session_helpers import user
from tether.session import SessionManager
from tether.session.pi_files import import_pi_session

PWD = {"content": [{"type": "toolCall", "name": "bash", "arguments": {"command": "pwd"}}]}


async def test_a_stored_session_runs_in_its_own_folder_and_is_refused_once_it_is_gone(
    project: Path, tmp_path: Path
) -> None:
    elsewhere = project / "elsewhere"
    elsewhere.mkdir()
    gone = tmp_path / "gone"
    gone.mkdir()
    with SessionManager() as manager:
        ids: list[str] = []
        for folder in (elsewhere, gone):
            session = manager.create(str(folder))
            session.append_message(user(f"hello from {folder.name}"))
            ids.append(session.id)
            session.close()
    shutil.rmtree(gone)
    script = write_script(tmp_path / "s.json", [PWD, text("done")])
    async with serving(project, script, yes=True) as served, served.client() as client:
        answer = await client.post(f"/api/sessions/{ids[0]}/prompt", json={"message": "where are you?"})
        assert answer.status_code == 202, answer.text
        entries = (await settled(client, ids[0]))["entries"]
        results = [
            e["message"] for e in entries if e["type"] == "message" and e["message"]["role"] == "toolResult"
        ]
        assert len(results) == 1
        assert results[0]["content"][0]["text"] == f"{elsewhere}\n"

        refused = await client.post(f"/api/sessions/{ids[1]}/prompt", json={"message": "still there?"})
        assert refused.status_code == 409
        error = refused.json()["error"]
        # a fork keeps the recorded folder: the advice is one that runs it
        assert error == (
            f"session {ids[1]} ran in {gone}, which is gone: restore the folder, or open it "
            f"with tether --session {ids[1]} in the folder it should work in"
        )
        assert not served.config.hub.is_open(ids[1])


def _pi_file(path: Path, cwd: str) -> Path:
    """A pi session file recorded in ``cwd``, holding one user message."""
    header = {"type": "session", "version": 3, "id": path.stem, "timestamp": "2026-01-01T00:00:00.000Z"}
    message = {"role": "user", "content": "hello", "timestamp": 1}
    entry = {"type": "message", "id": "a1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z"}
    records = [{**header, "cwd": cwd}, {**entry, "message": message}]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.subprocess
async def test_an_imported_session_recorded_outside_the_servers_folder_is_not_run(
    project: Path, tmp_path: Path
) -> None:
    """An imported pi file keeps its header's folder, and the server ran a stored session there:
    a file saying ``"cwd": "/"``, prompted through ``tether serve``, ran the model's bash
    (confined, without asking) with the whole filesystem as its writable workspace. Now a
    session recorded outside the server's folder is refused (and can still be read); one
    recorded inside it runs there, in the real sandbox."""
    inside = project / "inside"
    inside.mkdir()
    with SessionManager() as manager:
        root = import_pi_session(manager, _pi_file(tmp_path / "root.jsonl", "/")).id
        nested = import_pi_session(manager, _pi_file(tmp_path / "nested.jsonl", str(inside))).id
    # writes only inside the test's folder: on main the first prompt ran it in /
    command = f'pwd; case "$PWD" in {project}/*) touch mine ../escaped;; esac'
    bash = {"content": [{"type": "toolCall", "name": "bash", "arguments": {"command": command}}]}
    script = write_script(tmp_path / "s.json", [bash, text("done")])
    async with (
        tether_serve(project, "--model", f"scripted:{script}") as url,
        httpx2.AsyncClient(base_url=url, timeout=WAIT_SECONDS) as client,
    ):
        refused = await client.post(f"/api/sessions/{root}/prompt", json={"message": "touch it"})
        assert refused.status_code == 409, refused.text
        assert refused.json()["error"] == (
            f"session {root} was recorded in /, outside this server's folder {project}: "
            f"it can be read here; to run it, open it with tether --session {root} in the folder "
            "it should work in"
        )
        assert (await client.get(f"/api/sessions/{root}")).status_code == 200

        ran = await client.post(f"/api/sessions/{nested}/prompt", json={"message": "touch it"})
        assert ran.status_code == 202, ran.text
        entries = (await settled(client, nested))["entries"]
    results = [
        e["message"] for e in entries if e["type"] == "message" and e["message"]["role"] == "toolResult"
    ]
    assert len(results) == 1
    assert results[0]["content"][0]["text"].startswith(f"{inside}\n")
    assert (inside / "mine").exists()  # its workspace, writable
    assert not (project / "escaped").exists()  # the sandbox kept the rest read-only


def test_a_session_runs_in_the_folder_its_link_pointed_to_when_checked(project: Path, tmp_path: Path) -> None:
    """The check resolved the recorded folder but the hub handed on the folder as recorded, which
    the core and the sandbox opened again: a link inside the server's folder, swapped after the
    check for one pointing out of it, led them out."""
    from tether.serve.hub import SessionHub
    from tether.session import Settings
    from tether.session.options import SessionOptions

    inside = project / "inside"
    inside.mkdir()
    link = project / "link"
    link.symlink_to(inside)
    hub = SessionHub(SessionOptions(), lambda _folder: Settings(), project)
    where = hub.workspace("s1", str(link))
    link.unlink()
    link.symlink_to(tmp_path)  # swapped: out of the server's folder
    assert where == Path(os.path.realpath(inside))
