"""Trusted folders: which projects may widen what the model is allowed to do.

A ``.tether/settings.json`` travels with a repository (or sits in a shared parent such as
``/tmp``), so whoever wrote it is not necessarily the user. Settings that *widen* the model's
powers (``approval: "yes"``, tools beyond the user's own choice) are therefore taken from a
project file only when the user has trusted that project: its folder, or a folder above it, is
listed in ``<config dir>/trusted-folders.json`` (a JSON list of absolute paths). The interactive
mode asks and records the answer here; modes without a person at the keyboard never ask, they
ignore the widening keys and say so. Narrowing settings (``deny``, fewer tools) and neutral ones
(model, thinking, compaction) always apply.

What a project may add is granted kind by kind (``GRANTS``): its widening settings, its Python
extensions (code run in this process), its ``.mcp.json`` servers (programs started), its
``.tether/skills`` and its ``.tether/prompts``. Saying yes to one is not saying yes to the others:
an entry of the file is either a folder path (written before grants existed: everything) or
``{"path": ..., "grants": [...]}``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from tether.errors import UserError

TRUST_FILE = "trusted-folders.json"

GRANTS = ("settings", "extensions", "mcp", "skills", "prompts")
"""What a project can be trusted with, each on its own."""
Grant = str


class TrustFileError(UserError, ValueError):
    """The trusted-folders file exists but is not a JSON list of paths; the message names it."""


def trust_file(config_dir: Path) -> Path:
    return config_dir / TRUST_FILE


def trusted_folders(config_dir: Path) -> list[tuple[Path, frozenset[Grant]]]:
    """The folders the user trusted, each with what it was granted (missing file: none; a link
    to nothing is an error)."""
    from tether.own_files import RefusedFile, present, read_own_file
    from tether.wire.json_line import load_line  # only for a project with something to grant

    path = trust_file(config_dir)
    try:
        data: object = load_line(read_own_file(path, None))  # a FIFO there blocked the start
    except FileNotFoundError as exc:
        if not present(path):
            return []
        # a link to nothing (its target moved) is said: taken for no file, all trust was dropped
        raise TrustFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except RefusedFile as exc:
        raise TrustFileError(f"{path}: cannot read: {exc}") from None
    except OSError as exc:
        raise TrustFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise TrustFileError(f"{path}: not valid JSON ({exc}); fix or delete it") from None
    items = cast(list[object], data) if isinstance(data, list) else None
    if items is None:
        raise TrustFileError(f"{path}: expected a JSON list of folder paths")
    folders: list[tuple[Path, frozenset[Grant]]] = []
    for item in items:
        if isinstance(item, str):
            folder, given = item, frozenset(GRANTS)
        else:
            entry = cast(dict[str, object], item) if isinstance(item, dict) else {}
            folder, grants = entry.get("path"), entry.get("grants")
            if not isinstance(folder, str) or not isinstance(grants, list):
                raise TrustFileError(
                    f'{path}: expected folder paths or {{"path": ..., "grants": [...]}} entries'
                )
            given = frozenset(g for g in cast(list[object], grants) if g in GRANTS)
        if os.path.isabs(folder):  # a relative one ("." or "") would trust wherever tether runs
            folders.append((Path(folder), given))
    return folders


def granted(config_dir: Path, project: Path) -> frozenset[Grant]:
    """What ``project`` (or a folder above it) was granted."""
    real = Path(os.path.realpath(project))
    found: set[Grant] = set()
    for folder, grants in trusted_folders(config_dir):
        listed = Path(os.path.realpath(folder))
        if real == listed or real.is_relative_to(listed):
            found |= grants
    return frozenset(found)


def is_trusted(config_dir: Path, project: Path, grant: Grant = "settings") -> bool:
    """Whether ``project`` (a folder holding ``.tether``), or a folder above it, was granted
    ``grant``."""
    return grant in granted(config_dir, project)


def trust(config_dir: Path, project: Path, grants: Sequence[Grant] = GRANTS) -> Path:
    """Grant ``project`` ``grants`` (on top of what it had); returns the file written."""
    folders = trusted_folders(config_dir)
    real = Path(os.path.realpath(project))
    path = trust_file(config_dir)
    same = [Path(os.path.realpath(folder)) == real for folder, _ in folders]
    had = frozenset[Grant]().union(*(g for (_, g), match in zip(folders, same, strict=True) if match))
    if not set(grants) <= had:
        entries: list[object] = []
        for (folder, given), match in zip(folders, same, strict=True):
            if not match:
                entries.append(_entry(folder, given))
        entries.append(_entry(real, had | set(grants)))
        path.parent.mkdir(parents=True, exist_ok=True)
        from tether.store.jsonl import write_lines  # a new file renamed over it: no link followed

        write_lines(path, [json.dumps(entries, indent=2).encode()])
    return path


def _entry(folder: Path, grants: frozenset[Grant]) -> object:
    if grants == frozenset(GRANTS):
        return str(folder)  # as written before grants existed: readable by an older tether
    return {"path": str(folder), "grants": [g for g in GRANTS if g in grants]}
