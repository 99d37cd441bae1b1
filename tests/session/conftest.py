"""Fixtures for the session tests: every test gets its own TETHER_HOME and database file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.session import SessionManager


@pytest.fixture(autouse=True)
def tether_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TETHER_SESSIONS_DB", raising=False)
    return tmp_path / "home"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "sessions.db"


@pytest.fixture
def manager(db_path: Path) -> Iterator[SessionManager]:
    with SessionManager.at(db_path) as m:
        yield m
