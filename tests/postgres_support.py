"""Where the PostgreSQL server programs are, for a test that starts a server (``tests/conftest.py``'s
shared ``postgres`` fixture, or a test's own server it means to kill).

Without them the test is skipped, saying what to install; under ``make test``
(``TETHER_REQUIRE_POSTGRES=1``) that is a failure instead, so CI cannot go green by skipping.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tether.testing.postgres import INSTALL_HINT, find_bin_dir


def postgres_bin_dir() -> Path:
    """The folder of ``initdb`` and ``postgres``; skips (or fails, when required) without it."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        if os.environ.get("TETHER_REQUIRE_POSTGRES"):
            pytest.fail(f"TETHER_REQUIRE_POSTGRES is set but the PostgreSQL tests {INSTALL_HINT}")
        pytest.skip(f"the PostgreSQL tests {INSTALL_HINT}")
    return bin_dir
