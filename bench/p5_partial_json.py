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
import time

import jiter

from _summary import record
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


def naive(text: str, sample_every: int) -> float:
    """Seconds to re-parse the whole buffer on every delta (sampled when ``sample_every`` > 1)."""
    data = text.encode()
    elapsed = 0.0
    for end in range(sample_every, len(data) + 1, sample_every):
        start = time.process_time()
        jiter.from_json(data[:end], partial_mode="trailing-strings")
        elapsed += time.process_time() - start
    return elapsed * sample_every


def main() -> None:
    print("P5: tool-call arguments in 1-character deltas (best of 3; µs/delta flat = linear growth)")
    print(f"{'size':>7} {'tether ms':>10} {'µs/delta':>9} {'naive ms':>11} {'naive/tether':>13}")
    for size_kb in SIZES_KB:
        text = arguments_text(size_kb * 1024)
        best = min(ours(text)[0] for _ in range(3))
        sample = 1 if size_kb <= 25 else SAMPLE_EVERY
        reference = naive(text, sample)
        note = "" if sample == 1 else f" (sampled 1/{sample})"
        record(f"{size_kb} KB of arguments", best / reference, "naive re-parse per delta")
        print(
            f"{size_kb:>5}KB {best * 1e3:>10.1f} {best / len(text) * 1e6:>9.3f} {reference * 1e3:>11.0f} "
            f"{reference / best:>12.0f}x{note}"
        )
    print("goal: <= 50 ms at 100 KB, linear growth")


if __name__ == "__main__":
    main()
