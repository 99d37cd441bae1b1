"""A protocol mode started with its standard output closed (``tether --mode rpc >&-``): one line
on stderr and exit 1, not a traceback (Python makes ``sys.stdout`` ``None`` then)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess


@pytest.mark.parametrize("mode", ["rpc", "json", "acp"])
def test_a_closed_stdout_is_one_line(tmp_path: Path, mode: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    env["TETHER_HOME"] = str(tmp_path / "home")
    args = ["--mode", mode, "--model", "scripted:none"] + (["hello"] if mode == "json" else [])
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli", *args],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: os.close(1),
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    expected = {
        "rpc": b"tether: standard output is closed: --mode rpc has nowhere to write\n",
        "json": b"tether: standard output is closed: --mode json has nowhere to write\n",
        "acp": b"tether: --mode acp talks over pipes (editors start it that way); its stdout is a "
        b"regular file or closed\n",
    }[mode]
    assert done.stderr == expected
