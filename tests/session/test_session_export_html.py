"""``/export FILE.html``: shell runs and file mentions as the user saw them, and deleting sessions
from the core (what ``/resume``'s delete calls)."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tether.session.factory import SessionChoice, create_agent_session
from tether.store.store import SessionNotFoundError


class Blocks(HTMLParser):
    """The text of each element with a class, in document order: ``[(class, text)]``."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[tuple[str, str]] = []
        self._open: list[int | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        css = dict(attrs).get("class")
        self._open.append(len(self.blocks) if css else None)
        if css:
            self.blocks.append((css, ""))

    def handle_endtag(self, tag: str) -> None:
        if self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        for index in self._open:
            if index is not None:
                css, text = self.blocks[index]
                self.blocks[index] = (css, text + data)


def blocks(page: str) -> list[tuple[str, str]]:
    parser = Blocks()
    parser.feed(page)
    return parser.blocks


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [{"content": [{"type": "text", "chunks": ["read it"]}]}]}))
    monkeypatch.setenv("TETHER_SCRIPTED", str(script))
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("line <one>\nline two\n")
    return project


async def test_shell_runs_and_mentions_render_as_typed_and_attached(project: Path) -> None:
    core = create_agent_session(cwd=project, session=SessionChoice())
    try:
        await core.submit("!echo bang-cmd")
        await core.submit("!!printf quiet")
        await core.submit("what is in @notes.txt?")
        page_path = core.export(project / "page.html")
        other = core.sessions.create(project) if core.sessions is not None else None
        assert other is not None
        other.close()
        with pytest.raises(ValueError, match="in use"):
            core.delete_session(str(core.session_id))
        core.delete_session(other.id)
        assert [r.id for r in core.list_sessions()] == [core.session_id]
        with pytest.raises(SessionNotFoundError):
            core.delete_session(other.id)
    finally:
        await core.close()
    page = page_path.read_text()
    assert "bang-cmdbang-cmd" not in page  # the old page ran the command into its output
    found = blocks(page)
    assert ("tool", "!echo bang-cmd") in found and ("output", "bang-cmd\n") in found
    assert ("tool", "!!printf quiet") in found and ("output", "quiet") in found
    assert any(css == "role" and "not sent to the model" in text for css, text in found)
    assert ("tool", "@notes.txt") in found and ("output", "line <one>\nline two\n") in found
    user = [text for css, text in found if css == "msg user"]
    assert user and "what is in @notes.txt?" in user[0]
