"""scripts/prerequisites.py: `make demo` and `make test` stop at once, one line per missing
program naming its Debian package, when the system lacks what the registries cannot provide.

PATH points at a folder of stand-in programs (shell scripts) so each case is what a fresh
machine would show; the PostgreSQL search is pointed at a folder too (``TETHER_PG_BIN``).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from reference_paths import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "prerequisites.py"


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("prerequisites", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


prerequisites = _load_script()


def _programs(folder: Path, **scripts: str) -> Path:
    """A folder of executables named as the keywords, each running its shell text."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in scripts.items():
        path = folder / name.replace("_", "+")
        path.write_text(f"#!/bin/sh\n{text}\n")
        path.chmod(0o755)
    return folder


def _run(tmp_path: Path, target: str, bin_dir: Path, *args: str, pg_bin: Path | None = None) -> list[str]:
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "TETHER_PG_BIN": str(pg_bin or tmp_path / "no-pg")}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), target, *args], capture_output=True, text=True, env=env, check=False
    )
    lines = done.stderr.splitlines()
    assert (done.returncode == 0) == (not lines), done.stderr
    return lines


ALL_BUILD = {"cc": "true", "c__": "true", "objdump": "true"}
ALL_TEST = {"tmux": "true", "chromium": "true", "bwrap": "true", "npm": "true", "node": "echo v22.1.0"}


@pytest.fixture
def pg_bin(tmp_path: Path) -> Path:
    return _programs(tmp_path / "pg", initdb="true", postgres="true")


@pytest.mark.subprocess
def test_a_machine_with_everything_passes_silently(tmp_path: Path, pg_bin: Path) -> None:
    bin_dir = _programs(tmp_path / "bin", **ALL_BUILD, **ALL_TEST)
    assert _run(tmp_path, "test", bin_dir, pg_bin=pg_bin) == []
    assert _run(tmp_path, "demo", bin_dir) == []


@pytest.mark.subprocess
def test_a_bare_machine_gets_one_line_per_program_with_its_debian_package(tmp_path: Path) -> None:
    lines = _run(tmp_path, "test", _programs(tmp_path / "empty"))

    packages = [line.rpartition("apt-get install ")[2].split()[0] for line in lines[:-1]]
    assert packages == [
        "gcc",
        "g++",
        "binutils",
        "postgresql",
        "tmux",
        "chromium",
        "bubblewrap",
        "nodejs",
        "npm",
    ]
    assert all(line.startswith("missing: ") for line in lines[:-1])
    assert lines[-1] == "`make test` stops here: install the above and run it again."


@pytest.mark.subprocess
def test_demo_needs_no_test_programs(tmp_path: Path) -> None:
    lines = _run(tmp_path, "demo", _programs(tmp_path / "bin", **ALL_BUILD))
    assert lines == []


@pytest.mark.subprocess
def test_an_old_node_is_named_with_its_version(tmp_path: Path, pg_bin: Path) -> None:
    bin_dir = _programs(tmp_path / "bin", **ALL_BUILD, **{**ALL_TEST, "node": "echo v18.19.0"})
    (line, _) = _run(tmp_path, "test", bin_dir, pg_bin=pg_bin)
    assert "node 20.6 or newer" in line and "this one is 18.19" in line


@pytest.mark.subprocess
def test_no_compiler_needed_once_the_wheel_is_built_nor_anything_once_installed(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "llama_cpp_python-0.3.36-cp311-cp311-linux_x86_64.whl").write_bytes(b"")
    only_objdump = _programs(tmp_path / "bin", objdump="true")
    assert _run(tmp_path, "demo", only_objdump, "--wheels", str(wheels)) == []

    stamp = tmp_path / "stamp"
    stamp.touch()
    lines = _run(
        tmp_path, "demo", _programs(tmp_path / "none"), "--wheels", str(wheels), "--local-stamp", str(stamp)
    )
    assert lines == []


def test_postgres_is_looked_for_where_the_tests_look(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tether.testing.postgres import BIN_ENV, find_bin_dir

    folder = _programs(tmp_path / "pg", initdb="true", postgres="true")
    monkeypatch.setenv(BIN_ENV, str(folder))
    assert prerequisites.postgres_found() and find_bin_dir() == folder
    monkeypatch.setenv(BIN_ENV, str(tmp_path / "elsewhere"))
    assert not prerequisites.postgres_found()
