"""The placeholders a killed tether left, wherever they are (``tether.tools.sandbox_ledger``).

A tether killed during a command (``kill -9``, the OOM killer) left its placeholders: an empty
read-only ``.git``, ``.tether``, ``.mcp.json`` in a project outside the home folder stayed there
for good unless a command ran in that project again. Real processes, killed for real.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.tools import sandbox_protect
from tether.tools.sandbox import unavailable
from tether.tools.sandbox_ledger import FOLDER, Ledger
from tether.tools.sandbox_protect import PROTECTED_NAMES, Protection

pytestmark = pytest.mark.skipif(
    unavailable() is not None and not os.environ.get("TETHER_REQUIRE_SANDBOX"),
    reason=f"no sandbox here: {unavailable()}",
)

HOLD = """
import sys, time
from pathlib import Path
from tether.tools.sandbox_protect import Protection
held = Protection.take([Path(sys.argv[1])])
print("held", flush=True)
time.sleep(120)
"""
"""A tether in the middle of a command: its placeholders held."""

LATER = """
import sys
from pathlib import Path
from tether.tools import Workspace
from tether.tools.sandbox import SandboxPolicy
folder = Path(sys.argv[1])
sandbox = Workspace(folder, sandbox=SandboxPolicy(mode="read-only")).confinement()
assert sandbox is not None
with sandbox.confine(["true"], folder):
    pass
"""
"""A later tether's first confined command, in a workspace of its own."""


def settled() -> None:
    for thread in threading.enumerate():
        if thread.name == "tether-placeholders":
            thread.join(10)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "TETHER_HOME": str(tmp_path / "tether"), "HOME": str(tmp_path / "home")}


@pytest.fixture
def holders(env: dict[str, str]) -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        process.kill()
        process.wait(10)
        assert process.stdout is not None
        process.stdout.close()


def hold(project: Path, env: dict[str, str], holders: list[subprocess.Popen[str]]) -> subprocess.Popen[str]:
    project.mkdir(parents=True)
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(project)], env=env, stdout=subprocess.PIPE, text=True
    )
    holders.append(process)
    assert process.stdout is not None and process.stdout.readline() == "held\n"
    return process


def test_a_killed_tethers_placeholders_are_removed_by_a_later_tethers_first_command(
    tmp_path: Path, env: dict[str, str], holders: list[subprocess.Popen[str]]
) -> None:
    killed, living = tmp_path / "srv" / "killed", tmp_path / "srv" / "living"
    victim = hold(killed, env, holders)
    hold(living, env, holders)
    victim.send_signal(signal.SIGKILL)
    victim.wait(10)
    assert sorted(os.listdir(killed)) == sorted(PROTECTED_NAMES)  # left behind
    lists = tmp_path / "tether" / "data" / FOLDER
    assert len(os.listdir(lists)) == 2
    later = tmp_path / "later"
    later.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", LATER, str(later)], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert os.listdir(killed) == []
    # the living tether's list is skipped (its lock not waited for), and its placeholders kept
    assert sorted(os.listdir(living)) == sorted(PROTECTED_NAMES) and len(os.listdir(lists)) == 1


def test_the_ledger_names_what_is_held_now_once_each(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker's list grew with every command for its whole life: it names what the process
    holds now, each placeholder once whatever the number of its holders, and is empty when the
    process holds nothing."""
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "tether"))
    monkeypatch.setattr(sandbox_protect, "LEDGER", Ledger())
    first, second = Protection.take([root]), Protection.take([root])
    [listed] = (tmp_path / "tether" / "data" / FOLDER).iterdir()
    names = sorted(os.fsencode(root / name) for name in PROTECTED_NAMES)
    assert sorted(listed.read_bytes().split(b"\0")[:-1]) == names
    first.release()
    settled()
    assert sorted(listed.read_bytes().split(b"\0")[:-1]) == names  # the second holds them still
    second.release()
    settled()
    assert listed.read_bytes() == b"" and os.listdir(root) == []
    for _ in range(3):
        Protection.take([root]).release()
        settled()
    assert listed.read_bytes() == b"" and list(listed.parent.iterdir()) == [listed]
