"""Fixtures every test folder may use.

``postgres`` is one real PostgreSQL server for the whole run: ``initdb`` into a temporary folder,
``postgres`` on 127.0.0.1 (``tether.testing.postgres``); tests give themselves a schema or a
database of their own in it. A developer without the server programs sees those tests skipped
with what to install; under ``make test`` (``TETHER_REQUIRE_POSTGRES=1``) that is a failure, so
CI cannot go green by skipping them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

import pytest

from postgres_support import postgres_bin_dir
from tether.ai.models import BASE_URL_ENV
from tether.testing.postgres import PostgresServer, postgres_server


@pytest.fixture(autouse=True)
def _no_base_url_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's ``OPENAI_BASE_URL`` (or another provider's) moves no test's provider."""
    for name, _ in BASE_URL_ENV.values():
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _no_saved_keys(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A developer's keys saved with ``/login`` (``auth.json`` in the data folder, used before
    the environment) reach no test: without ``TETHER_HOME``, the data folder is a temporary one."""
    if not os.environ.get("TETHER_HOME"):
        monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.getbasetemp() / "xdg-data"))


WORKER_THREADS = ("tether-claims", "tether-heartbeat", "tether-watch", "tether-stop")
"""A durable worker's threads: a test that launches one stops it whole (``shutdown``)."""


@pytest.fixture(autouse=True)
def _no_worker_left_running() -> Iterator[None]:
    """A durable worker's claiming thread left running in the test process keeps moving runs onto
    a queue that no DBOS dequeues (its DBOS was destroyed): a later test's run then waits for a
    real worker to take that one for dead. Fail the test that left it, not the one it stalls."""
    before = set(threading.enumerate())
    yield
    left = [t.name for t in threading.enumerate() if t not in before and t.name in WORKER_THREADS]
    assert not left, f"the test left a durable worker's threads running: {left} (call shutdown)"


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    with postgres_server(postgres_bin_dir()) as server:
        yield server
