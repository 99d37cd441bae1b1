"""Fixtures of the serve tests: an isolated ``TETHER_HOME`` and project folder per test."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TETHER_DATABASE_URL", raising=False)
    folder = tmp_path / "project"
    folder.mkdir()
    return folder
