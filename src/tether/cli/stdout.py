"""Machine-readable modes own stdout: JSON, RPC and ACP write their records, and print mode its
answer (``answer=$(tether -p ...)``), to a private copy of file descriptor 1, and fd 1 itself is
pointed at stderr.

Anything else that writes to stdout, an extension's ``print()``, a library's warning, and above
all a child process (an MCP server, an extension's subprocess, which inherit fd 1 and write to
it directly, out of Python's reach), then lands on stderr instead of corrupting a record. Done
before the session is built, so an extension printing while it is imported is caught too.
"""

from __future__ import annotations

import io
import os
import sys
from typing import BinaryIO, TextIO


def take_over_stdout() -> BinaryIO:
    """A private handle on stdout for the protocol; fd 1 (and ``sys.stdout``) now go to stderr.

    The private descriptor is close-on-exec (``os.dup``'s default), so children never get it."""
    sys.stdout.flush()
    private = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return private


def give_back_stdout(private: BinaryIO | io.TextIOWrapper, previous: TextIO) -> None:
    """Undo ``take_over_stdout`` (before ``private`` is closed): fd 1 is the real stdout again and
    ``sys.stdout`` what it was, for a program or test that ran the command in its own process
    and prints after it."""
    private.flush()
    sys.stdout.flush()
    os.dup2(private.fileno(), 1)
    sys.stdout = previous


def text_output(private: BinaryIO) -> io.TextIOWrapper:
    """The private handle as text, for a mode that writes ``str`` records (JSON mode)."""
    return io.TextIOWrapper(private, encoding="utf-8", newline="\n", write_through=False)


def fill_closed_standard_streams() -> None:
    """Point a closed stdin or stderr (``<&-``, ``2>&-``: cron, a daemon's child) at /dev/null,
    before anything opens a file: the next file opened would otherwise take that number, and
    what goes to stderr (notes, a child's errors, fd 1 pointed at stderr above) would be
    written into it, the session database say. A closed stdin reads as empty; a closed fd 1
    gets /dev/null too, but ``sys.stdout`` stays ``None`` so that a mode whose output is
    stdout can still say it has nowhere to write."""
    for fd, mode in ((0, "r"), (1, "w"), (2, "w")):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        null = os.open(os.devnull, os.O_RDWR)
        if null != fd:  # the lowest free number: fd itself, unless a lower one was closed too
            os.dup2(null, fd)
            os.close(null)
        else:  # ``os.open`` makes it close-on-exec: commands tether runs would find it closed
            os.set_inheritable(fd, True)
        if fd == 0:
            sys.stdin = open(fd, mode, encoding="utf-8", closefd=False)  # noqa: SIM115
        elif fd == 2:
            sys.stderr = open(fd, mode, encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
