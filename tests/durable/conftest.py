from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.testing.postgres import CRASH_SAFE_SETTINGS, PostgresServer, postgres_server

# The workload module is imported by name, here and by worker processes (`--setup workload:setup`).
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def server(postgres: PostgresServer) -> Iterator[PostgresServer]:
    """A PostgreSQL server of the test's own, to crash, freeze or make read-only (the shared
    one's binaries)."""
    with postgres_server(postgres.bin_dir, CRASH_SAFE_SETTINGS) as own:
        yield own
