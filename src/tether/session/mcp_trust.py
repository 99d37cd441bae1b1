"""Whether a project's ``.mcp.json`` may start its servers: the one trust check MCP uses.

A project file that starts programs widens what opening a folder does, so its servers start
only in a folder the user trusted. Until the project-trust gate of the hardening issue (14)
lands, this reads the same user-level list it will use — ``trusted-folders.json`` in tether's
config folder, a JSON list of absolute paths, a folder trusting everything below it — and only
that: swapping in the real gate means replacing this one function's body.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import cast

TRUST_FILE = "trusted-folders.json"


def is_trusted(project: Path, config_dir: Path | None = None) -> bool:
    """Whether ``project`` is, or lies below, a folder listed in the trusted-folders file.

    An unreadable or malformed file trusts nothing (the safe answer for a check that gates
    starting programs)."""
    if config_dir is None:
        from tether.ai.paths import config_dir as user_config_dir

        config_dir = user_config_dir()
    try:
        data: object = json.loads((config_dir / TRUST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    items = cast(list[object], data) if isinstance(data, list) else []
    real = Path(os.path.realpath(project))
    for item in items:
        if isinstance(item, str):
            listed = Path(os.path.realpath(item))
            if real == listed or real.is_relative_to(listed):
                return True
    return False
