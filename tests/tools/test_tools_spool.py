"""Issue 14, class 6 (disk): the full-output spool of ``bash`` is capped, removable, and a full
disk is one clear line in the result, never a flood of tracebacks or a false "saved to"."""

from __future__ import annotations

import contextlib
import gc
import logging
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Generator
from pathlib import Path

import pytest
from tools_support import call, details_of, text_of

from tether.tools import Workspace, create_bash_tool, process as process_module
from tether.tools.spool import Spools

pytestmark = pytest.mark.subprocess


async def test_spool_is_capped_and_removed_with_the_session(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(process_module, "MAX_SPOOL_BYTES", 1_000_000)
    result = await call(create_bash_tool(workspace), command="yes 0123456789 2>/dev/null | head -c 5000000")
    path = Path(details_of(result)["fullOutputPath"])
    assert path.stat().st_size == 1_000_000  # 5 MB printed, the cap kept
    assert details_of(result)["totalBytes"] == 5_000_000
    workspace.spools.remove()
    assert not path.exists() and not path.parent.exists()


@contextlib.contextmanager
def tiny_tmpfs(tmp_path: Path) -> Generator[Path, None, None]:
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
        assert "saved to" not in text and "fullOutputPath" not in details_of(result)
        notes = [line for line in text.splitlines() if "could not be saved" in line]
        assert len(notes) == 1 and "(4000000 bytes) could not be saved: No space left on device" in notes[0]
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert list(full.rglob("*.log")) == []  # the partial file was deleted
        workspace.spools.remove()


def test_a_library_users_tools_leave_no_spools_when_the_process_ends(tmp_path: Path) -> None:
    """``coding_tools(cwd)`` makes a workspace no session closes: its spools go at exit."""
    spool_home = tmp_path / "tmp"
    spool_home.mkdir()
    script = (
        "import asyncio, tempfile\n"
        f"tempfile.tempdir = {str(spool_home)!r}\n"
        "from tether.tools import coding_tools\n"
        "bash = next(t for t in coding_tools('.') if t.name == 'bash')\n"
        "result = asyncio.run(bash.execute('c1', {'command': 'seq 1 100000'}, None, None))\n"
        "print(result.details['fullOutputPath'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).is_relative_to(spool_home)  # it did spool
    assert not list(spool_home.iterdir())


def test_spools_dropped_without_remove_are_removed_when_collected(tmp_path: Path) -> None:
    spools = Spools()
    path = spools.new_file()
    assert path.parent.is_dir()
    del spools
    gc.collect()
    assert not path.parent.exists()
