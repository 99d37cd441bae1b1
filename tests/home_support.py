"""The in-process tests' isolation: a ``TETHER_HOME`` of the test's own, none of the developer's
scripted model or session database, and an empty project folder to work in.

The subprocess tests get the same from their environments (``RpcEnv``, ``CliEnv``, ``AcpEnv``).
"""

from __future__ import annotations

from pathlib import Path

import pytest


def isolated_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point ``TETHER_HOME`` at ``tmp_path/home``, drop ``TETHER_SCRIPTED`` and
    ``TETHER_DATABASE_URL`` from the environment, and return the new folder ``tmp_path/project``."""
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TETHER_SCRIPTED", raising=False)
    monkeypatch.delenv("TETHER_DATABASE_URL", raising=False)
    folder = tmp_path / "project"
    folder.mkdir()
    return folder
