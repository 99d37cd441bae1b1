"""Benchmark: loading the shipped model catalog and resolving model names.

Figures:
- catalog load (read + parse + validate 444 ``ModelInfo`` records) beside ``json.loads`` of the
  same bytes (the floor: parsing alone);
- ``find_model("provider/id")`` and ``get_model(provider, id)`` per call (each re-checks the user's
  ``models.json`` with one ``stat``) beside a plain dict lookup of the same keys (the floor);
- ``supported_thinking_levels`` + ``clamp_thinking_level`` per model.
Run: ``.venv/bin/python bench/catalog_lookup.py``.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import timeit
from collections.abc import Callable
from importlib import resources

from _summary import interleaved, record_paired

ROUNDS = 5
"""Interleaved rounds: each round times every measure once; ratios are taken within a round."""


def per_call(stmt: Callable[[], object], number: int, per: int = 1) -> Callable[[], float]:
    """A measure: seconds per call of ``stmt`` over ``number`` calls, divided by ``per``."""
    return lambda: timeit.timeit(stmt, number=number) / number / per


def main() -> None:
    os.environ["TETHER_HOME"] = tempfile.mkdtemp(prefix="tether-bench-")
    from tether.ai import models
    from tether.ai.thinking import LEVELS, clamp_thinking_level, supported_thinking_levels

    raw = resources.files("tether.ai").joinpath("catalog.json").read_bytes()
    registry = models.ModelRegistry(models.load_catalog(raw))
    keys = list(registry.catalog.models)
    refs = [f"{p}/{i}" for p, i in keys]
    plain = {f"{p}/{i}": m for (p, i), m in registry.catalog.models.items()}

    def find_all() -> None:
        for ref in refs:
            registry.find_model(ref)

    def get_all() -> None:
        for provider, model_id in keys:
            registry.get_model(provider, model_id)

    def dict_all() -> None:
        for ref in refs:
            plain[ref]

    def thinking_all() -> None:
        for model in registry.catalog.models.values():
            supported_thinking_levels(model)
            for level in LEVELS:
                clamp_thinking_level(model, level)

    n = len(refs)
    rounds = interleaved(
        [
            per_call(lambda: models.load_catalog(raw), 20),
            per_call(lambda: json.loads(raw), 20),
            per_call(find_all, 5, n),
            per_call(get_all, 5, n),
            per_call(dict_all, 50, n),
            per_call(thinking_all, 5, n),
        ],
        ROUNDS,
    )
    load, floor, find, get, lookup, thinking = (statistics.median(r) for r in rounds)
    loads, floors, finds, gets, lookups, _ = rounds
    print(f"catalog: {n} models, {len(raw) / 1024:.0f} KiB; medians of {ROUNDS} interleaved rounds")
    print(
        f"load catalog        {load * 1e3:8.2f} ms    json.loads floor {floor * 1e3:6.2f} ms   ratio {load / floor:5.1f}x"
    )
    print(
        f"find_model          {find * 1e6:8.2f} µs    dict lookup      {lookup * 1e6:6.3f} µs   ratio {find / lookup:5.0f}x"
    )
    print(
        f"get_model           {get * 1e6:8.2f} µs    dict lookup      {lookup * 1e6:6.3f} µs   ratio {get / lookup:5.0f}x"
    )
    record_paired("load catalog", loads, floors, "json.loads")
    record_paired("find_model", finds, lookups, "dict lookup")
    record_paired("get_model", gets, lookups, "dict lookup")
    print(f"levels + 7 clamps   {thinking * 1e6:8.2f} µs per model")


if __name__ == "__main__":
    main()
