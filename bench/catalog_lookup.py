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
import tempfile
import timeit
from importlib import resources

from _summary import record


def best(stmt: object, number: int, repeat: int = 5) -> float:
    """Best per-call seconds over ``repeat`` runs of ``number`` calls."""
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number  # type: ignore[arg-type]


def main() -> None:
    os.environ["TETHER_HOME"] = tempfile.mkdtemp(prefix="tether-bench-")
    from tether.ai import models
    from tether.ai.thinking import LEVELS, clamp_thinking_level, supported_thinking_levels

    raw = resources.files("tether.ai").joinpath("catalog.json").read_bytes()
    load = best(lambda: models.load_catalog(raw), number=20)
    floor = best(lambda: json.loads(raw), number=20)
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
    find = best(find_all, number=5) / n
    get = best(get_all, number=5) / n
    lookup = best(dict_all, number=50) / n
    thinking = best(thinking_all, number=5) / n
    print(f"catalog: {n} models, {len(raw) / 1024:.0f} KiB")
    print(
        f"load catalog        {load * 1e3:8.2f} ms    json.loads floor {floor * 1e3:6.2f} ms   ratio {load / floor:5.1f}x"
    )
    print(
        f"find_model          {find * 1e6:8.2f} µs    dict lookup      {lookup * 1e6:6.3f} µs   ratio {find / lookup:5.0f}x"
    )
    print(
        f"get_model           {get * 1e6:8.2f} µs    dict lookup      {lookup * 1e6:6.3f} µs   ratio {get / lookup:5.0f}x"
    )
    record("load catalog", load / floor, "json.loads")
    record("find_model", find / lookup, "dict lookup")
    record("get_model", get / lookup, "dict lookup")
    print(f"levels + 7 clamps   {thinking * 1e6:8.2f} µs per model")


if __name__ == "__main__":
    main()
