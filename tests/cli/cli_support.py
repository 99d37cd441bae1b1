"""Helpers for driving the real ``tether`` command in a subprocess with an isolated home."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@dataclass(frozen=True)
class CliEnv:
    home: Path
    """``TETHER_HOME``: config, sessions and history of this test only."""
    project: Path
    """The working directory the command runs in."""

    def env(self, **extra: str) -> dict[str, str]:
        # No API keys, scripts or session database from the developer's shell; bytecode caching
        # on, so each of the many subprocesses does not recompile tether (PYTHONDONTWRITEBYTECODE
        # would force it).
        dropped = ("TETHER_SCRIPTED", "PYTHONDONTWRITEBYTECODE", "TETHER_DATABASE_URL")
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k not in dropped}
        env.update({"TETHER_HOME": str(self.home), "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"})
        env.update(extra)
        return env

    def script(self, name: str, responses: Sequence[Mapping[str, Any]]) -> Path:
        """Write a scripted-model script (conformance response format)."""
        path = self.home / f"{name}.json"
        path.write_text(json.dumps({"responses": list(responses)}))
        return path

    def run(
        self,
        *args: str,
        script: Path | None = None,
        stdin: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 60,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        extra = dict(env or {})
        if script is not None:
            extra["TETHER_SCRIPTED"] = str(script)
        return subprocess.run(
            [sys.executable, "-m", "tether.cli", *args],
            cwd=cwd or self.project,
            env=self.env(**extra),
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    async def run_async(self, *args: str, timeout: float = 60) -> tuple[int, str, str]:
        """``run`` for a test whose event loop must keep serving (a loopback server in the same
        process): exit code, stdout and stderr."""
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tether.cli",
            *args,
            cwd=self.project,
            env=self.env(),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), timeout)
        return process.returncode or 0, out.decode(), err.decode()


def text_reply(*chunks: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "chunks": list(chunks)}]}


def tool_reply(name: str, arguments: Mapping[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    return {"content": [{"type": "toolCall", "id": call_id, "name": name, "arguments": dict(arguments)}]}


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def tool_results(stdout: str) -> list[dict[str, Any]]:
    """The tool-result messages of a ``--mode json`` run, in order."""
    return [
        e["message"]
        for e in json_lines(stdout)
        if e["type"] == "message_end" and e["message"]["role"] == "toolResult"
    ]


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (Linux's ``/proc``): a zombie, dead but not yet reaped, does not."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def tiny_tmpfs(
    where: Path, *, read_only_after: Callable[[Path], None] | None = None
) -> Generator[Path, None, None]:
    """A 1 MB tmpfs at ``where`` (root only; the test is skipped where mounting is refused).

    ``read_only_after`` fills it first, then the file system is remounted read-only."""
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.decode().strip()}")
    try:
        if read_only_after is not None:
            read_only_after(where)
            subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
