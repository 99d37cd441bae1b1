"""Installing outside a checkout: the wheel holds every file of the package (``py.typed``, the
schema and validator files, the catalog), and installed from it in a fresh venv, ``import tether``
and the ``tether`` command work from that venv, not from this checkout.

Offline: the wheel is built with the build backend of the dev venv (``--no-build-isolation``,
``--no-index``); the fresh venv gets tether from the wheel only and borrows the dependencies
from this venv (a ``.pth`` line), so pip needs no index either.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from reference_paths import REPO_ROOT

pytestmark = pytest.mark.subprocess

PACKAGE = REPO_ROOT / "src" / "tether"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index"]
    done = subprocess.run([*pip, "-w", str(out), str(REPO_ROOT)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    (built,) = out.glob("tether-*-py3-none-any.whl")
    return built


def test_the_wheel_holds_every_file_of_the_package_and_the_command(wheel: Path) -> None:
    wanted = {
        f"tether/{path.relative_to(PACKAGE).as_posix()}"
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        commands = archive.read(entry_points).decode()
    assert wanted - names == set()
    for data in (
        "py.typed",
        "wire/schema.json",
        "wire/validators.json",
        "rpc/schema.json",
        "ai/catalog.json",
    ):
        assert f"tether/{data}" in names
    assert "tether = tether.cli.main:command" in commands


def test_installed_from_the_wheel_in_a_fresh_venv_tether_works(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # The dependencies (not tether: this venv's tether is an editable install, whose finder a
    # path added by a .pth line does not activate) come from the dev venv.
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    clean_env = {"PATH": str(env_dir / "bin"), "HOME": str(tmp_path), "TETHER_HOME": str(tmp_path / "home")}

    probe = (
        "import json, pathlib, tether, tether.wire, tether.wire.codec as codec, tether.rpc.schema as rpc;"
        "from tether.ai.models import list_models;"
        "here = pathlib.Path(tether.__file__).parent;"
        "print(json.dumps([tether.__file__, tether.__version__, len(list_models()) > 100,"
        " (here / 'py.typed').is_file(), json.loads((here / 'wire' / 'schema.json').read_text())['$schema'],"
        " json.loads(codec.COMPILED_FILE.read_text()) == json.loads(codec.compiled_json()),"
        " json.loads(rpc.COMMITTED.read_text()) == json.loads(rpc.bundle_json())]))"
    )
    imported = subprocess.run(
        [str(python), "-c", probe], capture_output=True, text=True, env=clean_env, cwd=tmp_path, check=False
    )
    assert imported.returncode == 0, imported.stderr[-3000:]
    where, version, catalog, typed, schema, validators, rpc_schema = json.loads(imported.stdout)
    assert Path(where).is_relative_to(env_dir) and not Path(where).is_relative_to(REPO_ROOT)
    assert (catalog, typed, validators, rpc_schema) == (True, True, True, True)
    assert schema.startswith("https://json-schema.org/")

    command = env_dir / "bin" / "tether"
    shown = subprocess.run(
        [str(command), "--version"], capture_output=True, text=True, env=clean_env, cwd=tmp_path, check=False
    )
    assert shown.returncode == 0 and version in shown.stdout, shown.stderr
    schema_out = subprocess.run(
        [str(command), "schema"], capture_output=True, text=True, env=clean_env, cwd=tmp_path, check=False
    )
    assert schema_out.returncode == 0, schema_out.stderr[-3000:]
    assert json.loads(schema_out.stdout)["$schema"].startswith("https://json-schema.org/")
