"""``tether.testing.postgres.find_bin_dir``: which installed PostgreSQL the tests start."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tether.testing import postgres


def test_the_newest_debian_version_is_taken_and_an_odd_folder_name_is_no_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder named ``16²`` under /usr/lib/postgresql passed ``isdigit()`` and failed in
    ``int()``: finding the server raised ValueError instead of taking version 16."""
    for name in ("9.6", "16", "16\u00b2"):
        (tmp_path / name / "bin").mkdir(parents=True)
        (tmp_path / name / "bin" / "initdb").touch()
    monkeypatch.delenv(postgres.BIN_ENV, raising=False)

    def nowhere(_name: str) -> None:
        return None

    monkeypatch.setattr(shutil, "which", nowhere)
    monkeypatch.setattr(postgres, "DEBIAN_BINS", tmp_path)
    assert postgres.find_bin_dir() == tmp_path / "16" / "bin"
