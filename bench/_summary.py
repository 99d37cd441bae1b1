"""The headline ratios of every benchmark, gathered for the one table ``bench/run.py`` ends with.

Each benchmark prints its own tables in its own units; here it also records each comparison in
one unit: tether's cost over the reference's cost (time, CPU or bytes; a throughput is turned
around), so below 1.00 tether is cheaper and every row of the summary reads the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from _table import print_table


@dataclass(frozen=True)
class Ratio:
    bench: str
    measure: str
    ratio: float
    reference: str
    goal: str


RATIOS: list[Ratio] = []
bench = ""
"""The benchmark running now; ``bench/run.py`` sets it before each ``main()``."""


def record(measure: str, ratio: float, reference: str, goal: str = "") -> None:
    """Note one comparison: ``ratio`` is tether's cost / the reference's (< 1: tether is cheaper)."""
    RATIOS.append(Ratio(bench, measure, ratio, reference, goal))


def print_summary(ran: list[str]) -> None:
    """One row per recorded ratio, in the order the benchmarks ran; a row for each benchmark
    that recorded none (it failed, lacked its reference, or compares against no reference)."""
    rows: list[list[str]] = []
    for name in ran:
        mine = [r for r in RATIOS if r.bench == name]
        rows += [[name, r.measure, f"{r.ratio:.2f}x", r.reference, r.goal] for r in mine]
        if not mine:
            rows.append([name, "(no ratio recorded)", "-", "", ""])
    print_table(
        "Summary: tether's cost / the reference's (< 1.00x: tether is cheaper)",
        ["bench", "measure", "ratio", "reference", "goal"],
        rows,
    )
