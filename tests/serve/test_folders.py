"""A stored session runs in the folder it was recorded in, not where ``tether serve`` was started;
when that folder is gone, prompting it is refused in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from serve_support import serving, settled, text, write_script

from session_helpers import user
from tether.session import SessionManager

PWD = {"content": [{"type": "toolCall", "name": "bash", "arguments": {"command": "pwd"}}]}


async def test_a_stored_session_runs_in_its_own_folder_and_is_refused_once_it_is_gone(
    project: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
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
        shown = json.dumps(results[0]["content"])
        assert str(elsewhere) in shown and str(project) not in shown

        refused = await client.post(f"/api/sessions/{ids[1]}/prompt", json={"message": "still there?"})
        assert refused.status_code == 409
        error = refused.json()["error"]
        assert error.startswith(f"session {ids[1]} ran in {gone}, which is gone")
        assert "\n" not in error
        assert not served.config.hub.is_open(ids[1])
