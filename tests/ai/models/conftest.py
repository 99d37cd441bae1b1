"""Every catalog test runs with its own TETHER_HOME and a fresh shared registry."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.ai import models


@pytest.fixture(autouse=True)
def tether_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "home"
    monkeypatch.setenv("TETHER_HOME", str(home))
    monkeypatch.setattr(models, "_registry", None)
    yield home


@pytest.fixture
def config_dir(tether_home: Path) -> Path:
    path = tether_home / "config"
    path.mkdir(parents=True)
    return path
