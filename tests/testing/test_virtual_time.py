"""The conformance runner's clock: timers fire in the order their deadlines say, however long the
process is held up between setting them, and waiting costs no real time."""

from __future__ import annotations

import asyncio
import time

from tether.testing import virtual_time


async def race(stall: float) -> list[str]:
    """Start a 100 ms and then a 70 ms wait with ``stall`` seconds of blocked process between
    them (a loaded machine); the order they end in."""
    ended: list[str] = []

    async def wait(name: str, seconds: float) -> None:
        await asyncio.sleep(seconds)
        ended.append(name)

    slow = asyncio.create_task(wait("100 ms", 0.1))
    await asyncio.sleep(0)  # slow's timer is set
    time.sleep(stall)
    fast = asyncio.create_task(wait("70 ms", 0.07))
    await asyncio.gather(slow, fast)
    return ended


def test_a_stall_between_two_timers_does_not_turn_them_round() -> None:
    assert virtual_time.run(race(0.04)) == ["70 ms", "100 ms"]
    assert asyncio.run(race(0.04)) == ["100 ms", "70 ms"]  # on the real clock it does


def test_equal_delays_end_in_the_order_they_were_set() -> None:
    async def main() -> list[int]:
        ended: list[int] = []

        async def wait(n: int) -> None:
            await asyncio.sleep(0.01)
            ended.append(n)

        await asyncio.gather(*(wait(n) for n in range(50)))
        return ended

    assert virtual_time.run(main()) == list(range(50))


def test_waiting_takes_no_real_time_and_io_still_works() -> None:
    async def main(address: tuple[str, int]) -> tuple[float, bytes]:
        loop = asyncio.get_running_loop()
        before = loop.time()
        await asyncio.sleep(3600)
        slept = loop.time() - before
        reader, writer = await asyncio.open_connection(*address)
        writer.write(b"ping\n")
        line = await reader.readline()
        writer.close()
        await writer.wait_closed()
        return slept, line

    started = time.monotonic()
    with echo_server() as address:
        slept, line = virtual_time.run(main(address))
    assert 3600 <= slept < 3600.001 and line == b"ping\n"
    assert time.monotonic() - started < 60


class echo_server:
    """A line echo server on loopback, in a thread (real I/O for the virtual loop to wait on)."""

    def __enter__(self) -> tuple[str, int]:
        import socket
        import threading

        self.sock = socket.create_server(("127.0.0.1", 0))

        def serve() -> None:
            conn, _ = self.sock.accept()
            with conn:
                conn.sendall(conn.recv(64))

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()
        return self.sock.getsockname()[:2]

    def __exit__(self, *_: object) -> None:
        self.thread.join(10)
        self.sock.close()
