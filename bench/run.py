"""Run every benchmark in this folder (``bench/p*_*.py``), one after the other.

Each benchmark is a plain script with a ``main()`` that prints its own figures and ratios; this
only discovers and runs them, in a fresh interpreter each, so one cannot warm up the next.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def main() -> int:
    here = Path(__file__).resolve().parent
    failed = 0
    for script in sorted(here.glob("p*_*.py")):
        print(f"\n=== {script.name} ===", flush=True)
        failed += subprocess.run([sys.executable, str(script)], check=False).returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
