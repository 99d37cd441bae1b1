"""Fixtures of the CLI tests: an isolated ``TETHER_HOME`` and project folder per test."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import CliEnv


@pytest.fixture
def cli(tmp_path: Path) -> CliEnv:
    home = tmp_path / "home"
    project = tmp_path / "project"
    home.mkdir()
    project.mkdir()
    return CliEnv(home, project)
