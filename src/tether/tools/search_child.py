"""The child side of ``tether.tools.search_process``: one ``grep`` or ``find`` request from stdin,
one JSON answer on stdout. A module of its own, run as ``python -m``, so the tools that start the
child (``find``, ``grep``) and the searches it runs do not import each other in a circle."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tether.errors import ToolError
from tether.tools.sandbox import SandboxPolicy
from tether.tools.workspace import Workspace


def serve() -> None:
    """Child side: one request from stdin, one JSON answer on stdout."""
    from tether.tools.find import find_files
    from tether.tools.grep import grep

    request = json.loads(sys.stdin.buffer.read())
    hidden = request["hidden"]
    workspace = Workspace(
        Path(request["root"]),
        tuple(Path(p) for p in request["extra_roots"]),
        tuple(Path(p) for p in request["read_roots"]),
        allow_outside=request["allow_outside"],
        sandbox=None
        if hidden is None  # the search only reads: the sandbox's mode does not matter here
        else SandboxPolicy(
            hide=tuple(Path(p) for p in hidden["hide"]),
            other_workspaces=tuple(Path(p) for p in hidden["others"]),
        ),
    )
    try:
        if request["tool"] == "grep":
            result = grep(workspace, request["params"])
        else:
            result = find_files(workspace, request["params"])
        answer: dict[str, Any] = {"content": result.content, "details": result.details}
    except ToolError as exc:
        answer = {"error": str(exc)}
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    serve()
