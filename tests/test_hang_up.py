"""``tether._hang_up.watch_hang_up``: a reader that has left is told at once; a readiness that
is no hang-up (a peer writing, or ending only its own writing) is neither taken for one nor
called again at every pass of the loop."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from tether._hang_up import watch_hang_up


async def _calls(fd: int, then: Callable[[], object]) -> int:
    """How many times a watch of ``fd`` calls ``gone`` in the 0.2 s after ``then``; the watch
    is left ended either way (no reader of ``fd`` left on the loop)."""
    calls: list[None] = []
    unwatch = watch_hang_up(fd, lambda: calls.append(None))
    then()
    await asyncio.sleep(0.2)
    assert not asyncio.get_running_loop().remove_reader(fd)  # ended by the call or never begun
    unwatch()
    return len(calls)


async def test_a_pipe_whose_reader_closed_it_is_told() -> None:
    read, write = os.pipe()
    try:
        assert await _calls(write, lambda: os.close(read)) == 1
    finally:
        os.close(write)


async def test_a_socket_whose_peer_closed_it_is_told_though_the_peer_wrote_first() -> None:
    ours, theirs = socket.socketpair()
    with ours:
        theirs.sendall(b"unread")
        assert await _calls(ours.fileno(), theirs.close) == 1


@pytest.mark.parametrize("peer", ["writes", "ends its writing"])
async def test_a_peer_that_writes_or_ends_its_writing_has_not_left(peer: str) -> None:
    """socat hands tether one socket for stdin and stdout: the client's commands arrive on it,
    and its end of input is a half close, after which it still reads the answers."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        act = (
            (lambda: theirs.sendall(b"x")) if peer == "writes" else (lambda: theirs.shutdown(socket.SHUT_WR))
        )
        assert await _calls(ours.fileno(), act) == 0


async def test_a_fifo_opened_read_write_is_not_watched(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    fd = os.open(tmp_path / "fifo", os.O_RDWR)
    try:
        assert await _calls(fd, lambda: os.write(fd, b"unread\n")) == 0
    finally:
        os.close(fd)
