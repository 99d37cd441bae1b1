"""A server's stdout filled by a client that stopped reading it (RPC and ACP tests)."""

from __future__ import annotations

import fcntl
import struct
import subprocess
import termios
import time
from pathlib import Path


def unread(fd: int) -> int:
    """Bytes waiting in the pipe ``fd`` reads."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]


def idle(pid: int) -> bool:
    """Whether the process used no CPU time over half a second (it waits on something)."""

    def used() -> int:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime, stime

    before = used()
    time.sleep(0.5)
    return used() == before


def wait_until_stdout_full(process: subprocess.Popen[bytes], *, until_idle: bool = False) -> None:
    """Waits (at most a minute) until the pipe of ``process``'s stdout is full: the process is,
    or is about to be, blocked writing what nobody reads; with ``until_idle``, until it also
    uses no CPU (its own buffers full too: it waits for us)."""
    assert process.stdout is not None
    out = process.stdout.fileno()
    capacity = fcntl.fcntl(out, fcntl.F_GETPIPE_SZ)
    deadline = time.monotonic() + 60
    while unread(out) < capacity - 4096 or (until_idle and not idle(process.pid)):
        assert time.monotonic() < deadline, "the process never filled its stdout"
        time.sleep(0.05)
