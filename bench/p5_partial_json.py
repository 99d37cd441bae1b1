"""P5: a tool-argument object streamed in 1-character deltas, parsed as it grows.

``tether.ai.partial_json.PartialJson`` keeps ``arguments`` an object at every delta by re-parsing
with jiter's partial mode on a geometric cadence. The reference is the naive approach: re-parse
the whole buffer (jiter, partial mode) on every delta, which is quadratic. For the larger sizes
the naive total is estimated from every 100th delta (each timed parse stands for 100), since
running it in full would take minutes.

Times are CPU seconds of this process (steadier than wall time on a shared machine).

Goal (issue 4): <= 50 ms total at 100 KB, growing linearly (25/50/100 KB printed).
"""

from __future__ import annotations

import json
import statistics
import time
from functools import partial

import jiter

from _summary import interleaved, record_paired
from tether.ai.partial_json import PartialJson

SIZES_KB = (25, 50, 100)
SAMPLE_EVERY = 100


def arguments_text(size: int) -> str:
    """A realistic large argument: a file write with path, content lines and a small options map."""
    lines: list[str] = []
    total = 0
    number = 0
    while total < size:
        line = f'    result_{number} = compute(value_{number}, factor={number % 7}) # "step" {number}'
        lines.append(line)
        total += len(line) + 1
        number += 1
    text = json.dumps(
        {"path": "src/generated/module.py", "content": "\n".join(lines), "options": {"mode": "w"}}
    )
    return text[:size] if len(text) > size else text


def ours(text: str) -> tuple[float, int]:
    start = time.process_time()
    parsed = PartialJson()
    for char in text:
        parsed.add(char)
    final = parsed.finish()
    elapsed = time.process_time() - start
    return elapsed, len(final.get("content", ""))


def tether_cpu(text: str) -> float:
    return ours(text)[0]


def naive(text: str, sample_every: int) -> float:
    """Seconds to re-parse the whole buffer on every delta (sampled when ``sample_every`` > 1)."""
    data = text.encode()
    elapsed = 0.0
    for end in range(sample_every, len(data) + 1, sample_every):
        start = time.process_time()
        jiter.from_json(data[:end], partial_mode="trailing-strings")
        elapsed += time.process_time() - start
    return elapsed * sample_every


ROUNDS = 3
"""Interleaved rounds (tether, then the naive parser); the ratio is taken within each round."""


def main() -> None:
    print(
        f"P5: tool-call arguments in 1-character deltas (CPU, medians of {ROUNDS} interleaved rounds; "
        "µs/delta flat = linear growth)"
    )
    print(f"{'size':>7} {'tether ms':>10} {'µs/delta':>9} {'naive ms':>11} {'naive/tether (range)':>22}")
    for size_kb in SIZES_KB:
        text = arguments_text(size_kb * 1024)
        sample = 1 if size_kb <= 25 else SAMPLE_EVERY
        mine, theirs = interleaved([partial(tether_cpu, text), partial(naive, text, sample)], ROUNDS)
        note = "" if sample == 1 else f" (sampled 1/{sample})"
        paired = record_paired(f"{size_kb} KB of arguments", mine, theirs, "naive re-parse per delta")
        tether, reference = statistics.median(mine), statistics.median(theirs)
        print(
            f"{size_kb:>5}KB {tether * 1e3:>10.1f} {tether / len(text) * 1e6:>9.3f} {reference * 1e3:>11.0f} "
            f"{1 / statistics.median(paired):>9.0f}x ({1 / max(paired):.0f}-{1 / min(paired):.0f}){note}"
        )
    print("goal: <= 50 ms at 100 KB, linear growth")


if __name__ == "__main__":
    main()
