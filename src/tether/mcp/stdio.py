"""A stdio MCP server started before the SDK is loaded, and the transport the SDK talks through.

The SDK's own ``stdio_client`` spawns the server itself, so with it a server could only start
once ``import mcp`` (about a second here) is done, and a server's own start (another interpreter
importing its SDK, or Node) is usually the longest part of a session's start: the two would be
paid in a row. Here ``spawn`` starts the process with plain asyncio at once, while
``tether.mcp.sdk`` loads the SDK in a thread; ``process_transport`` then hands the running
process to the SDK's ``Client`` as a transport (the read and write streams it takes).

The contract is the SDK's stdio one: newline-delimited JSON-RPC on stdin and stdout, the server
in a session (process group) of its own, and the environment limited to a few variables plus
the configured ones (a server does not see the user's API keys). ``stop_process`` shuts it down
as the MCP specification asks: close stdin, give it time to exit, then SIGTERM the process
group, then SIGKILL; the whole group goes, so a wrapper's children (``npx`` starting ``node``)
do not outlive the session.

Nor do they outlive tether when it dies without stopping them (``kill -9``, a crash): the group
is led by the ``bash`` tool's supervisor (``tether.tools.process.supervised``), a bare interpreter
that asks the kernel for a signal on its parent's death (``PR_SET_PDEATHSIG``) and then kills
its whole group. The parent-death signal set on the server itself (a ``preexec_fn``) would kill
the server but not its children, and ``preexec_fn`` is unsafe with threads; a watchdog thread of
ours dies with us. (The signal comes when the *thread* that started the server ends: servers are
started on the event loop's thread, which lives as long as the session.)

With ``sandbox.mcp`` in settings, a server starts inside the session's sandbox (``bwrap``, as
``bash`` commands do; ``McpServerConfig.sandbox``), its processes capped by ``RLIMIT_NPROC``.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import shutil
import signal
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from tether.mcp.config import McpServerConfig
from tether.tools.process import supervised

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.shared.message import SessionMessage

INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
"""The variables a server gets from tether's environment (the SDK's choice on POSIX); the
configured ``env`` comes on top."""

EXIT_GRACE = 2.0
"""Seconds a server gets to exit after its stdin closes, and again after SIGTERM."""

MAX_LINE_BYTES = 64 << 20
"""The longest message line read from a server's stdout. Past it the server's connection is
closed (its calls fail as for a crash, the next call starts it again) and the rest is read and
dropped: a line without end was kept whole, growing tether until the kernel killed it (a 300 MB
line cost 600 MB). Nothing a model gets needs as much: text is cut to 50 KB, images to 5 MB."""
_CHUNK = 1 << 16
_POLL = 0.01

log = logging.getLogger("mcp.tether.stdio")
"""Under the ``mcp`` logger, so it goes where the SDK's own warnings go (``mcp-logs/sdk.log``)."""


async def spawn(config: McpServerConfig, errlog: TextIO | None) -> asyncio.subprocess.Process:
    """Start the server of ``config`` (a stdio one); its stderr is a pipe for ``copy_log`` to
    ``errlog`` (discarded when ``None``). Raises ``OSError`` when the command cannot be started."""
    assert config.command is not None
    env = {k: v for k in INHERITED_ENV if (v := os.environ.get(k)) is not None and not v.startswith("()")}
    env |= dict(config.env)
    command = shutil.which(config.command, path=env.get("PATH"))
    if command is None:  # said here: under the supervisor, exec's own error would come too late
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), config.command)
    if config.cwd is not None and not config.cwd.is_dir():  # the spawn's error named it as the command
        raise NotADirectoryError(errno.ENOTDIR, "no such folder", f"its working folder {config.cwd}")
    argv, nproc = [command, *config.args], 0
    if config.sandbox is not None:  # confined like bash, for as long as the server lives
        argv = config.sandbox.argv(argv, config.cwd or Path.cwd())
        nproc = config.sandbox.policy.pids_max
    return await asyncio.create_subprocess_exec(
        *supervised(argv, nproc=nproc),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE if errlog is not None else asyncio.subprocess.DEVNULL,
        env=env,
        cwd=config.cwd,
        start_new_session=True,
    )


async def copy_log(stream: asyncio.StreamReader, log: TextIO, limit: int) -> None:
    """A server's stderr into its log, ``limit`` bytes at most for one start, then one line
    saying so; the rest is read and dropped (a server whose pipe fills up would block). Given the
    file itself, a server flooding its stderr (300 MB in 7 s here) filled the disk."""
    kept = 0
    while chunk := await stream.read(_CHUNK):
        if kept >= limit:
            continue
        part = chunk[: limit - kept]
        kept += len(part)
        log.flush()
        log.buffer.write(part)
        if kept >= limit:
            log.buffer.write(
                f"\n--- tether: {limit} bytes kept; the rest of this start's output dropped ---\n".encode()
            )
        log.flush()


@asynccontextmanager
async def process_transport(
    process: asyncio.subprocess.Process, cut_off: Callable[[str], None] = lambda _why: None
) -> AsyncGenerator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    """The SDK transport (``(read_stream, write_stream)``) over a spawned server's stdin and
    stdout; leaving it stops the process. Needs the SDK loaded (``tether.mcp.sdk``).

    A line that is not JSON-RPC reaches the SDK as an exception item, which it logs and skips,
    so a server printing garbage keeps working. The end of stdout (the server exited) closes
    the read stream: calls in flight fail with the SDK's connection-closed error. ``cut_off``
    is told why before tether closes the stream itself (a line over ``MAX_LINE_BYTES``), so the
    failure says so rather than that the server crashed.
    """
    import anyio
    from mcp.shared.message import SessionMessage

    incoming_writer, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outgoing, outgoing_reader = anyio.create_memory_object_stream[SessionMessage](0)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_read, process, incoming_writer, cut_off)
        tasks.start_soon(_write, process, outgoing_reader, incoming_writer)
        try:
            yield incoming, outgoing
        finally:
            incoming.close()  # a reader blocked on delivery goes on to drain stdout
            outgoing.close()
            with anyio.CancelScope(shield=True):
                await stop_process(process)
            tasks.cancel_scope.cancel()  # a survivor outside the group may hold stdout open


async def stop_process(process: asyncio.subprocess.Process) -> None:
    """Close stdin, wait up to ``EXIT_GRACE`` for the server to exit, then SIGTERM its process
    group and, after ``EXIT_GRACE`` more, SIGKILL it. Returns at once for a process already
    stopped."""
    if process.stdin is not None and not process.stdin.is_closing():
        process.stdin.close()
    await _wait_until(lambda: process.returncode is not None, EXIT_GRACE)
    group = process.pid  # start_new_session: the server leads a group of its own
    if not _signal_group(group, signal.SIGTERM):
        return  # the whole group is gone
    if not await _wait_until(lambda: not _signal_group(group, 0), EXIT_GRACE):
        _signal_group(group, signal.SIGKILL)
        await _wait_until(lambda: process.returncode is not None, EXIT_GRACE)


async def _read(
    process: asyncio.subprocess.Process,
    incoming: MemoryObjectSendStream[SessionMessage | Exception],
    cut_off: Callable[[str], None],
) -> None:
    """Stdout lines to ``incoming``; once nobody listens (or a line went past
    ``MAX_LINE_BYTES``), stdout is still read to its end, so a server writing to a full pipe is
    not kept from exiting."""
    import anyio

    assert process.stdout is not None
    pending = bytearray()
    listening = True
    async with incoming:
        while chunk := await process.stdout.read(_CHUNK):
            if not listening:
                continue
            searched = len(pending)
            pending += chunk
            if len(pending) > MAX_LINE_BYTES and pending.find(b"\n", searched) == -1:
                log.warning(
                    "the server wrote a line over %d MiB on stdout: disconnected", MAX_LINE_BYTES >> 20
                )
                pending, listening = bytearray(), False
                cut_off(f"it wrote a line over the {MAX_LINE_BYTES >> 20} MiB limit on stdout")
                await incoming.aclose()  # calls in flight fail as for a server that exited
                continue
            while (end := pending.find(b"\n", searched)) != -1:
                if end == len(pending) - 1:  # the usual case, and a huge result's: no copy
                    line, pending = pending, bytearray()
                    del line[end:]
                else:
                    line = pending[:end]
                    del pending[: end + 1]
                searched = 0
                if not line.strip():
                    continue
                message = _parse(line)  # empties the line: its bytes go before the result is used
                try:
                    await incoming.send(message)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    listening = False
                    break


async def _write(
    process: asyncio.subprocess.Process,
    outgoing: MemoryObjectReceiveStream[SessionMessage],
    incoming: MemoryObjectSendStream[SessionMessage | Exception],
) -> None:
    """Messages to stdin; a server that stopped reading ends the connection (the read stream
    closes) rather than leaving requests to wait forever."""
    assert process.stdin is not None
    try:
        async with outgoing:
            async for message in outgoing:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                process.stdin.write(data.encode("utf-8") + b"\n")
                await process.stdin.drain()
    except (OSError, RuntimeError):  # a closed pipe: BrokenPipeError, or writing after close
        await incoming.aclose()


def _parse(line: bytearray) -> SessionMessage | Exception:
    """One line as a message; ``line`` is emptied. Parsed by ``jiter`` into Python objects and
    then validated, rather than by pydantic straight from JSON: for a 104 MB result line the
    latter peaked at 485 MB over the line, this at 146 MB (the strings are built once)."""
    import jiter
    import mcp_types
    from mcp.shared.message import SessionMessage

    data = bytes(line)
    line.clear()
    try:
        parsed = jiter.from_json(data)
    except ValueError as exc:
        shown = data[:200].decode("utf-8", errors="replace")
        log.warning("not a JSON-RPC message on the server's stdout: %s", shown)
        return exc
    del data
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_python(parsed, by_name=False))
    except ValueError as exc:  # pydantic's ValidationError, for a message that is not JSON-RPC
        log.warning("not a JSON-RPC message on the server's stdout: %.200r", parsed)
        return exc


def _signal_group(group: int, signum: int) -> bool:
    """Send ``signum`` to a process group; ``False`` when the group no longer exists."""
    try:
        os.killpg(group, signum)
    except ProcessLookupError:
        return False
    except PermissionError:  # members we may not signal (or zombies): not proof they are gone
        pass
    return True


async def _wait_until(done: Callable[[], bool], timeout: float) -> bool:
    """Poll ``done()`` until it is true (``True``) or ``timeout`` passes (``False``).

    Polling, not ``process.wait()``: since Python 3.11 that also waits for the pipes to close,
    which a child that inherited them can keep open after the server itself exited.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not done():
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(_POLL)
    return True
