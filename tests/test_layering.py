"""Dependencies point downward: each subpackage imports only the layers below it (README "Layout").

A static scan of every ``import`` in ``src/tether`` (type-checking and function-level imports
included), so a front end cannot creep into the core and the core cannot reach into a front end.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "tether"

BELOW: dict[str, set[str]] = {
    "wire": set(),
    "ai": {"wire"},
    "telemetry": {"wire", "ai"},
    "agent": {"wire", "ai", "telemetry"},
    "tools": {"wire", "ai", "agent", "telemetry"},
    "testing": {"wire", "ai", "agent", "telemetry"},
    "mcp": {"wire", "ai", "agent", "tools", "telemetry"},
    "store": {"wire"},
    "session": {"wire", "ai", "agent", "tools", "testing", "telemetry", "mcp", "store"},
    "durable": {"wire", "ai", "agent", "tools", "testing", "store", "session", "telemetry", "mcp"},
    "rpc": {"wire", "ai", "agent", "tools", "testing", "store", "session", "durable", "telemetry", "mcp"},
    "acp": {"wire", "ai", "agent", "tools", "testing", "store", "session", "durable", "telemetry", "mcp"},
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
            if parts[0] == "tether" and len(parts) > 1 and parts[1] in BELOW:
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
