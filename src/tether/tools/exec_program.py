"""Running a program for an extension (pi's ``pi.exec``): its stdout and stderr apart and whole.

A tool's command output is for a model: interleaved, ANSI-stripped and cut to a budget
(``tether.tools.process.run_process``). A program an extension runs (``git status``, a linter)
is parsed by code, so here stdout and stderr stay apart and raw, up to ``max_buffer`` bytes in
all (pi's ``maxBuffer``); past it the program is stopped and what came is kept (``truncated``).

Everything else is the tools' own rule, so an extension cannot reach what the model cannot: no
shell, the session's sandbox (``tether.tools.sandbox``: its file system view, network rule and
process cap), an environment without credentials (``tool_environment``), the process group led
by the parent-death supervisor (nothing outlives tether), and a timeout or an abort that stops
the whole group (SIGTERM, then SIGKILL after a short grace). As in pi, ``code`` is the exit
status, or 128 + the signal's number for a program ended by one (143 for SIGTERM, 137 for
SIGKILL), and ``killed`` says tether stopped it (timeout, abort or ``max_buffer``).
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from tether.ai.abort import AbortSignal
from tether.tools.process import await_group, spawn_supervised, tool_environment
from tether.tools.sandbox import Confined, Sandbox

DEFAULT_MAX_BUFFER = 256 * 1024 * 1024
"""Bytes of stdout and stderr together kept before the program is stopped (pi's default)."""


@dataclass(frozen=True, slots=True)
class ExecResult:
    """What a program did (pi's ``ExecResult``)."""

    stdout: str
    stderr: str
    code: int
    """The exit status; 128 + the signal's number when a signal ended it."""
    killed: bool
    """tether stopped it: the timeout ran out, the signal aborted, or ``max_buffer`` was reached."""
    truncated: bool
    """Output past ``max_buffer`` was dropped (the program was stopped there)."""


async def exec_program(
    command: str,
    args: Sequence[str] = (),
    *,
    cwd: Path,
    timeout: float | None = None,
    signal: AbortSignal | None = None,
    max_buffer: int = DEFAULT_MAX_BUFFER,
    sandbox: Sandbox | None = None,
    env_passthrough: Collection[str] = (),
) -> ExecResult:
    """Run ``command`` with ``args`` (no shell) from ``cwd``, stdin closed; see the module
    docstring. A program that cannot start is exit status 127 with the reason on stderr."""
    if timeout is not None and timeout <= 0:
        raise ValueError(f"exec's timeout is a number of seconds above 0, got {timeout}")
    argv = [command, *args]
    async with contextlib.AsyncExitStack() as stack:
        confined = None
        if sandbox is not None:
            proxy = None
            if sandbox.policy.proxied:
                from tether.tools.sandbox_proxy import host_proxy

                proxy = await stack.enter_async_context(host_proxy(sandbox.policy.allow_hosts))
            confined = stack.enter_context(sandbox.confine(argv, cwd, proxy))
            argv = confined.argv
        return await _run(argv, confined, cwd, timeout, signal, max_buffer, tool_environment(env_passthrough))


async def _run(
    argv: Sequence[str],
    confined: Confined | None,
    cwd: Path,
    timeout: float | None,
    signal: AbortSignal | None,
    max_buffer: int,
    env: dict[str, str],
) -> ExecResult:
    loop = asyncio.get_running_loop()
    protocol = _Collect(loop, max_buffer)
    transport = await spawn_supervised(loop, protocol, argv, confined, cwd, env, stderr=subprocess.PIPE)
    remove = signal.add_listener(lambda _reason: protocol.stop()) if signal is not None else None
    if signal is not None and signal.aborted:
        protocol.stop()
    try:
        ended = await await_group(transport, protocol.exited, protocol.eof, protocol.stopped, timeout)
    finally:
        if remove is not None:
            remove()
    killed = ended != "exited"
    status = transport.get_returncode()
    code = 128 - status if status is not None and status < 0 else (status if status is not None else 1)
    return ExecResult(protocol.text(1), protocol.text(2), code, killed, protocol.truncated)


class _Collect(asyncio.SubprocessProtocol):
    """Keeps stdout and stderr apart, up to ``limit`` bytes in all; past it, ``stopped``."""

    def __init__(self, loop: asyncio.AbstractEventLoop, limit: int) -> None:
        self._limit = limit
        self._kept = 0
        self._chunks: dict[int, list[bytes]] = {1: [], 2: []}
        self._open_pipes = 2
        self.truncated = False
        self.exited: asyncio.Future[None] = loop.create_future()
        self.eof: asyncio.Future[None] = loop.create_future()
        self.stopped: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        raw = data if isinstance(data, bytes) else data.encode()
        room = self._limit - self._kept
        if len(raw) > room:
            raw, self.truncated = raw[: max(room, 0)], True
            self.stop()
        self._kept += len(raw)
        self._chunks[fd].append(raw)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._open_pipes -= 1
        if self._open_pipes <= 0 and not self.eof.done():
            self.eof.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def stop(self) -> None:
        if not self.stopped.done():
            self.stopped.set_result(None)

    def text(self, fd: int) -> str:
        return b"".join(self._chunks[fd]).decode("utf-8", "replace")
