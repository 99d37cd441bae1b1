"""Running a command for the model or the user: bounded output, timeout, abort, no orphans.

The command runs in its own session (``start_new_session``), so it leads a fresh process group.
Timeout and abort signal that whole group, not just the shell: ``bash -c 'sleep 100 | cat'`` must
not leave a ``sleep`` behind. The group gets SIGTERM first and SIGKILL after a short grace.

A command that starts a background job holding our pipe (``server &``) would keep the read side
open forever, so once the main process has exited the output is drained for a moment only.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal as signals
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from tether.ai.abort import AbortSignal
from tether.tools.truncate import MAX_BYTES, MAX_LINES, OutputBuffer

KILL_GRACE = 0.5
"""Seconds between SIGTERM and SIGKILL of the process group."""
DRAIN_AFTER_EXIT = 0.2
"""Seconds to keep reading after the main process exited (background jobs may hold the pipe)."""

_QUIET_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "TERM": "dumb", "NO_COLOR": "1"}
"""Keep interactive pagers and colours out of captured output."""


@dataclass(frozen=True, slots=True)
class ProcessResult:
    output: str
    """Combined stdout and stderr, ANSI-stripped, truncated with a note if too long."""
    exit_code: int | None
    """``None`` when the command was killed (timeout or abort)."""
    truncated: bool
    timed_out: bool
    cancelled: bool
    total_bytes: int
    full_output_path: Path | None = None
    """When the output was truncated and ``keep_full_output`` was asked: a temp file with all of it."""


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout: float | None = None,
    signal: AbortSignal | None = None,
    on_output: Callable[[str], None] | None = None,
    env: Mapping[str, str] | None = None,
    max_bytes: int = MAX_BYTES,
    max_lines: int = MAX_LINES,
    keep_full_output: bool = False,
) -> ProcessResult:
    """Run ``argv`` with stdin closed; stdout and stderr interleaved as the terminal would show.

    With ``keep_full_output``, output beyond ``max_bytes`` is also written, whole, to a temp file
    (``full_output_path``) that the model can search; memory stays bounded either way.
    """
    buffer = OutputBuffer(max_bytes, max_lines)
    spill = _Spill(max_bytes) if keep_full_output else None
    if signal is not None and signal.aborted:
        return ProcessResult("", None, False, False, True, 0)
    loop = asyncio.get_running_loop()
    protocol = _Protocol(loop, buffer, on_output, spill)
    transport, _ = await loop.subprocess_exec(
        lambda: protocol,
        *argv,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, **_QUIET_ENV, **(env or {})},
    )
    stop: asyncio.Future[None] = loop.create_future()

    def on_abort(_reason: object) -> None:
        if not stop.done():
            stop.set_result(None)

    remove = signal.add_listener(on_abort) if signal is not None else None
    timed_out = cancelled = False
    try:
        done, _ = await asyncio.wait(
            {protocol.exited, stop}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if protocol.exited not in done:
            cancelled = stop in done
            timed_out = not cancelled
            await _kill_group(transport.get_pid(), protocol.exited)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(protocol.eof), DRAIN_AFTER_EXIT)
    finally:
        if remove is not None:
            remove()
        if not protocol.exited.done():  # our caller was cancelled: leave nothing running
            await _kill_group(transport.get_pid(), protocol.exited)
        transport.close()
        if spill is not None:
            spill.close(keep=buffer.truncated)
    tail = buffer.finish()
    if on_output is not None and tail:
        on_output(tail)
    killed = timed_out or cancelled
    return ProcessResult(
        output=buffer.text(),
        exit_code=None if killed else transport.get_returncode(),
        truncated=buffer.truncated,
        timed_out=timed_out,
        cancelled=cancelled,
        total_bytes=buffer.total_bytes,
        full_output_path=spill.path if spill is not None and buffer.truncated else None,
    )


class _Protocol(asyncio.SubprocessProtocol):
    """Feeds output straight into the buffer and reports exit and end-of-output separately.

    Exit and end-of-output are distinct events on purpose: ``Process.wait()`` only returns once
    every pipe is closed, which a background job can postpone forever.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        buffer: OutputBuffer,
        on_output: Callable[[str], None] | None,
        spill: _Spill | None,
    ) -> None:
        self._buffer = buffer
        self._on_output = on_output
        self._spill = spill
        self.exited: asyncio.Future[None] = loop.create_future()
        self.eof: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        raw = data if isinstance(data, bytes) else data.encode()
        if self._spill is not None:
            self._spill.write(raw)
        text = self._buffer.feed(raw)
        if self._on_output is not None and text:
            self._on_output(text)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if not self.eof.done():
            self.eof.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


class _Spill:
    """Keeps raw output in memory up to ``limit`` bytes, then moves it all to a temp file."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._early: list[bytes] = []
        self._size = 0
        self._file: BinaryIO | None = None
        self.path: Path | None = None

    def write(self, data: bytes) -> None:
        if self._file is not None:
            self._file.write(data)
            return
        self._early.append(data)
        self._size += len(data)
        if self._size > self._limit:
            self._open()

    def close(self, *, keep: bool) -> None:
        """Finish the file; ``keep`` also saves output that stayed in memory (cut by line count)."""
        if self._file is None and keep:
            self._open()
        if self._file is not None:
            self._file.close()

    def _open(self) -> None:
        fd, name = tempfile.mkstemp(prefix="tether-output-", suffix=".log")
        self._file = os.fdopen(fd, "wb")
        self.path = Path(name)
        self._file.write(b"".join(self._early))
        self._early = []


async def _kill_group(pgid: int, exited: asyncio.Future[None]) -> None:
    """SIGTERM the whole process group, then SIGKILL whatever is left of it after a grace period."""
    _signal_group(pgid, signals.SIGTERM)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(exited), KILL_GRACE)
    _signal_group(pgid, signals.SIGKILL)  # children may ignore SIGTERM or outlive the leader
    await exited


def _signal_group(pgid: int, sig: signals.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
