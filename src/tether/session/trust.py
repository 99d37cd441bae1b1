"""Trusted folders: which projects may widen what the model is allowed to do.

A ``.tether/settings.json`` travels with a repository (or sits in a shared parent such as
``/tmp``), so whoever wrote it is not necessarily the user. Settings that *widen* the model's
powers (``approval: "yes"``, tools beyond the user's own choice) are therefore taken from a
project file only when the user has trusted that project: its folder, or a folder above it, is
listed in ``<config dir>/trusted-folders.json`` (a JSON list of absolute paths). The interactive
mode asks and records the answer here; modes without a person at the keyboard never ask, they
ignore the widening keys and say so. Narrowing settings (``deny``, fewer tools) and neutral ones
(model, thinking, compaction) always apply.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import cast

from tether.errors import UserError

TRUST_FILE = "trusted-folders.json"


class TrustFileError(UserError, ValueError):
    """The trusted-folders file exists but is not a JSON list of paths; the message names it."""


def trust_file(config_dir: Path) -> Path:
    return config_dir / TRUST_FILE


def trusted_folders(config_dir: Path) -> list[Path]:
    """The folders the user trusted (missing file: none)."""
    from tether.wire.json_line import load_line  # only for a project with a .tether folder

    path = trust_file(config_dir)
    try:
        data: object = load_line(path.read_bytes())
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise TrustFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise TrustFileError(f"{path}: not valid JSON ({exc}); fix or delete it") from None
    items = cast(list[object], data) if isinstance(data, list) else None
    if items is None or not all(isinstance(item, str) for item in items):
        raise TrustFileError(f"{path}: expected a JSON list of folder paths")
    return [Path(cast(str, item)) for item in items]


def is_trusted(config_dir: Path, project: Path) -> bool:
    """Whether ``project`` (a folder holding ``.tether``) is, or lies below, a trusted folder."""
    real = Path(os.path.realpath(project))
    for folder in trusted_folders(config_dir):
        listed = Path(os.path.realpath(folder))
        if real == listed or real.is_relative_to(listed):
            return True
    return False


def trust(config_dir: Path, project: Path) -> Path:
    """Add ``project`` to the trusted folders; returns the file written."""
    folders = trusted_folders(config_dir)
    real = Path(os.path.realpath(project))
    path = trust_file(config_dir)
    if real not in folders:
        folders.append(real)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(json.dumps([str(f) for f in folders], indent=2) + "\n", encoding="utf-8")
        temporary.replace(path)
    return path
