"""The package ``__init__``s load their names on first use; these tests hold them to it.

Start-up time of ``tether -p`` depends on what the print path imports, so the laziness is checked
in fresh interpreters (this test process has imported everything long ago). The public API must
stay what it was: every name in ``__all__`` resolves, and the two names that share their spelling
with a submodule (``tether.ai.models_file``, ``tether.agent.tool``) stay the functions.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import tether

SOURCE = str(Path(tether.__file__).resolve().parents[1])
"""Where this process imports tether from: a fresh interpreter with its own environment must load
the same code (not, say, the editable install of another checkout)."""

PACKAGES = [
    "tether.ai",
    "tether.mcp",
    "tether.wire",
    "tether.agent",
    "tether.agent.validation",
    "tether.session",
    "tether.testing",
    "tether.rpc",
    "tether.durable",
]


def loaded_after(code: str, env: dict[str, str] | None = None) -> set[str]:
    """Module names in ``sys.modules`` after ``code`` runs in a fresh interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    return set(json.loads(done.stdout.splitlines()[-1]))


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_resolves_and_is_listed(package: str) -> None:
    module = importlib.import_module(package)
    names: list[str] = module.__all__
    missing = [name for name in names if getattr(module, name, None) is None]
    assert missing == []
    assert set(names) <= set(dir(module))


@pytest.mark.parametrize("package", PACKAGES)
def test_an_unknown_name_is_an_attribute_error(package: str) -> None:
    module = importlib.import_module(package)
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018


@pytest.mark.subprocess
def test_names_spelled_like_submodules_stay_the_functions() -> None:
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import tether.ai.models_file, tether.agent.tool, tether.ai, tether.agent, inspect\n"
            "print(inspect.isfunction(tether.ai.models_file), inspect.isfunction(tether.agent.tool))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.split() == ["True", "True"]


@pytest.mark.subprocess
def test_importing_the_packages_loads_no_provider_nor_http_client() -> None:
    loaded = loaded_after("import tether.ai, tether.wire, tether.agent, tether.session, tether.testing")
    assert {"httpx2", "tether.ai.models", "tether.ai.api", "tether.ai.transport"} & loaded == set()
    assert not any(name.startswith("tether.ai.providers") for name in loaded)


HELLO = [{"content": [{"type": "text", "chunks": ["hello"]}]}]


def _print_run(tmp_path: Path, *options: str, responses: list[dict[str, Any]] = HELLO) -> set[str]:
    """The modules a ``tether -p hi`` with the scripted model loads."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(responses))
    env = {
        "TETHER_HOME": str(tmp_path),
        "TETHER_SCRIPTED": str(script),
        "NO_COLOR": "1",
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": SOURCE,
    }
    if "PYTHONPATH" in os.environ:  # a worktree's sources, not the editable install's
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    run = (
        "import sys\nfrom tether.cli.main import main\n"
        f"try:\n    main(['-p', 'hi', *{list(options)!r}])\nexcept SystemExit as exit:\n    assert not exit.code\n"
    )
    return loaded_after(run, env)


@pytest.mark.subprocess
def test_the_print_path_with_the_scripted_model_stays_light(tmp_path: Path) -> None:
    loaded = _print_run(tmp_path, "--no-session")
    heavy = {"httpx2", "rich", "prompt_toolkit", "jsonschema", "tether.ai.models", "tether.ai.transport"}
    assert heavy & loaded == set()
    # nothing is decoded or stored: neither pydantic nor the session store load
    assert {"pydantic", "pydantic_core", "sqlite3", "tether.store.store"} & loaded == set()
    # no call failed nor used a format: the error wording and the format patterns stay unloaded
    assert {"tether.agent.validation._errors", "tether.agent.validation._formats"} & loaded == set()
    # no OTLP endpoint configured: telemetry is off and OpenTelemetry is not even imported
    assert not any(name.startswith("opentelemetry") for name in loaded)
    # no MCP server configured: the MCP SDK, tether's client and the file reader stay unloaded
    # (only `tether.mcp.files` looked for files)
    assert not any(name == "mcp" or name.startswith(("mcp.", "mcp_types")) for name in loaded)
    assert {
        "tether.mcp.connection",
        "tether.mcp.servers",
        "tether.mcp.tools",
        "tether.mcp.config",
    } & loaded == set()
    assert "tether.mcp.files" in loaded
    # durable runs are for `tether worker`/`tether submit`: DBOS (and SQLAlchemy) stay unloaded
    assert not any(name.startswith(("dbos", "sqlalchemy", "tether.durable")) for name in loaded)
    # no tool was called: tool execution, the hook payloads, the tools' process supervision,
    # output spooling and diffing, and the search walker stay unloaded
    idle = {"tether.agent.tool_execution", "tether.agent.hooks", "tether.tools.process"}
    idle |= {"tether.tools.search_process", "tether.tools.files"}
    assert idle & loaded == set()
    # a plain prompt ("hi": no `!`, `$` nor `@`) does not load the prompt syntax
    assert "tether.tools.prompt_input" not in loaded
    # (the first run in a fresh home searched the installed extension entry points, which loads
    # zipfile, shutil and tempfile; a later run reads the cached answer)
    assert {"tempfile", "shutil"} & _print_run(tmp_path, "--no-session") == set()
    assert "tether.agent.loop" in loaded  # the run did happen


@pytest.mark.subprocess
def test_a_stored_print_run_stores_tethers_own_messages_unchecked(tmp_path: Path) -> None:
    """The prompt the core built and the reply of tether's own model are valid by construction:
    storing them loads the store, not pydantic-core (``AgentSession._checked``)."""
    loaded = _print_run(tmp_path)
    assert {"sqlite3", "tether.store.store"} <= loaded
    assert {"pydantic", "pydantic_core"} & loaded == set()


@pytest.mark.subprocess
def test_a_stored_run_checks_tool_results_with_the_shipped_schemas(tmp_path: Path) -> None:
    """A tool's content is its author's: the session validates tool results as it stores them,
    with the shipped pydantic-core schemas (validators.json); pydantic itself stays unloaded."""
    (tmp_path / "notes.txt").write_text("x\n")
    call = {"type": "toolCall", "name": "read", "arguments": {"path": str(tmp_path / "notes.txt")}}
    loaded = _print_run(tmp_path, responses=[{"content": [call]}, *HELLO])
    assert {"pydantic_core", "tether.store.store"} <= loaded
    assert "pydantic" not in loaded
    assert {"tether.agent.tool_execution", "tether.agent.hooks"} <= loaded  # loaded by the call
