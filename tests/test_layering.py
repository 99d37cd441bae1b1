"""Dependencies point downward: each subpackage imports only the layers below it (README "Layout").

A static scan of every ``import`` in ``src/tether`` (type-checking and function-level imports
included), so a front end cannot creep into the core and the core cannot reach into a front end.
The root module is a floor too: ``tether/__init__.py`` is the front door on top, which names
every layer, so no subpackage imports ``tether`` itself; the leaf modules beside it
(``_version``, ``errors``, ``_lazy``) are the ground, which every layer may import and which import
nothing of tether.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "tether"
LEAVES = {"_version", "errors", "_lazy", "_event_loop"}
"""The root modules under every layer (``tether._version``, ...)."""
FRONT_DOOR = "tether"
"""What an ``import tether`` or ``from tether import X`` reaches: every layer at once."""

BELOW: dict[str, set[str]] = {
    "wire": set(),
    "ai": {"wire"},
    "telemetry": {"wire", "ai"},
    "agent": {"wire", "ai", "telemetry"},
    "tools": {"wire", "ai", "agent", "telemetry"},
    "mcp": {"wire", "ai", "agent", "tools", "telemetry"},
    "store": {"wire"},
    "session": {"wire", "ai", "agent", "tools", "telemetry", "mcp", "store"},
    "testing": {"wire", "ai", "agent", "tools", "telemetry", "mcp", "store", "session"},
    "durable": {"wire", "ai", "agent", "tools", "testing", "store", "session", "telemetry", "mcp"},
    "rpc": {"wire", "ai", "agent", "tools", "testing", "store", "session", "durable", "telemetry", "mcp"},
    "acp": {"wire", "ai", "agent", "tools", "testing", "store", "session", "durable", "telemetry", "mcp"},
    "serve": {"wire", "ai", "agent", "tools", "testing", "store", "session", "durable", "telemetry", "mcp"},
    "cli": {
        "wire",
        "ai",
        "agent",
        "tools",
        "testing",
        "store",
        "session",
        "durable",
        "rpc",
        "acp",
        "serve",
        "telemetry",
        "mcp",
    },
}


def _imported_layers(path: Path) -> set[tuple[str, int]]:
    found: set[tuple[str, int]] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts == ["tether"]:
                found.add((FRONT_DOOR, node.lineno))
            elif parts[0] == "tether" and len(parts) > 1 and parts[1] not in LEAVES:
                found.add((parts[1], node.lineno))
    return found


def test_every_subpackage_imports_only_the_layers_below_it() -> None:
    assert {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()} == set(BELOW)
    wrong: list[str] = []
    for layer, allowed in BELOW.items():
        for path in sorted((SRC / layer).rglob("*.py")):
            for imported, line in sorted(_imported_layers(path)):
                if imported != layer and imported not in allowed:
                    wrong.append(f"{path.relative_to(SRC.parent)}:{line}: {layer} imports {imported}")
    assert wrong == []


def test_the_root_leaves_import_nothing_of_tether() -> None:
    assert {p.stem for p in SRC.glob("*.py")} == {"__init__", *LEAVES}
    wrong = [
        f"{path.relative_to(SRC.parent)}:{line}: {path.stem} imports {imported}"
        for path in sorted(SRC.glob("*.py"))
        if path.stem in LEAVES
        for imported, line in sorted(_imported_layers(path))
    ]
    assert wrong == []


def test_the_scan_sees_an_import_of_the_front_door_and_of_a_leaf(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from tether import __version__\nimport tether\nfrom tether._version import __version__\n"
        "def f():\n    from tether.cli import main\n",
        encoding="utf-8",
    )
    assert _imported_layers(module) == {(FRONT_DOOR, 1), (FRONT_DOOR, 2), ("cli", 5)}
