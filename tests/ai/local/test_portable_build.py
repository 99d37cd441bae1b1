"""The llama.cpp build of ``scripts/install_local.py``: portable machine code, short progress lines.

A ``-march=native`` build on an Intel Xeon with AMX compiled ggml's AMX kernels, which GCC 12
miscompiles (SIGSEGV in ``make demo`` and ``make test``). The installed libraries must hold no
AVX-512 or AMX instruction, whatever CPU built them: that test fails on any machine if the build
flags regress. The detector itself is checked on an object file assembled here from real
AVX-512, AMX and AVX2 instructions, so the check cannot pass by seeing nothing.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from reference_paths import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "install_local.py"
X86_64 = platform.machine() in ("x86_64", "AMD64")


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("install_local", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


install_local = _load_script()


def _assemble(tmp_path: Path, name: str, instructions: list[str]) -> Path:
    source = tmp_path / f"{name}.s"
    source.write_text("".join(f"\t{line}\n" for line in instructions))
    obj = tmp_path / f"{name}.o"
    subprocess.run(["as", str(source), "-o", str(obj)], check=True, capture_output=True)
    return obj


@pytest.mark.local_model
@pytest.mark.subprocess
@pytest.mark.skipif(not X86_64, reason="AVX-512 and AMX are x86-64 instruction sets")
def test_installed_llama_cpp_libraries_hold_no_avx512_or_amx_code() -> None:
    libraries = install_local.installed_libraries()
    if not libraries:
        message = "llama-cpp-python is not installed (make .venv/.installed-local-...; see the Makefile)"
        if os.environ.get("TETHER_REQUIRE_LOCAL"):
            pytest.fail(f"TETHER_REQUIRE_LOCAL is set but {message}")
        pytest.skip(message)
    names = [library.name for library in libraries]
    # ggml's CPU backend is where the SIMD kernels live: it must be among what was checked.
    assert any(name.startswith(("libggml-cpu", "libggml.")) for name in names), names
    assert install_local.portability_problems(libraries) == []


@pytest.mark.subprocess
@pytest.mark.skipif(
    not X86_64 or shutil.which("as") is None or shutil.which("objdump") is None,
    reason="needs x86-64 and binutils (as, objdump)",
)
def test_the_check_finds_avx512_and_amx_instructions_and_passes_avx2(tmp_path: Path) -> None:
    avx512 = _assemble(tmp_path, "avx512", ["vpaddd %zmm1, %zmm2, %zmm3", "kmovw %k1, %eax"])
    amx = _assemble(tmp_path, "amx", ["ldtilecfg (%rax)", "tdpbssd %tmm2, %tmm1, %tmm0"])
    avx2 = _assemble(tmp_path, "avx2", ["vfmadd231ps %ymm1, %ymm2, %ymm0", "vpaddd %ymm1, %ymm2, %ymm3"])

    problems = install_local.portability_problems([avx512, amx, avx2])

    assert [line.partition(":")[0] for line in problems] == ["avx512.o", "amx.o"]
    assert "2 AVX-512/AMX instructions" in problems[0]


def test_cmake_args_never_build_native_or_avx512_or_amx() -> None:
    args = install_local.cmake_args().split()
    assert "-DGGML_NATIVE=OFF" in args
    if X86_64:
        for name in ("AVX512", "AVX512_VNNI", "AMX_TILE", "AMX_INT8", "AMX_BF16"):
            assert f"-DGGML_{name}=OFF" in args


def test_build_env_leaves_source_date_epoch_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    env = install_local.build_env()
    assert "SOURCE_DATE_EPOCH" not in env
    assert env["CMAKE_ARGS"] == install_local.cmake_args()


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        # Ninja in verbose mode (pip -v): the whole compiler command; only the output file is kept.
        (
            "  [12/193] /usr/bin/c++ -DGGML_BUILD -I/tmp/x/vendor/llama.cpp/ggml/include -O3 -march=x86-64"
            " -MD -MT ggml/src/CMakeFiles/ggml-cpu.dir/ggml-cpu/ops.cpp.o -MF ops.cpp.o.d"
            " -o ggml/src/CMakeFiles/ggml-cpu.dir/ggml-cpu/ops.cpp.o -c /tmp/x/ggml-cpu/ops.cpp\n",
            "[12/193] ops.cpp.o",
        ),
        (
            "[190/193] : && /usr/bin/c++ -fPIC -O3 -shared -Wl,-soname,libllama.so -o bin/libllama.so"
            " src/CMakeFiles/llama.dir/llama.cpp.o && :\n",
            "[190/193] libllama.so",
        ),
        # Ninja's short form.
        ("[3/193] Building C object ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o\n", "[3/193] ggml.c.o"),
        ("  Successfully built llama-cpp-python\n", "Successfully built llama-cpp-python"),
        ("  -- Looking for pthread.h - found\n", None),
    ],
)
def test_progress_lines_are_the_step_and_the_file_it_makes(line: str, shown: str | None) -> None:
    assert install_local.progress_line(line) == shown
