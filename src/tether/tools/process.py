"""Running a command for the model or the user: bounded output, timeout, abort, no orphans.

The command runs in its own session (``start_new_session``), so it leads a fresh process group.
Timeout and abort signal that whole group, not just the shell: ``bash -c 'sleep 100 | cat'`` must
not leave a ``sleep`` behind. The group gets SIGTERM first and SIGKILL after a short grace.

If tether itself dies (even by SIGKILL), nothing it started may live on. On Linux the group is
led by a tiny supervisor (``_SUPERVISOR``, a bare interpreter without site or tether imports) that
asks the kernel for a signal when its parent dies (``prctl(PR_SET_PDEATHSIG)``) and then kills
its whole group; a plain parent-death signal on the shell would miss the shell's own children.

Tool processes do not inherit credentials: ``tool_environment`` drops variables that look like
secrets (names with KEY, TOKEN, SECRET, PASSWORD, HEADERS, ..., or a value with a password in it, as a
database URL has, or a URL's user part, as a Sentry DSN's key) and any variable holding the same value, unless the user named it in
``shellEnvPassthrough``.

A command that starts a background job holding our pipe (``server &``) would keep the read side
open forever, so once the main process has exited the output is drained for a moment only.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal as signals
import subprocess
import sys
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from tether.ai.abort import AbortSignal
from tether.tools.sandbox import Confined, Sandbox
from tether.tools.spool import MAX_SPOOL_BYTES, Spools
from tether.tools.truncate import MAX_BYTES, MAX_LINES, OutputBuffer

KILL_GRACE = 0.5
"""Seconds between SIGTERM and SIGKILL of the process group."""
DRAIN_AFTER_EXIT = 0.2
"""Seconds to keep reading after the main process exited (background jobs may hold the pipe)."""

_QUIET_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "TERM": "dumb", "NO_COLOR": "1"}
"""Keep interactive pagers and colours out of captured output."""

_SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASS|CREDENTIAL|AUTH|HEADERS|(?<=_)(?:PAT|PWD)(?=_|$)", re.IGNORECASE
)
"""Names of variables that probably hold a credential (Codex's default excludes, and a few more:
``HEADERS`` for the ones that carry request headers, such as OpenTelemetry's
``OTEL_EXPORTER_OTLP_HEADERS=x-honeycomb-team=...``, which tether's own telemetry reads; ``PASS``
for ``DB_PASS`` and ``SMTP_PASS`` besides ``PASSWORD``; ``_PAT`` and ``_PWD`` for personal access
tokens and ``MYSQL_PWD``, never ``PATH``, ``PWD`` nor ``OLDPWD``)."""
_KEEP = frozenset({"SSH_AUTH_SOCK", "XAUTHORITY"})
"""Matches of ``_SECRET_NAME`` that are locations, not secrets, and that tools need."""

_SUPERVISOR = r"""
import ctypes, os, signal, sys
def kill_group(*_):
    os.killpg(0, signal.SIGKILL)
signal.signal(signal.SIGHUP, kill_group)
signal.signal(signal.SIGTERM, lambda *_: None)
ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGHUP))
if os.getppid() != int(sys.argv[1]):
    kill_group()
gate, nproc, argv = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
joined = b""
if gate >= 0:
    joined = os.read(gate, 1)
    os.close(gate)
    if not joined:
        kill_group()
if nproc > 0 and joined != b"1":
    import resource
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
pid = os.fork()
if pid == 0:
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(2, f"{argv[0]}: {exc.strerror}\n".encode())
    os._exit(127)
_, status = os.waitpid(pid, 0)
if os.WIFSIGNALED(status):
    if os.WTERMSIG(status) not in (signal.SIGKILL, signal.SIGSTOP):  # no handler to reset there
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
    os.kill(os.getpid(), os.WTERMSIG(status))
sys.exit(os.waitstatus_to_exitcode(status))
"""
"""Leads the command's process group: SIGHUP on its parent's death (PR_SET_PDEATHSIG = 1) kills
the group; our own SIGTERM of the group is left to the command; the command's exit status (or
death by a signal) is passed on unchanged. For a sandboxed command it also waits at a gate (a pipe)
until its parent has moved it into the command's ``pids`` cgroup (byte ``1``), and caps its user's
processes with ``RLIMIT_NPROC`` when that did not happen (``tether.tools.sandbox.Confined``)."""


def tool_environment(passthrough: Collection[str] = ()) -> dict[str, str]:
    """This process's environment minus credentials, for a process the model or user runs."""
    secrets = {
        value
        for name, value in os.environ.items()
        if name not in passthrough and name not in _KEEP and _is_secret(name, value) and len(value) >= 8
    }
    return {
        name: value
        for name, value in os.environ.items()
        if name in passthrough or name in _KEEP or (not _is_secret(name, value) and value not in secrets)
    }


def _is_secret(name: str, value: str) -> bool:
    return _SECRET_NAME.search(name) is not None or _carries_password(value)


def _carries_password(value: str) -> bool:
    """A value with a password in it whatever the variable is called: a URL with a user part
    (``DATABASE_URL=postgresql://app:pw@db/app``, a proxy's ``http://user:pw@proxy``, and a key
    alone, as Sentry's DSN ``https://KEY@o1.ingest.sentry.io/1`` carries it: a URL's user name
    is seldom worth more to a command than the risk of its being a key) or a libpq connection
    string (``host=db password=pw``). String tests, not a regular expression: this module loads
    on every start, and compiling one costs more than the check."""
    scheme, is_url, rest = value.partition("://")
    if is_url and scheme[:1].isalpha():
        for end in "/?#":
            rest = rest.partition(end)[0]  # the authority: an ``@`` in a path or query is no user
        if "@" in rest:
            return True
    return "password=" in value.replace(" ", "").lower()


def supervised(argv: Sequence[str], *, gate: int = -1, nproc: int = 0) -> list[str]:
    """``argv`` under the parent-death supervisor where the platform has one (Linux). With
    ``gate`` (a pipe's read end passed to the child), the supervisor starts ``argv`` only once a
    byte arrives there; with ``nproc``, it caps processes unless that byte was ``1``."""
    if not sys.platform.startswith("linux"):
        return list(argv)
    return [sys.executable, "-I", "-S", "-c", _SUPERVISOR, str(os.getpid()), str(gate), str(nproc), *argv]


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
    """When the output was truncated and ``spools`` were given: a temp file with all of it (up
    to ``MAX_SPOOL_BYTES``)."""
    spool_error: str | None = None
    """Why the full output could not be saved (a full disk), when it could not."""


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout: float | None = None,
    signal: AbortSignal | None = None,
    on_output: Callable[[str], None] | None = None,
    env: Mapping[str, str] | None = None,
    env_passthrough: Collection[str] = (),
    max_bytes: int = MAX_BYTES,
    max_lines: int = MAX_LINES,
    spools: Spools | None = None,
    sandbox: Sandbox | None = None,
) -> ProcessResult:
    """Run ``argv`` with stdin closed; stdout and stderr interleaved as the terminal would show.

    The environment is ``tool_environment(env_passthrough)`` plus ``env``. With ``spools``,
    output beyond ``max_bytes`` is also written to a file there (``full_output_path``) that the
    model can search; memory stays bounded either way. With ``sandbox``, the command runs confined
    (``tether.tools.sandbox``).
    """
    if sandbox is None:
        return await _run(
            argv, None, cwd, timeout, signal, on_output, env, env_passthrough, max_bytes, max_lines, spools
        )
    async with contextlib.AsyncExitStack() as stack:
        proxy = None
        if sandbox.policy.proxied:
            from tether.tools.sandbox_proxy import host_proxy

            proxy = await stack.enter_async_context(host_proxy(sandbox.policy.allow_hosts))
        confined = stack.enter_context(sandbox.confine(argv, cwd, proxy))
        return await _run(
            confined.argv,
            confined,
            cwd,
            timeout,
            signal,
            on_output,
            env,
            env_passthrough,
            max_bytes,
            max_lines,
            spools,
        )


async def spawn_supervised(
    loop: asyncio.AbstractEventLoop,
    protocol: asyncio.SubprocessProtocol,
    argv: Sequence[str],
    confined: Confined | None,
    cwd: Path,
    env: dict[str, str],
    *,
    stderr: int = subprocess.STDOUT,
) -> asyncio.SubprocessTransport:
    """Start ``argv`` under its supervisor; a confined one with a cgroup is held at the gate until
    it has joined the group (``Confined``), the join overlapping the supervisor's start-up.
    ``stderr``: interleaved with stdout (as a terminal shows them), or ``subprocess.PIPE``."""

    def start(gate: int = -1) -> Awaitable[tuple[asyncio.SubprocessTransport, asyncio.BaseProtocol]]:
        nproc = confined.pids_max if confined is not None else 0
        return loop.subprocess_exec(
            lambda: protocol,
            *supervised(argv, gate=gate, nproc=nproc),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,
            env=env,
            pass_fds=(gate,) if gate >= 0 else (),
        )

    if confined is None or confined.group is None:
        transport, _ = await start()
        return transport
    gate, opener = os.pipe()
    try:
        try:
            transport, _ = await start(gate)
        finally:
            os.close(gate)
        joined = await asyncio.to_thread(confined.join, transport.get_pid())
        os.write(opener, b"1" if joined else b"0")
    finally:
        os.close(opener)  # unopened, the gate reads as closed: the supervisor ends its group
    return transport


async def _run(
    argv: Sequence[str],
    confined: Confined | None,
    cwd: Path,
    timeout: float | None,
    signal: AbortSignal | None,
    on_output: Callable[[str], None] | None,
    env: Mapping[str, str] | None,
    env_passthrough: Collection[str],
    max_bytes: int,
    max_lines: int,
    spools: Spools | None,
) -> ProcessResult:
    buffer = OutputBuffer(max_bytes, max_lines)
    spill = _Spill(max_bytes, spools) if spools is not None else None
    if signal is not None and signal.aborted:
        return ProcessResult("", None, False, False, True, 0)
    loop = asyncio.get_running_loop()
    protocol = _Protocol(loop, buffer, on_output, spill)
    transport = await spawn_supervised(
        loop,
        protocol,
        argv,
        confined,
        cwd,
        {**tool_environment(env_passthrough), **_QUIET_ENV, **(env or {})},
    )
    stop: asyncio.Future[None] = loop.create_future()

    def on_abort(_reason: object) -> None:
        if not stop.done():
            stop.set_result(None)

    remove = signal.add_listener(on_abort) if signal is not None else None
    try:
        ended = await await_group(transport, protocol.exited, protocol.eof, stop, timeout)
    finally:
        if remove is not None:
            remove()
        if spill is not None:
            spill.close(keep=buffer.truncated)
    timed_out, cancelled = ended == "timed out", ended == "stopped"
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
        spool_error=spill.error if spill is not None and buffer.truncated else None,
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
    """Keeps raw output in memory up to ``limit`` bytes, then moves it to a spool file.

    The file stops at ``MAX_SPOOL_BYTES``. A write that fails (a full disk) deletes the partial
    file and records why, once: the output still reaches the model, only the copy is lost.
    """

    def __init__(self, limit: int, spools: Spools) -> None:
        self._limit = limit
        self._spools = spools
        self._early: list[bytes] = []
        self._size = 0
        self._file: BinaryIO | None = None
        self.path: Path | None = None
        self.error: str | None = None

    def write(self, data: bytes) -> None:
        if self.error is not None:
            return
        if self._file is not None:
            room = MAX_SPOOL_BYTES - self._size
            if room > 0:
                self._guarded(self._file.write, data[:room])
            self._size += len(data)
            return
        self._early.append(data)
        self._size += len(data)
        if self._size > self._limit:
            self._open()

    def close(self, *, keep: bool) -> None:
        """Finish the file; ``keep`` also saves output that stayed in memory (cut by line count)."""
        if self._file is None and keep and self.error is None:
            self._open()
        if self._file is not None:
            self._guarded(self._file.close)
            self._file = None

    def _open(self) -> None:
        def start() -> None:
            self.path = self._spools.new_file()
            self._file = self.path.open("wb")
            self._file.write(b"".join(self._early)[:MAX_SPOOL_BYTES])

        self._guarded(start)
        self._early = []

    def _guarded(self, action: Callable[..., object], *args: bytes) -> None:
        try:
            action(*args)
        except OSError as exc:
            where = f" ({self.path.parent})" if self.path is not None else ""
            self.error = f"{exc.strerror or exc}{where}"
            if self._file is not None:
                with contextlib.suppress(OSError):
                    self._file.close()
                self._file = None
            if self.path is not None:
                with contextlib.suppress(OSError):
                    self.path.unlink()
                self.path = None


async def await_group(
    transport: asyncio.SubprocessTransport,
    exited: asyncio.Future[None],
    eof: asyncio.Future[None],
    stop: asyncio.Future[None],
    timeout: float | None,
) -> Literal["exited", "stopped", "timed out"]:
    """Wait until the command's supervisor exits, ``stop`` is set or ``timeout`` runs out; in the
    last two cases kill its group. Then read what is left of the output for a moment (a
    background job may hold the pipe), and close the transport. A caller cancelled meanwhile
    leaves nothing running either."""
    try:
        done, _ = await asyncio.wait({exited, stop}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        ended = "exited" if exited in done else "stopped" if stop in done else "timed out"
        if ended != "exited":
            await kill_group(transport.get_pid(), exited)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(eof), DRAIN_AFTER_EXIT)
        return ended
    finally:
        if not exited.done():
            await kill_group(transport.get_pid(), exited)
        transport.close()


async def kill_group(pgid: int, exited: asyncio.Future[None]) -> None:
    """SIGTERM the whole process group, then SIGKILL whatever is left of it after a grace period."""
    _signal_group(pgid, signals.SIGTERM)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(exited), KILL_GRACE)
    _signal_group(pgid, signals.SIGKILL)  # children may ignore SIGTERM or outlive the leader
    await exited


def _signal_group(pgid: int, sig: signals.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
