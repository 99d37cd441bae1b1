"""Dependencies point downward: each subpackage imports only the layers below it (README "Layout").

A static scan of every ``import`` in ``src/tether`` (type-checking and function-level imports
included), so a front end cannot creep into the core and the core cannot reach into a front end.
The root module is a floor too: ``tether/__init__.py`` is the front door on top, which names
every layer, so no subpackage imports ``tether`` itself; the leaf modules beside it
(``_version``, ``errors``, ``_lazy``, ``_event_loop``, ``_hang_up``, ``gc_tuning``, ``own_files``) are the ground, which every layer may import and which import
nothing of tether.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "tether"
LEAVES = {"_version", "errors", "_lazy", "_event_loop", "_hang_up", "gc_tuning", "own_files"}
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
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
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


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_modules(path: Path, known: set[str], exports: dict[str, dict[str, str]]) -> set[str]:
    """The tether modules ``path`` imports (at any depth of the file), by name: ``from a.b import c``
    names ``a.b``, and ``a.b.c`` too when that is a module; a name a package exports from one of
    its modules (``from tether.ai import stream``) names that module, not the package."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            exported = exports.get(node.module, {})
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in known else exported.get(alias.name, node.module))
    return {name for name in found if name in known}


def _exports(path: Path) -> dict[str, str]:
    """What a package's ``__init__`` takes from its modules: name -> module."""
    names: dict[str, str] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.update((alias.asname or alias.name, node.module) for alias in node.names)
    return names


def _circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: set[str] = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _import_graph() -> dict[str, set[str]]:
    paths = {_module_name(p): p for p in SRC.rglob("*.py")}
    known = set(paths)
    exports = {name: _exports(path) for name, path in paths.items() if path.name == "__init__.py"}
    return {name: _imported_modules(path, known, exports) - {name} for name, path in paths.items()}


def test_no_module_imports_itself_through_others() -> None:
    """No circle of imports, the root module included (type-checking and function-level imports
    count: a circle put off until run time is still two modules that cannot be read apart)."""
    assert [sorted(c) for c in _circles(_import_graph())] == []


def test_the_circle_check_sees_a_circle() -> None:
    graph: dict[str, set[str]] = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(graph) == [{"a", "b", "c"}]
    assert _circles({"a": {"b"}, "b": set()}) == []
