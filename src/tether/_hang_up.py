"""Noticing that the reader of a stream tether writes (``--mode json``'s events, RPC's frames)
has left while tether has nothing to write: a run in a tool call that writes nothing for minutes
(a build, ``sleep 30``) would otherwise go on, every paid call and tool run with nobody reading,
until its next write failed. One watch for both front ends, under every layer."""

from __future__ import annotations

import asyncio
import fcntl
import os
import select
import stat
from collections.abc import Callable
from typing import IO, Any


def watch_hang_up(out: int | IO[Any], gone: Callable[[], None]) -> Callable[[], None]:
    """Call ``gone`` once the reader of ``out`` has left; returns what stops the watch.

    A pipe's write end polls readable (POLLERR) once its read end is closed, as asyncio's write
    pipe transport notices it; a Unix socket polls readable with POLLHUP once its peer has
    closed it (Node, libuv, hands a child a socketpair end for each piped stdio: pi's RPC
    client, editor extensions). Readable alone is no hang-up: a socket is readable too when its
    peer writes to it or ends only its own writing (socat's one socket for stdin and stdout, at
    the end of input), which a peek's ``b""`` would take for a close. So a zero-timeout poll
    decides; a readiness it does not confirm (a TCP peer's close too, a FIN without POLLHUP)
    ends the watch, which would otherwise be called again at once (a spin), and the next write
    failing tells as before. A FIFO opened read-write (``1<>fifo``) holds a reader in tether
    itself (it polls readable while a line is unread) and is not watched, nor is a file or a
    terminal (whose hang-up is SIGHUP's)."""
    try:
        fd = out if isinstance(out, int) else out.fileno()
        mode = os.fstat(fd).st_mode
        if stat.S_ISFIFO(mode):
            if (fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE) != os.O_WRONLY:
                return _unwatched
        elif not stat.S_ISSOCK(mode):
            return _unwatched
    except (OSError, ValueError):  # no descriptor (a StringIO, a closed stream)
        return _unwatched
    loop = asyncio.get_running_loop()

    def unwatch() -> None:
        loop.remove_reader(fd)

    def readable() -> None:
        unwatch()
        if _hung_up(fd):
            gone()

    loop.add_reader(fd, readable)
    return unwatch


def _hung_up(fd: int) -> bool:
    poller = select.poll()
    poller.register(fd, 0)  # POLLERR and POLLHUP are reported whatever is asked for
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def _unwatched() -> None:
    """What stops a watch never started."""
