"""Issue 14, class 6 (disk): the full-output spool of ``bash`` is capped, removable, and a full
disk is one clear line in the result, never a flood of tracebacks or a false "saved to"."""

from __future__ import annotations

import contextlib
import logging
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tools_support import call, text_of

from tether.tools import Workspace, create_bash_tool, process as process_module

pytestmark = pytest.mark.subprocess


async def test_spool_is_capped_and_removed_with_the_session(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(process_module, "MAX_SPOOL_BYTES", 1_000_000)
    result = await call(create_bash_tool(workspace), command="yes 0123456789 2>/dev/null | head -c 5000000")
    path = Path(result.details["fullOutputPath"])
    assert path.stat().st_size == 1_000_000  # 5 MB printed, the cap kept
    assert result.details["totalBytes"] == 5_000_000
    workspace.spools.remove()
    assert not path.exists() and not path.parent.exists()


@contextlib.contextmanager
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / f"full-{uuid.uuid4().hex[:6]}"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


async def test_full_disk_is_one_line_and_nothing_claims_to_be_saved(
    workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with tiny_tmpfs(tmp_path) as full:
        monkeypatch.setattr(tempfile, "tempdir", str(full))
        caplog.set_level(logging.DEBUG)
        result = await call(
            create_bash_tool(workspace), command="yes 0123456789 2>/dev/null | head -c 4000000"
        )
        text = text_of(result)
        assert "saved to" not in text and "fullOutputPath" not in result.details
        notes = [line for line in text.splitlines() if "could not be saved" in line]
        assert len(notes) == 1 and "(4000000 bytes) could not be saved: No space left on device" in notes[0]
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert list(full.rglob("*.log")) == []  # the partial file was deleted
        workspace.spools.remove()
