"""Starting a real session with extension files, as ``-e`` loads them, for the extension session
tests (``test_session_extension_*``): one place that says how those sessions are made, so each
test shows only what its extensions do."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.session.agent_session import AgentSession
from tether.session.factory import SessionChoice, start_session
from tether.session.options import SessionOptions
from tether.session.settings import Settings


def extension_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A project (a git root) and a home of its own: ``TETHER_HOME`` and ``HOME`` point below
    ``tmp_path``, so no user file is read."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # a repository, as git tells one
    (tmp_path / "home" / "config").mkdir(parents=True)
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    return {"project": project, "tmp": tmp_path}


def start_with_extensions(
    cwd: Path,
    *paths: Path,
    settings: Settings | None = None,
    persist: bool = True,
    flags: tuple[str, ...] = (),
) -> AgentSession:
    """A session in ``cwd`` with the extension files ``paths`` and the extension flags ``flags``
    (``--flag``'s words), started by the front ends' own resolver with no one to ask;
    ``persist=False`` stores nothing (``--no-session``)."""
    return start_session(
        SessionOptions(extension_paths=paths, extension_flags=flags),
        cwd=cwd,
        settings=settings if settings is not None else Settings(),
        ask=None,
        session=SessionChoice(persist=persist),
    )
