"""A SQLite session database moved (renamed) while a store has it open: ``check_present``
checkpoints it, since SQLite writes on into the ``-wal`` under the old name. Real files."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from tether.store import SQLiteStore
from tether.store.store import SessionDatabaseError


def _sessions(path: Path) -> list[str]:
    db = sqlite3.connect(path)  # its own name has no -wal: the file alone
    try:
        return [row[0] for row in db.execute("SELECT id FROM sessions ORDER BY id")]
    finally:
        db.close()


def test_a_moved_file_checkpointed_in_part_is_an_error_until_it_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "sessions.db"
    store = SQLiteStore(path)
    try:
        store.create_session("A", "/p", 1, version=1)
        reader = sqlite3.connect(path, isolation_level=None)
        reader.execute("BEGIN")
        assert reader.execute("SELECT count(*) FROM sessions").fetchone() == (1,)  # holds A's state
        store.create_session("B", "/p", 2, version=1)
        moved = tmp_path / "moved.db"
        os.rename(path, moved)
        with pytest.raises(SessionDatabaseError, match=f"^{path}: the session database was moved.*only"):
            store.check_present()  # B's pages are past what the reader holds: not copied
        reader.execute("COMMIT")
        reader.close()
        listed: list[str] = []
        listdir = os.listdir

        def listing(folder: str) -> list[str]:
            listed.append(folder)
            return listdir(folder)

        monkeypatch.setattr(os, "listdir", listing)
        store.check_present()  # whole now
        assert listed == []  # the descriptor found by the first check, not /proc/self/fd again
        assert _sessions(moved) == ["A", "B"]
    finally:
        store.close()
