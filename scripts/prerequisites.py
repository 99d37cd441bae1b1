"""What `make demo` and `make test` need from the system, checked before anything is installed.

    python3 scripts/prerequisites.py demo|test [--local-stamp FILE] [--wheels DIR]

Prints one line per missing program, naming the Debian package that brings it, and exits 1;
prints nothing and exits 0 when all is there. Standard library only: it runs with the Python
that will make the venv, before the venv exists.

Everything the package registries can provide comes from them instead: the Python packages,
pyright's Node (``pyright[nodejs]``), and cmake and Ninja for the llama.cpp build (scikit-build-core
fetches them from PyPI when the system has none). What is left is below: a C/C++ compiler and
binutils for the one-time llama.cpp build (not needed once it is built: ``--local-stamp`` is the
venv's stamp, ``--wheels`` the folder of the kept wheel), and for the tests the PostgreSQL server
programs, tmux, bubblewrap, and Node 20.6+ with npm (the tests that run pi's own code and the npm MCP servers).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

NODE_MIN = (20, 6)
"""pi-coding-agent 0.73.1's ``engines`` (tests/rpc/interop); 1.6.0 brings its own Node."""


def python_problems() -> list[str]:
    if sys.version_info < (3, 11):  # noqa: UP036 (runs on whatever python3 a fresh machine has)
        version = ".".join(map(str, sys.version_info[:3]))
        return [f"Python 3.11 or newer (this is {version}): pick one with `make PYTHON=/path/to/python3`"]
    try:
        import ensurepip  # noqa: F401  (Debian splits it out of python3)
        import venv  # noqa: F401
    except ImportError:
        minor = f"{sys.version_info[0]}.{sys.version_info[1]}"
        return [f"venv for {sys.executable}: apt-get install python{minor}-venv"]
    return []


def build_problems(local_stamp: Path | None, wheels: Path | None) -> list[str]:
    """The llama.cpp build's programs; none once the venv has the stack, only objdump (the
    portability check) when the built wheel is kept."""
    if local_stamp is not None and local_stamp.exists():
        return []
    problems: list[str] = []
    built = wheels is not None and any(wheels.glob("llama_cpp_python-*.whl"))
    if not built:
        if shutil.which("cc") is None and shutil.which("gcc") is None:
            problems.append("a C compiler (cc), to build llama.cpp once: apt-get install gcc")
        if shutil.which("c++") is None and shutil.which("g++") is None:
            problems.append("a C++ compiler (c++), to build llama.cpp once: apt-get install g++")
    if shutil.which("objdump") is None:
        problems.append("objdump, to check the llama.cpp build's machine code: apt-get install binutils")
    return problems


def postgres_found() -> bool:
    """Where ``tether.testing.postgres`` looks: $TETHER_PG_BIN, PATH, /usr/lib/postgresql/*/bin."""
    configured = os.environ.get("TETHER_PG_BIN")
    if configured:
        return (Path(configured) / "initdb").is_file() and (Path(configured) / "postgres").is_file()
    if shutil.which("initdb") is not None and shutil.which("postgres") is not None:
        return True
    return bool(glob.glob("/usr/lib/postgresql/*/bin/initdb"))


def node_version(node: str) -> tuple[int, ...] | None:
    try:
        done = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return None
    text = done.stdout.strip().lstrip("v")
    parts = text.split(".")
    return (
        tuple(int(p) for p in parts[:2]) if len(parts) >= 2 and all(p.isdigit() for p in parts[:2]) else None
    )


def test_problems() -> list[str]:
    problems: list[str] = []
    if not postgres_found():
        problems.append(
            "the PostgreSQL server programs (initdb, postgres): apt-get install postgresql "
            "(or set TETHER_PG_BIN to their folder)"
        )
    if shutil.which("tmux") is None:
        problems.append("tmux, for the terminal UI tests: apt-get install tmux")
    if shutil.which("chromium") is None:
        problems.append("chromium, the browser the tether serve page is tested in: apt-get install chromium")
    if shutil.which("bwrap") is None:
        problems.append(
            "bubblewrap, the sandbox of the tools' commands (docs/sandbox.md): apt-get install bubblewrap"
        )
    node = shutil.which("node")
    version = node_version(node) if node is not None else None
    wanted = ".".join(map(str, NODE_MIN))
    if node is None:
        problems.append(f"node {wanted} or newer, for the Node tests: apt-get install nodejs (Debian 13)")
    elif version is None or version < NODE_MIN:
        shown = ".".join(map(str, version)) if version else "unknown"
        problems.append(
            f"node {wanted} or newer, for the Node tests (this one is {shown}): "
            "apt-get install nodejs from Debian 13 or NodeSource"
        )
    if shutil.which("npm") is None:
        problems.append("npm, for the Node tests' packages: apt-get install npm")
    return problems


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", choices=["demo", "test"])
    parser.add_argument("--local-stamp", type=Path, help="the venv's stamp of an installed local model stack")
    parser.add_argument("--wheels", type=Path, help="the folder where the built llama.cpp wheel is kept")
    args = parser.parse_args(argv)
    problems = python_problems() + build_problems(args.local_stamp, args.wheels)
    if args.target == "test":
        problems += test_problems()
    for problem in problems:
        print(f"missing: {problem}", file=sys.stderr)
    if problems:
        print(f"`make {args.target}` stops here: install the above and run it again.", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
