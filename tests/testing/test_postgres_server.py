"""``tether.testing.postgres``: a test server does not outlive the process that started it, even
when that process is killed outright (``kill -9`` of a test run), nor leave its folder behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from postgres_support import postgres_bin_dir

pytestmark = pytest.mark.subprocess

OWNER = """
import sys, time
from pathlib import Path
from tether.testing.postgres import postgres_server
with postgres_server(Path(sys.argv[1])) as server:
    print(server.process.pid, server.folder, flush=True)
    time.sleep(600)
"""


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie no one reaps, as under a container's init, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_the_server_stops_when_its_owner_is_killed() -> None:
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(postgres_bin_dir())], stdout=subprocess.PIPE, text=True
    )
    assert owner.stdout is not None
    with owner.stdout:
        line = owner.stdout.readline()
    pid, folder = int(line.split()[0]), Path(line.split()[1])
    try:
        assert _running(pid)
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        deadline = time.monotonic() + 30  # bounds the test, not a figure: it takes well under 1 s
        while (_running(pid) or folder.exists()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _running(pid), "the server outlived its killed owner"
        assert not folder.exists(), "the server's folder outlived its killed owner"
    finally:
        if _running(pid):
            os.kill(pid, signal.SIGQUIT)
