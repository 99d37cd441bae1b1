"""Fixtures of the serve tests: an isolated ``TETHER_HOME`` and project folder per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from home_support import isolated_project


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_project(tmp_path, monkeypatch)
