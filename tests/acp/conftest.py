"""Fixtures of the ACP tests: an isolated ``TETHER_HOME`` and project folder per test."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp_support import AcpEnv


@pytest.fixture
def acp_env(tmp_path: Path) -> AcpEnv:
    home = tmp_path / "home"
    project = tmp_path / "project"
    home.mkdir()
    project.mkdir()
    return AcpEnv(home, project.resolve())
