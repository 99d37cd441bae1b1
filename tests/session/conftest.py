"""Fixtures for the session tests: every test gets its own TETHER_HOME and database file.

``manager`` is parametrised by backend: the operation tests go through ``SessionManager`` only,
so a new ``SessionStore`` (PostgreSQL) joins them by adding one entry to ``STORES``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tether.session import SessionManager, SessionStore, SQLiteStore

STORES: dict[str, Callable[[Path], SessionStore]] = {"sqlite": SQLiteStore}


@pytest.fixture(autouse=True)
def tether_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TETHER_SESSIONS_DB", raising=False)
    return tmp_path / "home"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "sessions.db"


@pytest.fixture(params=sorted(STORES))
def manager(request: pytest.FixtureRequest, db_path: Path) -> Iterator[SessionManager]:
    with SessionManager(STORES[request.param](db_path)) as m:
        yield m
