"""``tether --mode acp`` refuses, with one line and no traceback, what cannot work over ACP."""

from __future__ import annotations

import subprocess
import sys
from typing import IO

import pytest
from acp_support import AcpEnv

pytestmark = pytest.mark.subprocess


def run(acp_env: AcpEnv, *args: str, stdout: int | IO[bytes] = subprocess.PIPE) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli", "--mode", "acp", *args],
        cwd=acp_env.project,
        env=acp_env.env(),
        input=b"",
        stdout=stdout,
        stderr=subprocess.PIPE,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stderr.decode()


def test_a_prompt_or_a_session_flag_is_refused(acp_env: AcpEnv) -> None:
    code, err = run(acp_env, "hello")
    assert code == 2 and "takes no prompt" in err and "Traceback" not in err
    code, err = run(acp_env, "--continue")
    assert code == 2 and "the editor picks sessions" in err and "Traceback" not in err


def test_stdout_redirected_to_a_file_is_refused(acp_env: AcpEnv) -> None:
    out = acp_env.home / "out.jsonl"
    with out.open("wb") as sink:
        code, err = run(acp_env, stdout=sink)
    assert code == 1 and "stdout is a regular file" in err and "Traceback" not in err
    assert out.read_text() == ""
