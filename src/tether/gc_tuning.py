"""Python's cyclic garbage collector set for an agent process: a setting for the process's owner.

The collector is process-wide, so tether's library never changes its settings on its own: the
front ends that serve many sessions (``tether serve``, ``tether worker``) call ``tune_gc`` once
their start-up is done (``cli/collector.py``), and a program that embeds tether calls it at its
own start-up if it wants the same (``docs/library.md``). A run of one session (print, RPC, ACP,
interactive) only freezes its start-up.

Why: tether's objects form almost no reference cycles, so reference counting frees them at once
and the collector finds next to nothing, yet it walks what is alive. With many sessions in
flight that is a lot: each streaming request keeps ~350 container objects alive for its ~50 ms
(coroutines, closures, the HTTP exchange), so with 1,000 sessions at Python's default young
threshold (700 new objects) they survive ~1,400 young collections, are promoted, and set off
~130 middle and ~12 full collections walking the whole heap: 2.5 s of a 12 s run
(``bench/p6_concurrency.py``).
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 50_000
"""Net new container objects between young collections (Python's default: 700).

High enough that most of a request's objects die of reference counting before a collection
sees them; low enough that cyclic garbage waits for at most this many objects, a few megabytes.
Measured at 1,000 sessions in flight (collector time of a ~10 s run, ``gc.callbacks``): 700,
~2.5 s; 10,000, ~0.8 s (93 young, 8 middle collections); 50,000, ~0.6 s (13 young, 1 middle);
100,000, ~0.35 s (6 young), which doubles what cyclic garbage may hold for 2-3% more."""


def tune_gc(young: int = YOUNG_THRESHOLD) -> None:
    """Freeze what exists now and raise the collector's young threshold to ``young``.

    Call it once, when start-up is done (modules imported, configuration read): what start-up
    made lives as long as the process, and once frozen (``gc.freeze``) no collection examines it
    again. A cycle among those objects that dies later is never freed, so call it after start-up,
    not in the middle of work. The middle and oldest thresholds keep their ratios (10 and 10
    young collections): cycles that live long are still found, just less often.
    """
    gc.freeze()
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(young, middle, oldest)
