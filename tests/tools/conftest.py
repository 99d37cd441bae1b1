from __future__ import annotations

from pathlib import Path

import pytest

from tether.tools import Workspace


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The workspace directory (a subfolder, so tests can put files just outside it)."""
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def workspace(root: Path) -> Workspace:
    return Workspace(root)
