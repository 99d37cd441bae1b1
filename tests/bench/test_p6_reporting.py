"""P6's report says how far to trust its ratios: the ratio per repetition (not two medians'
quotient) with its range, the load its runs saw, how far the same code's CPU drifted between
repetitions, and how the runs went (loop passes, sockets ready); repetitions alternate their
order. No assertion is about time."""

from __future__ import annotations

import asyncio
import re
import selectors
import socket
from typing import Any

import pytest

import _summary
import p6_concurrency
import p6_storage


def run(cpu: float, **more: float) -> dict[str, Any]:
    """A worker's figures, as ``p6_concurrency.worker`` prints them."""
    figures = {"loop_cpu": cpu, "wall": 2 * cpu, "rss_mb": 100.0, "preempted": 10 * cpu, "passes": 50.0}
    return figures | {"ready": 9_000.0, "load_start": 2.0, "load": 3.0, "cpu": cpu} | more


def test_the_ratio_is_the_median_of_the_repetitions_ratios_with_their_range() -> None:
    tether = [run(12.0), run(10.0, load=8.5), run(15.0)]
    floor = [run(8.0), run(10.0), run(10.0, load_start=1.5)]
    cells = p6_concurrency.figures(tether, 1_000, floor)
    # 12/8, 10/10, 15/10: the median of the pairs is 1.50; the medians' quotient would say 1.20.
    assert cells[-1] == "1.50x (1.00-1.50)"
    assert cells[:2] == ["12.00", "10.00-15.00"]
    assert cells[4:8] == ["50%", "10", "50", "1.50"]  # CPU/wall, preempted/CPU s, passes, ready/request
    assert cells[9] == "2.0-8.5"  # the tether runs' loads, from a start to an end
    assert p6_concurrency.figures(floor, 1_000, floor)[-1] == "1.00x (1.00-1.00)"


def test_the_drift_is_the_same_codes_cpu_one_repetition_later() -> None:
    floor_stored = [run(8.0), run(7.0), run(9.1)]
    tether_stored = [run(10.0), run(11.0), run(10.0)]
    assert p6_concurrency.drift([tether_stored, floor_stored]) == "x0.88-1.30 (4 pairs)"
    assert p6_concurrency.drift([[run(10.0)], [run(8.0)]]) == "one repetition: not measured"


def test_repetitions_alternate_their_order() -> None:
    four = ["tether stored", "floor stored", "tether in memory", "floor in memory"]
    assert p6_concurrency.in_turn(four, 0) == four
    assert p6_concurrency.in_turn(four, 1) == four[::-1]
    assert p6_concurrency.in_turn(four, 2) == four


def test_the_loop_passes_and_ready_sockets_are_counted_and_the_selector_restored() -> None:
    left, right = socket.socketpair()

    async def main() -> dict[str, float]:
        loop: Any = asyncio.get_running_loop()
        selector: selectors.BaseSelector = loop._selector
        select = selector.select

        async def some_passes() -> None:
            reader, _ = await asyncio.open_connection(sock=left)
            for _ in range(5):
                await asyncio.sleep(0)
            right.sendall(b"ready\n")
            assert await reader.readline() == b"ready\n"

        figures = await p6_concurrency.on_loop_thread(some_passes())
        assert selector.select == select
        return figures

    try:
        figures = asyncio.run(main())
    finally:
        left.close()
        right.close()
    assert figures["passes"] >= 6
    assert figures["ready"] >= 1
    assert figures["loop_cpu"] >= 0


def test_the_selector_is_restored_when_the_run_fails() -> None:
    """A run that raises leaves the loop's selector as it was: the loop (asyncio.run's, shutting
    down its generators and executor) goes on selecting after it."""

    async def main() -> None:
        loop: Any = asyncio.get_running_loop()
        selector: selectors.BaseSelector = loop._selector
        select = selector.select

        async def fails() -> None:
            raise RuntimeError("the run failed")

        with pytest.raises(RuntimeError, match="the run failed"):
            await p6_concurrency.on_loop_thread(fails())
        assert selector.select == select

    asyncio.run(main())


def test_the_summary_prints_the_load_range_its_runs_saw(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_summary, "RATIOS", [])
    monkeypatch.setattr(_summary, "bench", "p6")
    monkeypatch.setattr(_summary.os, "getloadavg", lambda: (4.0, 4.0, 4.0))
    _summary.record("with loads", 1.5, "floor", samples=[1.4, 1.6], loads=[2.0, 8.54, 3.0])
    _summary.record("one load", 1.2, "floor", samples=[1.2], loads=[3.0, 3.04])
    _summary.record("without loads", 1.1, "floor")
    _summary.print_summary(["p6"])
    lines = capsys.readouterr().out.splitlines()
    table = lines[lines.index(next(line for line in lines if line.startswith("---"))) + 1 :]
    rows = {cells[1]: cells[3:5] for cells in (re.split(r"\s{2,}", line) for line in table[:3])}
    assert rows == {
        "with loads": ["1.40-1.60", "2.0-8.5"],
        "one load": ["1.20-1.20", "3.0"],
        "without loads": ["-", "4.0"],  # the load when it was recorded
    }


def test_p6_storage_states_the_drift_its_difference_carries() -> None:
    messages = p6_storage.SESSIONS * p6_concurrency.PROMPTS * 4
    stored = [run(10.0), run(10.0 + 0.000_050 * messages), run(10.0)]  # +50, then -50 µs a message
    in_memory = [run(8.0), run(8.0 - 0.000_080 * messages)]
    assert p6_storage.round_to_round(stored, in_memory) == pytest.approx(80.0)
