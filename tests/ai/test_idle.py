"""``IdleWatch``: a read that waits too long ends with ``TimeoutError``, with one timer per
stream rather than one per read (the stream-level behaviour is in providers/test_stream_faults)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tether.ai.idle import IdleWatch


async def _after(seconds: float, value: str) -> str:
    await asyncio.sleep(seconds)
    return value


async def test_a_read_waiting_longer_than_the_limit_times_out() -> None:
    watch = IdleWatch(0.05)
    with pytest.raises(TimeoutError):
        await watch.read(asyncio.Event().wait())
    assert await watch.read(_after(0, "next")) == "next", "the watch serves the next read"
    watch.close()


async def test_reads_that_each_arrive_in_time_never_time_out_however_long_the_stream() -> None:
    watch = IdleWatch(0.1)
    got = [await watch.read(_after(0.04, str(i))) for i in range(6)]  # 0.24 s in all
    watch.close()
    assert got == [str(i) for i in range(6)]


async def test_a_thousand_reads_schedule_one_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    loop = asyncio.get_running_loop()
    scheduled: list[float] = []
    call_at = loop.call_at

    def counting_call_at(when: float, callback: Any, *args: Any) -> asyncio.TimerHandle:
        scheduled.append(when)
        return call_at(when, callback, *args)

    monkeypatch.setattr(loop, "call_at", counting_call_at)
    watch = IdleWatch(30)
    for i in range(1000):
        assert await watch.read(_after(0, str(i))) == str(i)
    watch.close()
    assert len(scheduled) == 1


async def test_the_timer_firing_between_reads_rearms_for_the_next_read() -> None:
    watch = IdleWatch(0.05)
    assert await watch.read(_after(0, "first")) == "first"
    await asyncio.sleep(0.1)  # the timer fires with no read in progress
    with pytest.raises(TimeoutError):
        await watch.read(asyncio.Event().wait())
    watch.close()


async def test_another_cancellation_stays_a_cancellation() -> None:
    """An abort cancels the reading task: that is not an idle timeout."""
    watch = IdleWatch(30)
    reading = asyncio.create_task(watch.read(asyncio.Event().wait()))
    await asyncio.sleep(0.01)
    reading.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reading
    watch.close()


async def test_closing_drops_the_timer() -> None:
    loop: Any = asyncio.get_running_loop()

    def live_timers() -> int:
        return sum(not handle.cancelled() for handle in loop._scheduled)

    watch = IdleWatch(30)
    await watch.read(_after(0, "x"))
    armed = live_timers()
    watch.close()
    assert live_timers() == armed - 1
