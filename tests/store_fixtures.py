"""Fixtures of the store and session tests (``tests/store``, ``tests/session``: each conftest imports
them): every test gets its own TETHER_HOME and its own empty store.

``store_location`` is parametrised by backend, and ``manager`` opens it: the operation tests go
through ``SessionManager`` only, so each of them runs on SQLite (a file per test) and on
PostgreSQL (a schema per test, in one private server for the whole run).

The PostgreSQL server is real: the ``postgres`` fixture of ``tests/conftest.py``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from tether.session import SessionManager
from tether.testing.postgres import PostgresServer

BACKENDS = ("sqlite", "postgres")
_schemas = itertools.count(1)


@pytest.fixture(autouse=True)
def tether_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TETHER_SESSIONS_DB", raising=False)
    monkeypatch.delenv("TETHER_DATABASE_URL", raising=False)
    return tmp_path / "home"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "sessions.db"


@pytest.fixture
def postgres_url(postgres: PostgresServer) -> Iterator[str]:
    """A URL whose ``search_path`` is a new, empty schema: a store of its own for one test."""
    schema = f"test_{next(_schemas)}"
    with psycopg.connect(postgres.url(), autocommit=True) as db:
        db.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    yield postgres.url(options=f"-csearch_path%3D{schema}")
    with psycopg.connect(postgres.url(), autocommit=True) as db:
        db.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture(params=BACKENDS)
def store_location(request: pytest.FixtureRequest, db_path: Path) -> str:
    """Where a test's store lives: a SQLite file, or a PostgreSQL URL (``SessionManager.at``)."""
    if request.param == "sqlite":
        return str(db_path)
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def manager(store_location: str) -> Iterator[SessionManager]:
    with SessionManager.at(store_location) as m:
        yield m
