"""Noticing that the reader of a stream tether writes (``--mode json``'s events, RPC's frames)
has left while tether has nothing to write: a run in a tool call that writes nothing for minutes
(a build, ``sleep 30``) would otherwise go on, every paid call and tool run with nobody reading,
until its next write failed. One watch for both front ends, under every layer."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Callable
from typing import IO, Any


def watch_hang_up(out: int | IO[Any], gone: Callable[[], None]) -> Callable[[], None]:
    """Call ``gone`` once the reader of ``out``, a pipe, has left; returns what stops the watch.

    A pipe's write end polls readable (an error) once its read end is closed, as asyncio's write
    pipe transport notices it. A file, terminal or socket is not watched."""
    try:
        fd = out if isinstance(out, int) else out.fileno()
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return _unwatched
    except (OSError, ValueError):  # no descriptor (a StringIO, a closed stream)
        return _unwatched
    loop = asyncio.get_running_loop()

    def unwatch() -> None:
        loop.remove_reader(fd)

    def readable() -> None:
        unwatch()
        gone()

    loop.add_reader(fd, readable)
    return unwatch


def _unwatched() -> None:
    """What stops a watch never started."""
