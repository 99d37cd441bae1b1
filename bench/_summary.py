"""The headline ratios of every benchmark, gathered for the one table ``bench/run.py`` ends with.

Each benchmark prints its own tables in its own units; here it also records each comparison in
one unit: tether's cost over the reference's cost (time, CPU or bytes; a throughput is turned
around), so below 1.00 tether is cheaper and every row of the summary reads the same way.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from _table import print_table


@dataclass(frozen=True)
class Ratio:
    bench: str
    measure: str
    ratio: float
    reference: str
    goal: str
    spread: tuple[float, float] | None
    """The lowest and highest ratio over the repetitions, when the benchmark repeated."""
    load: tuple[float, float] | None
    """The lowest and highest 1-minute load average the measurement ran under: the runs' own when
    the benchmark gave them, else the load when the ratio was recorded."""


RATIOS: list[Ratio] = []
bench = ""
"""The benchmark running now; ``bench/run.py`` sets it before each ``main()``."""


LOAD_AT_START = os.getloadavg() if hasattr(os, "getloadavg") else None
"""The machine's load when the benchmarks began: a loaded machine stretches every figure."""


def record(
    measure: str,
    ratio: float,
    reference: str,
    goal: str = "",
    samples: Sequence[float] = (),
    loads: Sequence[float] = (),
) -> None:
    """Note one comparison: ``ratio`` is tether's cost / the reference's (< 1: tether is cheaper);
    ``samples``: the ratio of each repetition (paired runs), printed as the spread; ``loads``: the
    load averages its runs saw (a CPU second costs more on a loaded machine, and not alike for
    every program), printed as their range instead of the load now."""
    spread = (min(samples), max(samples)) if samples else None
    if not loads and hasattr(os, "getloadavg"):
        loads = [os.getloadavg()[0]]
    load = (min(loads), max(loads)) if loads else None
    RATIOS.append(Ratio(bench, measure, ratio, reference, goal, spread, load))


def record_paired(
    measure: str, mine: Sequence[float], theirs: Sequence[float], reference: str, goal: str = ""
) -> list[float]:
    """Record tether's cost over the reference's from paired repetitions (``mine[i]`` and
    ``theirs[i]`` measured in the same round): the median of the per-round ratios, with their
    spread. Returns the ratios."""
    paired = [a / b for a, b in zip(mine, theirs, strict=True)]
    record(measure, statistics.median(paired), reference, goal, samples=paired)
    return paired


def interleaved(measures: Sequence[Callable[[], float]], rounds: int) -> list[list[float]]:
    """Each measure's figure per round (``measures`` return one figure each call), run in turn
    within every round, so load that comes and goes hits them alike."""
    figures: list[list[float]] = [[] for _ in measures]
    for _ in range(rounds):
        for figure, measure in zip(figures, measures, strict=True):
            figure.append(measure())
    return figures


def cpu_seconds(action: Callable[[], object], number: int = 1) -> float:
    """CPU seconds of this process per call of ``action``, over ``number`` calls."""
    start = time.process_time()
    for _ in range(number):
        action()
    return (time.process_time() - start) / number


def peak_rss_mb() -> float:
    """This process's own peak resident set (``VmHWM``), in MB.

    Not ``ru_maxrss``: Linux carries it over ``fork`` and ``exec``, so a child of a big process
    (``make bench`` runs every benchmark in one) reports its parent's peak as its own.
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def print_summary(ran: list[str]) -> None:
    """One row per recorded ratio, in the order the benchmarks ran; a row for each benchmark
    that recorded none (it failed, lacked its reference, or compares against no reference)."""
    rows: list[list[str]] = []
    for name in ran:
        mine = [r for r in RATIOS if r.bench == name]
        rows += [
            [name, r.measure, f"{r.ratio:.2f}x", _spread(r), _load(r), r.reference, r.goal] for r in mine
        ]
        if not mine:
            rows.append([name, "(no ratio recorded)", "-", "", "", "", ""])
    print_table(
        "Summary: tether's cost / the reference's (< 1.00x: tether is cheaper); spread: lowest-highest "
        "ratio over the repetitions; load: the 1-minute load average its runs saw, or when it was taken",
        ["bench", "measure", "ratio", "spread", "load", "reference", "goal"],
        rows,
    )
    if LOAD_AT_START is not None:
        start = " ".join(f"{x:.2f}" for x in LOAD_AT_START)
        end = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"load average (1, 5, 15 min) at start: {start}; at end: {end}; cores: {os.cpu_count()}")


def _load(ratio: Ratio) -> str:
    if ratio.load is None:
        return "-"
    low, high = ratio.load
    return f"{low:.1f}" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}-{high:.1f}"


def _spread(ratio: Ratio) -> str:
    return f"{ratio.spread[0]:.2f}-{ratio.spread[1]:.2f}" if ratio.spread is not None else "-"
