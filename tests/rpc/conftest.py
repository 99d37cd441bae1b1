"""Fixtures of the RPC tests: an isolated ``TETHER_HOME`` and project folder per test."""

from __future__ import annotations

from pathlib import Path

import pytest
from rpc_support import RpcEnv


@pytest.fixture
def rpc(tmp_path: Path) -> RpcEnv:
    home = tmp_path / "home"
    project = tmp_path / "project"
    home.mkdir()
    project.mkdir()
    return RpcEnv(home, project)
