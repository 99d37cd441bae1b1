"""A server's stdout filled by a client that stopped reading it (RPC and ACP tests)."""

from __future__ import annotations

import fcntl
import json
import struct
import subprocess
import termios
import threading
import time
from pathlib import Path
from typing import Any


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


def finish(process: subprocess.Popen[bytes], timeout: float) -> list[dict[str, Any]]:
    """Ends the session as a client that reads again would: closes the process's stdin, reads
    every frame it still writes, and checks that it exits with 0 within ``timeout`` seconds. The
    read is bounded too (the process is killed at the deadline, failing the check): a server that
    never ends must fail the test, not hang it. The caller still kills the process in its own
    ``finally``, for a failure before this point."""
    assert process.stdin is not None and process.stdout is not None
    deadline = threading.Timer(timeout, process.kill)
    deadline.start()
    try:
        process.stdin.close()
        with process.stdout:
            lines = process.stdout.read().splitlines()
        code = process.wait()
    finally:
        deadline.cancel()
    assert code == 0, f"the process exited with {code} (killed when it had not ended within {timeout:g} s)"
    return [json.loads(line) for line in lines]
