"""``tether --mode rpc``: the RPC protocol over stdin and stdout (see ``docs/rpc.md``).

stdout belongs to the protocol alone: the frames are written to a private copy of file
descriptor 1, and fd 1 itself is pointed at stderr (``tether.cli.stdout``), so a stray ``print``,
a library's warning or a child's output can never corrupt a frame. stdin is read by the event loop when it is a pipe or socket (the usual
case: a client that spawned us), else by a thread with plain ``os.read`` (files and terminals),
and split into lines on LF only (``tether.rpc.jsonl``).

The server ends on ``shutdown``, end of input, SIGTERM or SIGHUP: it aborts the run in progress,
lets it record what it has, waits for commands in flight, closes the session, and exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import socket
import stat
import sys
import threading
from collections.abc import Callable
from typing import Any, BinaryIO

from tether._version import __version__
from tether.errors import TransportError
from tether.rpc.jsonl import LineSplitter, encode_frame
from tether.rpc.protocol import PROTOCOL_VERSION
from tether.rpc.server import Frame, RpcServer
from tether.session.agent_session import AgentSession

_CHUNK = 1 << 16
"""Bytes asked of each stdin read: under glibc's 128 KiB mmap threshold, so the buffer comes from
the heap. (asyncio's pipe transport asks 256 KiB: an mmap, mremap and munmap for every line read,
kernel time that made up much of a ``get_state`` round trip.)"""


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
STOPPING_WRITE_SECONDS = 5.0
"""Once the server is stopping, how long a frame write may wait for a client that takes nothing:
the frames it does not take are given up then, so that a client that stopped reading cannot keep
the server from ending."""


class _Stopped(TransportError):
    """The server is stopping and the client took nothing for ``STOPPING_WRITE_SECONDS``: the
    process we talk to stopped taking frames."""


class _StopSignals:
    """SIGTERM and SIGHUP, heard by the event loop and by a frame write blocked on stdout alike.

    Frames are written synchronously, so a client that stops reading leaves a write blocked on
    its full pipe, and the event loop with it: a handler of ``loop.add_signal_handler`` would
    never run, and the server would outlive a ``kill()`` for ever. So the signals' C handler
    writes their numbers to a socket of ours (``signal.set_wakeup_fd``), which the loop reads
    like any other, and a blocked write polls along with stdout. Numbers of other signals go on
    to the wakeup descriptor set before (asyncio's, if it had one)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, on_stop: Callable[[], None]) -> None:
        self._loop = loop
        self._on_stop = on_stop
        self._reader, self._writer = socket.socketpair()
        self._reader.setblocking(False)
        self._writer.setblocking(False)
        self.stopping = False
        """A stop signal came: blocked writes wait no longer than ``STOPPING_WRITE_SECONDS``."""
        try:
            self._previous_fd = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        except ValueError:  # not the main thread: the caller goes on without, the sockets are ours
            self._reader.close()
            self._writer.close()
            raise
        self._previous = {signum: signal.signal(signum, _heard_in_c) for signum in STOP_SIGNALS}
        loop.add_reader(self._reader.fileno(), self.take)

    def fileno(self) -> int:
        return self._reader.fileno()

    def take(self) -> None:
        """Read the signal numbers that came; on a stop signal, start stopping."""
        numbers = bytearray()
        with contextlib.suppress(BlockingIOError):
            while chunk := self._reader.recv(4096):
                numbers += chunk
        others = bytes(n for n in numbers if n not in STOP_SIGNALS)
        if others and self._previous_fd >= 0:
            with contextlib.suppress(OSError):
                os.write(self._previous_fd, others)
        if len(others) < len(numbers) and not self.stopping:
            self.stopping = True
            self._on_stop()

    def close(self) -> None:
        self._loop.remove_reader(self._reader.fileno())
        signal.set_wakeup_fd(self._previous_fd)
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._reader.close()
        self._writer.close()


def _heard_in_c(_signum: int, _frame: object) -> None:
    """The signal's number went to the wakeup socket (``_StopSignals``): nothing to do here."""


class _Output:
    """Writes frames to the protocol's stdout; a vanished reader turns into a shutdown.

    Straight to the file descriptor, one ``os.write`` per frame: a buffered file would copy
    every frame into its buffer and out again, and each frame is flushed at once anyway."""

    def __init__(self, stream: BinaryIO, on_broken: asyncio.Event) -> None:
        self._stream = stream  # owns the descriptor: it stays open while the server writes
        self._fd = stream.fileno()
        self._broken = on_broken
        self.signals: _StopSignals | None = None
        """Heard while a write waits for the client (``_StopSignals``)."""
        self.failure: OSError | None = None
        """Why stdout broke when the reason is the device's (a full disk), not a reader leaving."""

    def __call__(self, frame: Frame) -> None:
        if self._broken.is_set():
            return
        try:
            write_all(self._fd, encode_frame(frame), self.signals)
        except (BrokenPipeError, _Stopped):
            self._broken.set()
        except OSError as exc:
            self.failure = exc
            self._broken.set()


def write_all(fd: int, data: bytes, signals: _StopSignals | None = None) -> None:
    """Write all of ``data``, however many calls the descriptor takes: one for a frame while the
    client reads. A full pipe or socket (stdout is non-blocking: ``serve``) is waited on until
    it can take more, and for a stop signal: once the server is stopping, for
    ``STOPPING_WRITE_SECONDS`` at most, then ``_Stopped``."""
    try:
        written = os.write(fd, data)
    except BlockingIOError:
        written = 0
    if written == len(data):
        return
    rest = memoryview(data)[written:]
    waiting = select.poll()  # not select.select: a descriptor past 1023 is fine here
    waiting.register(fd, select.POLLOUT)
    if signals is not None:
        waiting.register(signals.fileno(), select.POLLIN)
    while rest:
        stopping = signals is not None and signals.stopping
        ready = waiting.poll(STOPPING_WRITE_SECONDS * 1000 if stopping else None)
        if not ready and stopping:
            raise _Stopped
        if signals is not None and any(ready_fd == signals.fileno() for ready_fd, _ in ready):
            signals.take()
        try:
            rest = rest[os.write(fd, rest) :]
        except BlockingIOError:
            continue


async def serve(core: AgentSession, *, stdin_fd: int, out: BinaryIO) -> int:
    """Serve the protocol until shutdown; returns the exit status (1 when stdout failed)."""
    loop = asyncio.get_running_loop()
    finished = asyncio.Event()
    broken = asyncio.Event()
    output = _Output(out, broken)
    server = RpcServer(core, output)
    stop = server.shutdown_requested
    splitter = LineSplitter()

    def take(chunk: bytes) -> None:
        """Dispatch the complete lines of one chunk of stdin, as it arrives; ``b""`` ends input."""
        if finished.is_set() or stop.is_set() or broken.is_set():
            return
        if not chunk:
            last = splitter.finish()
            if last is not None:
                server.dispatch(last)
            finished.set()
            return
        for line in splitter.feed(chunk):
            if stop.is_set():
                break
            server.dispatch(line)

    try:
        output.signals = _StopSignals(loop, stop.set)
    except ValueError:  # not the main thread (a test's server): signals are its owner's
        output.signals = None
    out_fd = out.fileno()
    was_blocking = os.get_blocking(out_fd)
    if stat.S_ISFIFO(os.fstat(out_fd).st_mode) or stat.S_ISSOCK(os.fstat(out_fd).st_mode):
        os.set_blocking(out_fd, False)  # a full pipe is waited on by ``write_all``, signals too
    watchers = [
        asyncio.ensure_future(_when(stop, finished.set)),
        asyncio.ensure_future(_when(broken, finished.set)),
    ]
    ready: dict[str, Any] = {
        "type": "ready",
        "protocolVersion": PROTOCOL_VERSION,
        "version": __version__,
        "sessionId": core.session_id,
    }
    output(ready)  # before any input is read: no answer may come ahead of it
    if core.notice:  # what the setup skipped (bad MCP entries, an untrusted project): pi's notify frame
        from tether.rpc.extension_ui import RpcExtensionUI

        (server.extension_ui or RpcExtensionUI(output)).notify(core.notice, "warning")
    stop_reading = _read_with_loop(stdin_fd, loop, take)
    if stop_reading is None:
        threading.Thread(target=_read, args=(stdin_fd, loop, take), name="rpc-stdin", daemon=True).start()
    try:
        await finished.wait()
        if output.signals is not None:  # ending: a client that reads no more must not hold us
            output.signals.stopping = True
        await asyncio.sleep(0)  # let the last dispatched commands start before closing
        await server.close()
    finally:
        for watcher in watchers:
            watcher.cancel()
        if stop_reading is not None:
            stop_reading()
        if output.signals is not None:
            output.signals.close()
        os.set_blocking(out_fd, was_blocking)
    if output.failure is not None:
        reason = output.failure.strerror or output.failure
        sys.stderr.write(f"tether: cannot write the RPC frames to standard output: {reason}\n")
        return 1
    return 0


async def _when(event: asyncio.Event, then: Any) -> None:
    await event.wait()
    then()


def _read_with_loop(
    fd: int, loop: asyncio.AbstractEventLoop, take: Callable[[bytes], None]
) -> Callable[[], object] | None:
    """Read a pipe or socket on stdin with the event loop itself: no thread to wake for every
    chunk, and no transport and protocol between the ready file and ``take`` (each read is one
    ``os.read`` in the loop's callback). Returns what stops the reading; ``None`` for anything
    else (a file cannot be polled; a terminal's open file is shared with the shell, which must
    not find it left non-blocking), which the reader thread serves."""
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return None
    os.set_blocking(fd, False)

    def readable() -> None:
        try:
            chunk = os.read(fd, _CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:  # a read error ends the input, as end of file does
            chunk = b""
        if not chunk:
            loop.remove_reader(fd)
        take(chunk)

    loop.add_reader(fd, readable)
    return lambda: loop.remove_reader(fd)


def _read(fd: int, loop: asyncio.AbstractEventLoop, take: Callable[[bytes], None]) -> None:
    """Thread body: forward stdin's bytes to the loop; ``b""`` at end of input."""
    while True:
        try:
            chunk = os.read(fd, _CHUNK)
        except OSError:
            chunk = b""
        try:
            loop.call_soon_threadsafe(take, chunk)
        except RuntimeError:  # the loop is gone: the server has ended
            return
        if not chunk:
            return
