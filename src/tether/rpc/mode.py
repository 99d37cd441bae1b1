"""``tether --mode rpc``: the RPC protocol over stdin and stdout (see ``docs/rpc.md``).

stdout belongs to the protocol alone: the frames are written to a private copy of file
descriptor 1, and fd 1 itself is pointed at stderr (``tether.cli.stdout``), so a stray ``print``,
a library's warning or a child's output can never corrupt a frame. stdin is read by the event loop when it is a pipe or socket (the usual
case: a client that spawned us), else by a thread with plain ``os.read`` (files and terminals),
and split into lines on LF only (``tether.rpc.jsonl``).

Frames are written as the client takes them: what its pipe cannot take yet waits here
(``_Output``), so the event loop never blocks on a client that stopped reading, and ``abort`` is
read and takes effect whatever the client does with stdout: the run ends, its last frames
waiting. While more than ``OUTPUT_HIGH_WATER`` bytes wait, further command lines are held unrun
(an ``abort``, ``abort_bash`` or ``abort_retry`` among them acts at once, answered in its turn),
and past ``HELD_INPUT_BYTES`` of them stdin is not read: a client that sends commands without
reading their answers cannot grow our memory beyond those two bounds and a run's own frames.

The server ends on ``shutdown``, end of input, SIGTERM, SIGHUP or the client closing its end of
a stdout pipe: it aborts the run in progress, lets it record what it has, waits for commands in
flight, closes the session, and exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import stat
import sys
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, BinaryIO

from tether._hang_up import watch_hang_up
from tether._version import __version__
from tether.rpc.dispatch import Frame
from tether.rpc.jsonl import OVERLONG, LineSplitter, encode_frame
from tether.rpc.protocol import PROTOCOL_VERSION
from tether.rpc.server import RpcServer
from tether.session.agent_session import AgentSession

_CHUNK = 1 << 16
"""Bytes asked of each stdin read: under glibc's 128 KiB mmap threshold, so the buffer comes from
the heap. (asyncio's pipe transport asks 256 KiB: an mmap, mremap and munmap for every line read,
kernel time that made up much of a ``get_state`` round trip.)"""


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
STOPPING_WRITE_SECONDS = 5.0
"""Once the server is ending, how long the frames still waiting may wait for a client that takes
nothing: they are given up then, so that a client that stopped reading cannot keep the server
from ending."""
MAX_LINE_BYTES = 50 * 1024 * 1024
"""The longest command line read (as ACP's): a prompt with a few large images fits; a longer one
gets one error response and is skipped to its end, its bytes dropped as they come (pi has no
limit: a 100 MB line cost it, and us, some 450 MB of memory)."""
OUTPUT_HIGH_WATER = 1 << 20
"""Bytes of frames waiting for the client past which command lines are held, not run."""
HELD_INPUT_BYTES = 1 << 20
"""Bytes of held command lines past which stdin is not read until the client reads again."""
GATHER_BYTES = 1 << 16
"""Bytes of gathered answers (``_Output.gather``) written at once, without waiting for the
chunk's last line: a pipe's default capacity."""


_OVERLONG_ANSWER = {
    "type": "response",
    "command": "parse",
    "success": False,
    "error": f"command line longer than {MAX_LINE_BYTES >> 20} MiB: skipped to its end",
}


class _StopSignals:
    """SIGTERM and SIGHUP, heard by the event loop.

    The signals' C handler writes their numbers to a socket of ours (``signal.set_wakeup_fd``),
    which the loop reads like any other (a frame written to a file or terminal blocks the loop
    for as long as the write takes; the number waits in the socket meanwhile). Numbers of other
    signals go on to the wakeup descriptor set before (asyncio's, if it had one)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, on_stop: Callable[[], None]) -> None:
        self._loop = loop
        self._on_stop = on_stop
        self._reader, self._writer = socket.socketpair()
        self._reader.setblocking(False)
        self._writer.setblocking(False)
        self.stopping = False
        try:
            self._previous_fd = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        except ValueError:  # not the main thread: the caller goes on without, the sockets are ours
            self._reader.close()
            self._writer.close()
            raise
        self._previous = {signum: signal.signal(signum, _heard_in_c) for signum in STOP_SIGNALS}
        loop.add_reader(self._reader.fileno(), self.take)

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
    """Writes frames to the protocol's stdout as the client takes them; a vanished reader turns
    into a shutdown.

    A frame goes straight to the descriptor (one ``os.write``: a buffered file would copy every
    frame in and out again) when nothing waits before it; what the pipe does not take waits in
    ``_pending``, written from the event loop as the pipe drains (stdout is non-blocking then:
    ``serve``). Files and terminals stay blocking and take each frame whole. While the lines of
    one chunk of stdin are run (``gather``), their answers are gathered and written together: a
    client that pipelines commands costs one write per chunk, not one per answer (a write to a
    pipe, and the wake-up of the client it brings, cost about as much as a ``get_state``)."""

    def __init__(self, stream: BinaryIO, on_broken: asyncio.Event, loop: asyncio.AbstractEventLoop) -> None:
        self._stream = stream  # owns the descriptor: it stays open while the server writes
        self._fd = stream.fileno()
        self._broken = on_broken
        self._loop = loop
        self._pending = bytearray()  # deleting from its front is cheap (CPython keeps an offset)
        self._writing = False
        """The loop writes ``_pending`` as the pipe drains (``_flush``)."""
        self._open = True
        """``on_broken`` not set (a plain flag: asking the event costs a call per frame)."""
        self._gathering = False
        self._progress = asyncio.Event()
        self.on_room: Callable[[], None] | None = None
        """Called when the waiting frames fall to ``OUTPUT_HIGH_WATER`` or below."""
        self.failure: OSError | None = None
        """Why stdout broke when the reason is the device's (a full disk), not a reader leaving."""

    @property
    def waiting(self) -> int:
        """Bytes of frames the client has not taken yet."""
        return len(self._pending)

    def __call__(self, frame: Frame) -> None:
        if not self._open:
            return
        data = encode_frame(frame)
        if self._pending or self._gathering:
            self._pending += data
            if not self._writing and len(self._pending) >= GATHER_BYTES:
                self._send()
            return
        written = self._write(data)
        if written is None or written == len(data):
            return
        self._pending += memoryview(data)[written:]
        self._send()

    def gather(self) -> None:
        """Hold the frames written from now on until ``send_gathered`` (or ``GATHER_BYTES`` of them)."""
        self._gathering = True

    def send_gathered(self) -> None:
        self._gathering = False
        if self._pending and not self._writing:
            self._send()

    def _send(self) -> None:
        """Write ``_pending``: a file or terminal takes it all now; what a pipe does not take
        waits for the loop's writer."""
        if os.get_blocking(self._fd):
            while self._pending and (written := self._write(self._pending)) is not None:
                del self._pending[:written]
            return
        written = self._write(self._pending)
        if written is None:
            return
        del self._pending[:written]
        if self._pending:
            self._writing = True
            self._loop.add_writer(self._fd, self._flush)

    def _write(self, data: bytes | bytearray | memoryview) -> int | None:
        """Bytes of ``data`` written now; ``None`` when stdout broke."""
        try:
            return os.write(self._fd, data)
        except BlockingIOError:
            return 0
        except BrokenPipeError:
            self._give_up()
        except OSError as exc:
            self.failure = exc
            self._give_up()
        return None

    def _flush(self) -> None:
        written = self._write(self._pending)
        if not written:
            return
        del self._pending[:written]
        self._progress.set()
        if not self._pending:
            self._stop_writing()
        if self.on_room is not None and len(self._pending) <= OUTPUT_HIGH_WATER:
            self.on_room()

    def _stop_writing(self) -> None:
        if self._writing:
            self._writing = False
            self._loop.remove_writer(self._fd)

    def hung_up(self) -> None:
        """The client closed its end of stdout: a shutdown now, not at the next frame (a quiet
        tool call may write none for minutes)."""
        self._give_up()

    def _give_up(self) -> None:
        self._stop_writing()
        self._pending.clear()
        self._open = False
        self._broken.set()

    async def drain(self) -> None:
        """Wait for the waiting frames to be taken; those the client takes nothing of for
        ``STOPPING_WRITE_SECONDS`` are given up (the last line may then be cut short)."""
        self.send_gathered()
        while self._pending and not self._broken.is_set():
            self._progress.clear()
            try:
                await asyncio.wait_for(self._progress.wait(), STOPPING_WRITE_SECONDS)
            except TimeoutError:
                self._stop_writing()
                self._pending.clear()


class _Input:
    """Command lines on their way to the server: run at once while the client takes its frames,
    held in order while more than ``OUTPUT_HIGH_WATER`` bytes of frames wait (an abort among them
    acting at once), and stdin left unread past ``HELD_INPUT_BYTES`` of them (see the module
    docstring)."""

    def __init__(self, server: RpcServer, output: _Output, stop: asyncio.Event) -> None:
        self._server = server
        self._output = output
        self._stop = stop
        self._held: deque[bytes] = deque()
        self._held_bytes = 0
        self.reading: Callable[[bool], None] | None = None
        """Starts (``True``) and stops (``False``) the reading of stdin."""
        output.on_room = self.release

    def take(self, line: bytes) -> None:
        if not self._held and self._output.waiting <= OUTPUT_HIGH_WATER:
            self._server.dispatch(line)
            return
        self._held.append(line)
        self._held_bytes += len(line)
        self._server.interrupt(line)
        if self._held_bytes > HELD_INPUT_BYTES and self.reading is not None:
            self.reading(False)

    def release(self, everything: bool = False) -> None:
        """Run the held lines the output has room for (``everything``: all of them, at the end of
        input), in order; read stdin again once few enough are held."""
        while self._held and not self._stop.is_set():
            if not everything and self._output.waiting > OUTPUT_HIGH_WATER:
                break
            line = self._held.popleft()
            self._held_bytes -= len(line)
            self._server.dispatch(line)
        if self._held_bytes <= HELD_INPUT_BYTES and self.reading is not None:
            self.reading(True)


async def serve(core: AgentSession, *, stdin_fd: int, out: BinaryIO) -> int:
    """Serve the protocol until shutdown; returns the exit status (1 when stdout failed)."""
    loop = asyncio.get_running_loop()
    finished = asyncio.Event()
    broken = asyncio.Event()
    output = _Output(out, broken, loop)
    server = RpcServer(core, output)
    stop = server.shutdown_requested
    lines = _Input(server, output, stop)
    splitter = LineSplitter(MAX_LINE_BYTES)

    def take(chunk: bytes) -> None:
        """Dispatch the complete lines of one chunk of stdin, as it arrives; ``b""`` ends input."""
        if finished.is_set() or stop.is_set() or broken.is_set():
            return
        if not chunk:
            last = splitter.finish()
            if last is not None:
                lines.take(last)
            lines.release(everything=True)
            finished.set()
            return
        output.gather()
        try:
            for line in splitter.feed(chunk):
                if stop.is_set():
                    break
                if line == OVERLONG:
                    output(_OVERLONG_ANSWER)
                else:
                    lines.take(line)
        finally:
            output.send_gathered()

    try:
        signals: _StopSignals | None = _StopSignals(loop, stop.set)
    except ValueError:  # not the main thread (a test's server): signals are its owner's
        signals = None
    out_fd = out.fileno()
    was_blocking = os.get_blocking(out_fd)
    if stat.S_ISFIFO(os.fstat(out_fd).st_mode) or stat.S_ISSOCK(os.fstat(out_fd).st_mode):
        os.set_blocking(out_fd, False)  # what a full pipe does not take waits in ``_Output``
    unwatch = watch_hang_up(out_fd, output.hung_up)
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
        server.dialogs.notify(core.notice, "warning")
    lines.reading = _read_with_loop(stdin_fd, loop, take)
    thread: _ReaderThread | None = None
    if lines.reading is None:
        thread = _ReaderThread(stdin_fd, loop, take)
        lines.reading = thread.reading
    try:
        await finished.wait()
        await asyncio.sleep(0)  # let the last dispatched commands start before closing
        await server.close()
        await output.drain()
    finally:
        for watcher in watchers:
            watcher.cancel()
        if thread is not None:
            thread.let_go()
        elif lines.reading is not None:
            lines.reading(False)
        if signals is not None:
            signals.close()
        unwatch()
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
) -> Callable[[bool], None] | None:
    """Read a pipe or socket on stdin with the event loop itself: no thread to wake for every
    chunk, and no transport and protocol between the ready file and ``take`` (each read is one
    ``os.read`` in the loop's callback). Returns what starts (``True``) and stops the reading;
    ``None`` for anything else (a file cannot be polled; a terminal's open file is shared with
    the shell, which must not find it left non-blocking), which the reader thread serves."""
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
            ended.append(True)
            loop.remove_reader(fd)
        take(chunk)

    ended: list[bool] = []

    def reading(on: bool) -> None:
        if on and not ended:
            loop.add_reader(fd, readable)
        else:
            loop.remove_reader(fd)

    reading(True)
    return reading


class _ReaderThread:
    """stdin read by a thread (a file or a terminal cannot be polled), a chunk at a time: the
    next read waits until the loop has taken the last chunk, and while the reading is stopped
    (``reading``). A file is read as fast as the disk gives it: unpaced, the thread would queue
    the whole of a client's file of commands on the loop, whose answers nobody may be reading."""

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop, take: Callable[[bytes], None]) -> None:
        self._fd = fd
        self._loop = loop
        self._take = take
        self._on = True
        self._go = threading.Event()
        self._go.set()
        threading.Thread(target=self._run, name="rpc-stdin", daemon=True).start()

    def reading(self, on: bool) -> None:
        self._on = on
        if on:
            self._go.set()
        else:
            self._go.clear()

    def let_go(self) -> None:
        """At the end: the thread reads on to the end of input (``take`` ignores it now), and ends."""
        self.reading(True)

    def _taken(self, chunk: bytes) -> None:
        self._take(chunk)
        if self._on:
            self._go.set()

    def _run(self) -> None:
        """Thread body: forward stdin's bytes to the loop; ``b""`` at end of input."""
        while True:
            self._go.wait()
            try:
                chunk = os.read(self._fd, _CHUNK)
            except OSError:
                chunk = b""
            self._go.clear()  # until the loop has taken the chunk
            try:
                self._loop.call_soon_threadsafe(self._taken, chunk)
            except RuntimeError:  # the loop is gone: the server has ended
                return
            if not chunk:
                return
