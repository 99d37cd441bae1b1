"""Other sessions' workspaces are out of a confined session's sight, with no setting.

The store knows where every session ran; ``start_session`` hides those folders from the
session's confined ``bash`` and refuses them to its file tools, except this workspace, the
folders above it and the ones inside it. Each attempt is repeated with ``--sandbox off`` so the
test cannot pass because the attempt was broken. Everything lives under the home folder: the
sandbox's private ``/tmp`` would hide a file there for the wrong reason.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.agent.validation import validate_tool_arguments
from tether.ai.paths import config_dir
from tether.errors import ToolError
from tether.session.agent_session import AgentSession
from tether.session.factory import SessionChoice, start_session
from tether.session.manager import SessionManager
from tether.session.options import SessionOptions
from tether.session.settings import load_settings
from tether.tools.sandbox import OTHER_WORKSPACES_MAX, other_workspaces, unavailable

SECRET = "the-other-sessions-secret-5d1e"

needs_sandbox = pytest.mark.skipif(
    unavailable() is not None and not os.environ.get("TETHER_REQUIRE_SANDBOX"),
    reason=f"no sandbox here: {unavailable()}",
)


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="tether-other-workspaces-", dir=Path.home()))
    monkeypatch.setenv("TETHER_HOME", str(path))
    for folder in ("mine", "mine/sub", "theirs"):
        (path / folder).mkdir()
    (path / "theirs" / "secret.txt").write_text(SECRET)
    (path / "mine" / "sub" / "notes.txt").write_text("mine")
    with SessionManager() as sessions:  # sessions that ran elsewhere, recorded in the store
        for folder in ("theirs", "mine/sub", "."):
            sessions.create(path / folder).close()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def session(home: Path, sandbox: str) -> AgentSession:
    script = home / "script.json"
    script.write_text("[]")
    options = SessionOptions(
        model=f"scripted:{script}",
        mcp=False,
        extensions=False,
        sandbox=sandbox,
        approval="yes",
        allow_outside=True,  # the workspace policy allows the path: only the sandbox refuses it
    )
    project = home / "mine"
    return start_session(
        options, cwd=project, settings=load_settings(config_dir(), project), ask=None, session=SessionChoice()
    )


async def run(core: AgentSession, name: str, arguments: dict[str, object]) -> tuple[bool, str]:
    tool = next(t for t in core.agent.tools if t.name == name)
    try:
        result = await tool.execute("c1", validate_tool_arguments(tool, name, arguments), None, None)
    except ToolError as failure:
        return False, str(failure)
    return True, "\n".join(block["text"] for block in result.content if block["type"] == "text")


@needs_sandbox
async def test_another_sessions_workspace_is_hidden_from_bash_and_refused_by_read(home: Path) -> None:
    secret = home / "theirs" / "secret.txt"
    confined = session(home, "workspace-write")
    try:
        ok, said = await run(confined, "bash", {"command": f"ls {home / 'theirs'}; cat {secret}"})
        assert not ok and SECRET not in said and "secret.txt: No such file" in said
        ok, said = await run(confined, "read", {"path": str(secret)})
        assert not ok and f"is hidden by the sandbox ({secret.parent} is another session's workspace)" in said
        # this workspace, a session's folder inside it, and one above it stay usable
        ok, said = await run(confined, "bash", {"command": "cat sub/notes.txt && echo made > new.txt"})
        assert ok and "mine" in said and (home / "mine" / "new.txt").exists()
        ok, said = await run(confined, "read", {"path": "sub/notes.txt"})
        assert ok and "mine" in said
    finally:
        await confined.close()
    unconfined = session(home, "off")
    try:
        ok, said = await run(unconfined, "bash", {"command": f"cat {secret}"})
        assert ok and SECRET in said
        ok, said = await run(unconfined, "read", {"path": str(secret)})
        assert ok and SECRET in said
    finally:
        await unconfined.close()


def test_what_is_hidden_keeps_the_workspace_its_parents_and_what_it_holds(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "home" / "work"
    folders = ["mine", "mine/inner", "a", "b", "gone-now"]
    for folder in folders[:-1]:
        (work / folder).mkdir(parents=True)
    cwds = [str(work / f) for f in folders] + [str(work), str(home), str(tmp_path), "/"]
    (work / "link").symlink_to(work / "a")
    cwds.append(str(work / "link"))  # the same folder as "a", seen once
    assert other_workspaces(cwds, [work / "mine"], home) == (work / "a", work / "b")


def test_sessions_started_in_the_systems_folders_hide_none_of_them(tmp_path: Path) -> None:
    """A session once run in /usr, /etc or the interpreter's prefix (or a folder inside, or one
    holding them) must not take them from every confined command: bash itself lives there."""
    other = tmp_path / "other"
    other.mkdir()
    cwds = ["/usr", "/etc", "/usr/lib", "/bin", sys.base_prefix, sys.prefix, str(other)]
    assert other_workspaces(cwds, [tmp_path / "mine"], tmp_path / "home") == (other,)


def test_at_most_the_newest_workspaces_are_hidden(tmp_path: Path) -> None:
    many = [tmp_path / f"w{i}" for i in range(OTHER_WORKSPACES_MAX + 5)]
    for folder in many:
        folder.mkdir()
    hidden = other_workspaces([str(f) for f in many], [tmp_path / "mine"], tmp_path / "home")
    assert hidden == tuple(many[:OTHER_WORKSPACES_MAX])
