"""Issue 14 (class 10) on the session's lock file: on a full disk, starting a session failed while
writing its lock file, beside the database, and the error blamed stdout ("cannot write the
output: No space left on device"). It names the file and the full disk now, in every mode."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import CliEnv, text_reply, tiny_tmpfs

pytestmark = pytest.mark.subprocess


@pytest.mark.parametrize("mode", [("-p",), ("--mode", "json")])
def test_a_new_session_on_a_full_disk_names_the_store_not_stdout(
    cli: CliEnv, tmp_path: Path, mode: tuple[str, ...]
) -> None:
    """A first run whose reply does not fit fills the disk itself (its failed write leaves free
    pages inside the database, so the next session's row fits there and its lock file does not)."""
    script = cli.script("s", [text_reply(*["x" * 200_000] * 6), text_reply("hello")])
    with tiny_tmpfs(tmp_path / "full") as mount:
        db = mount / "sessions.db"
        first = cli.run(*mode, "hi", "--database", str(db), script=script)
        assert first.returncode == 1 and "is full" in first.stderr, first.stderr
        done = cli.run(*mode, "again", "--database", str(db), script=script)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "cannot write the output" not in done.stderr
    assert done.stderr.startswith(f"tether: {db}")  # the database, or its lock file beside it
    assert done.stderr.endswith(": the disk holding the session database is full; free some space\n")
