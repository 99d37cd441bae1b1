"""Connections of an event loop that has ended: a pool belongs to its loop (its sockets do), and
the pools were kept in a dictionary weakly keyed by the loop, whose values (the sockets) refer to
the loop: no loop ever left it. Each ``asyncio.run`` (and each ``tether.run_sync``) that called a
provider kept its loop, its pools and an open connection for the life of the process: a program
calling ``run_sync`` per request ran out of file descriptors."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Iterator

import pytest
from faultkit import COMPLETIONS, TEXT, collect, fast, model

import tether
from tether.ai.models import ProviderInfo, register_provider_info
from tether.testing.loopback import LoopbackServer, Reply


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    """A loopback server on a loop of its own thread, for tests that start loops themselves."""
    started = threading.Event()
    stop: list[asyncio.Event] = []
    found: list[LoopbackServer] = []
    loops: list[asyncio.AbstractEventLoop] = []

    async def serve() -> None:
        async with LoopbackServer([Reply(TEXT[COMPLETIONS].body)]) as running:
            found.append(running)
            stop.append(asyncio.Event())
            loops.append(asyncio.get_running_loop())
            started.set()
            await stop[0].wait()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    assert started.wait(10)
    yield found[0]
    loops[0].call_soon_threadsafe(stop[0].set)
    thread.join(10)


def wait_until_open(server: LoopbackServer, most: int) -> int:
    """The server's open connections once at most ``most`` (or 10 s on)."""
    deadline = time.monotonic() + 10
    while server.open_connections > most and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.01)
    return server.open_connections


def test_the_connections_of_an_ended_event_loop_are_let_go(server: LoopbackServer) -> None:
    for _ in range(3):
        _, final = asyncio.run(collect(model(server.url), fast()))
        assert final["stopReason"] == "stop"
    assert server.connections == 3  # one per loop: a socket cannot move to another loop
    assert wait_until_open(server, 1) <= 1


def test_run_sync_closes_the_connections_it_opened(server: LoopbackServer) -> None:
    register_provider_info(
        ProviderInfo("sync-server", "openai-completions", f"{server.url}/v1", None, local=True)
    )
    assert tether.run_sync("hi", model="sync-server/m") == "Hello"
    assert tether.run_sync("hi", model="sync-server/m") == "Hello"
    assert wait_until_open(server, 0) == 0
