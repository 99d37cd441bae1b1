"""Run the benchmarks: every ``bench/*.py`` module with a ``main()``, or the ones named.

Usage: ``python bench/run.py [NAME ...]`` (names without ``.py``; ``make bench`` runs them all).
Each benchmark prints its own table and its ratio to the reference it names, and records its
headline ratios (``bench/_summary.py``); the run ends with one table of them all. Modules whose
name starts with ``_`` are helpers, not benchmarks. Exit status is non-zero if a benchmark raised.
"""

from __future__ import annotations

import importlib
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent


def available() -> list[str]:
    """Benchmark module names, sorted: every ``*.py`` here except this runner and ``_`` helpers."""
    return sorted(p.stem for p in HERE.glob("*.py") if p.stem != "run" and not p.stem.startswith("_"))


def main(argv: list[str] | None = None) -> int:
    names = sys.argv[1:] if argv is None else argv
    known = available()
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; available: {', '.join(known)}", file=sys.stderr)
        return 2
    sys.path.insert(0, str(HERE))
    import _summary

    failed: list[str] = []
    ran: list[str] = []
    for name in names or known:
        module = importlib.import_module(name)
        if not callable(getattr(module, "main", None)):
            continue
        ran.append(name)
        _summary.bench = name
        print(f"== {name}")
        start = time.perf_counter()
        try:
            module.main()
        except Exception:
            traceback.print_exc()
            failed.append(name)
        print(f"({time.perf_counter() - start:.1f} s)\n")
    _summary.print_summary(ran)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
