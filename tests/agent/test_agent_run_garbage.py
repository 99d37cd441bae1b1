"""A finished run leaves nothing for the garbage collector (``garbage_support``)."""

from __future__ import annotations

from garbage_support import check_runs_leave_no_garbage


async def test_a_finished_run_and_its_tool_batches_need_no_collection() -> None:
    await check_runs_leave_no_garbage()
