"""``IdleWatch``: one lazily re-armed timer per request, shared by the wait for the response's
headers and the reads of its body. Its own expiry is a
``TimeoutError`` (the cancellation consumed); a cancellation from elsewhere stays one; a closed
watch arms again on the next wait (a retry reuses it)."""

from __future__ import annotations

import asyncio

import pytest

from tether.ai.idle_watch import IdleWatch


async def test_a_wait_that_outlasts_the_idle_time_is_a_timeout_and_leaves_the_task_uncancelled() -> None:
    watch = IdleWatch(asyncio.get_running_loop(), 0.02)
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    with pytest.raises(TimeoutError):
        await watch.wait(never)
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    watch.close()


async def test_a_wait_that_ends_in_time_gives_its_result() -> None:
    watch = IdleWatch(asyncio.get_running_loop(), 5.0)
    assert await watch.wait(asyncio.sleep(0, "headers")) == "headers"
    watch.close()


async def test_a_cancellation_from_elsewhere_stays_a_cancellation() -> None:
    watch = IdleWatch(asyncio.get_running_loop(), 5.0)
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    waiting = asyncio.create_task(watch.wait(never))
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    watch.close()


async def test_a_closed_watch_bounds_the_next_wait_again() -> None:
    """A retry: the first attempt's wait closed the watch, the second wait must still end."""
    loop = asyncio.get_running_loop()
    watch = IdleWatch(loop, 0.02)
    with pytest.raises(TimeoutError):
        await watch.wait(loop.create_future())
    watch.close()
    with pytest.raises(TimeoutError):
        await watch.wait(loop.create_future())
    watch.close()
