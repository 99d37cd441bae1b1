"""Trusted folders: which projects may widen what the model is allowed to do.

A ``.tether/settings.json`` travels with a repository (or sits in a shared parent such as
``/tmp``), so whoever wrote it is not necessarily the user. Settings that *widen* the model's
powers (``approval: "yes"``, tools beyond the user's own choice) are therefore taken from a
project file only when the user has trusted that project: its folder (the one holding the
``.tether`` or ``.mcp.json``) is listed in ``<config dir>/trusted-folders.json`` (a JSON list of
absolute paths). A listed folder covers only itself, not the projects below it: a command run in
a trusted workspace can write ``sub/.tether/settings.json`` (only the workspace's own ``.tether``
is read-only to it), and a grant of the parent would have taken that file at the next start in
``sub``. A subfolder without files of its own reads its parent project's, under the parent's
grant, since that is the folder that holds them. The interactive
mode asks and records the answer here; modes without a person at the keyboard never ask, they
ignore the widening keys and say so. Narrowing settings (``deny``, fewer tools) and neutral ones
(model, thinking, compaction) always apply.

What a project may add is granted kind by kind (``GRANTS``): its widening settings, its Python
extensions (code run in this process), its ``.mcp.json`` servers (programs started), its
``.tether/skills`` and its ``.tether/prompts``. Saying yes to one is not saying yes to the others:
an entry of the file is either a folder path (written before grants existed: everything, now and
later) or ``{"path": ..., "grants": [...]}``.

Servers and extensions run code, so a yes to them covers what the user was shown, item by item
(``ITEMIZED``): each server's definition as the question named it and each extension file with
its content's hash (``tether.session.trust_items``), kept in the entry as ``"mcp": [...]`` and
``"extensions": [...]``. A server or extension file that a ``git pull`` or a branch switch added
or changed later is a new decision, not something the folder already had. A kind-only ``"mcp"``
or ``"extensions"`` in ``grants`` (written before items were kept) grants no item: the user is
asked again, naming each.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import cast

from tether.errors import UserError

TRUST_FILE = "trusted-folders.json"

GRANTS = ("settings", "extensions", "mcp", "skills", "prompts")
"""What a project can be trusted with, each on its own."""
ITEMIZED = ("extensions", "mcp")
"""The kinds an entry grants item by item: code whose later changes the user never saw."""
KEPT_VERSIONS = 4
"""The versions of one server or extension file an entry keeps granted, the last granted ones:
each yes to a changed one adds a version, and keeping them all grew the file with every pull
(granting versions long gone); a few let a user switch between branches without a question."""
Grant = str


class Granted:
    """What a folder was granted: whole kinds, and items of the ``ITEMIZED`` ones (in the order
    granted, oldest first: ``KEPT_VERSIONS`` keeps the last ones)."""

    __slots__ = ("_items", "items", "kinds")

    def __init__(self, kinds: frozenset[Grant] = frozenset(), items: Iterable[tuple[Grant, str]] = ()):
        self.kinds = kinds
        self.items = tuple(dict.fromkeys(items))
        self._items = frozenset(self.items)

    def allows(self, kind: Grant, item: str) -> bool:
        """Whether ``item`` (a server's line, an extension's path and hash) of ``kind`` was granted."""
        return kind in self.kinds or (kind, item) in self._items

    def covers(self, other: Granted) -> bool:
        return other.kinds <= self.kinds and other._items <= self._items

    def of(self, kind: Grant) -> list[str]:
        return [item for k, item in self.items if k == kind]

    def recent(self) -> Granted:
        """The same with only the last ``KEPT_VERSIONS`` of each item (a server by its name, an
        extension by its path; a server whose name holds ``": "`` shares the count of the name
        before it, which can only make a question come sooner)."""
        counts: dict[tuple[Grant, str], int] = {}
        kept: list[tuple[Grant, str]] = []
        for kind, item in reversed(self.items):
            key = (kind, item.rsplit(" sha256:", 1)[0] if kind == "extensions" else item.split(": ", 1)[0])
            counts[key] = counts.get(key, 0) + 1
            if counts[key] <= KEPT_VERSIONS:
                kept.append((kind, item))
        return Granted(self.kinds, reversed(kept))


class TrustFileError(UserError, ValueError):
    """The trusted-folders file exists but is not a JSON list of paths; the message names it."""


def trust_file(config_dir: Path) -> Path:
    return config_dir / TRUST_FILE


def trusted_folders(config_dir: Path) -> list[tuple[Path, Granted]]:
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
    folders: list[tuple[Path, Granted]] = []
    for item in items:
        if isinstance(item, str):
            folder, given = item, Granted(frozenset(GRANTS))
        else:
            entry = cast(dict[str, object], item) if isinstance(item, dict) else {}
            folder, grants = entry.get("path"), entry.get("grants", [])
            listed = {kind: entry.get(kind, []) for kind in ITEMIZED}
            if not isinstance(folder, str) or not all(
                isinstance(v, list) for v in (grants, *listed.values())
            ):
                raise TrustFileError(
                    f'{path}: expected folder paths or {{"path": ..., "grants": [...]}} entries'
                )
            kinds = frozenset(g for g in cast(list[object], grants) if g in GRANTS and g not in ITEMIZED)
            given = Granted(
                kinds,
                (
                    (kind, name)
                    for kind, names in listed.items()
                    for name in cast(list[object], names)
                    if isinstance(name, str)
                ),
            )
        if os.path.isabs(folder):  # a relative one ("." or "") would trust wherever tether runs
            folders.append((Path(folder), given))
    return folders


def granted(config_dir: Path, project: Path) -> Granted:
    """What ``project`` (the folder holding its files) was granted: its own entries, not a
    folder's above it."""
    real = Path(os.path.realpath(project))
    return _union(
        grants for folder, grants in trusted_folders(config_dir) if Path(os.path.realpath(folder)) == real
    )


def is_trusted(config_dir: Path, project: Path, grant: Grant = "settings") -> bool:
    """Whether ``project`` (a folder holding ``.tether``) was granted
    ``grant`` as a whole (for an ``ITEMIZED`` kind: whatever it brings, as a bare path grants)."""
    return grant in granted(config_dir, project).kinds


def trust(
    config_dir: Path,
    project: Path,
    grants: Sequence[Grant] = GRANTS,
    items: Mapping[Grant, Sequence[str]] | None = None,
) -> Path:
    """Grant ``project`` ``grants`` (on top of what it had); returns the file written. An
    ``ITEMIZED`` kind is granted for its ``items`` only, the ones the user was shown (none
    given: none of it), unless ``grants`` is everything without items: the bare path, whatever
    the folder brings now or later."""
    folders = trusted_folders(config_dir)
    real = Path(os.path.realpath(project))
    path = trust_file(config_dir)
    same = [Path(os.path.realpath(folder)) == real for folder, _ in folders]
    had = _union(g for (_, g), match in zip(folders, same, strict=True) if match)
    if set(grants) == set(GRANTS) and items is None:
        new = Granted(frozenset(GRANTS))
    else:
        listed = items or {}
        new = Granted(
            frozenset(g for g in grants if g not in ITEMIZED),
            ((k, name) for k in grants if k in ITEMIZED for name in listed.get(k, ())),
        )
    if not had.covers(new):
        entries: list[object] = []
        for (folder, given), match in zip(folders, same, strict=True):
            if not match:
                entries.append(_entry(folder, given))
        entries.append(_entry(real, _union([had, new]).recent()))
        path.parent.mkdir(parents=True, exist_ok=True)
        from tether.store.jsonl import write_lines  # a new file renamed over it: no link followed

        write_lines(path, [json.dumps(entries, indent=2).encode()])
    return path


def _union(grants: Iterable[Granted]) -> Granted:
    kinds: set[Grant] = set()
    items: list[tuple[Grant, str]] = []
    for given in grants:
        kinds |= given.kinds
        items += given.items
    return Granted(frozenset(kinds), items)


def _entry(folder: Path, grants: Granted) -> object:
    if grants.kinds == frozenset(GRANTS):
        return str(folder)  # as written before grants existed: readable by an older tether
    entry: dict[str, object] = {"path": str(folder), "grants": [g for g in GRANTS if g in grants.kinds]}
    entry.update((kind, grants.of(kind)) for kind in ITEMIZED if grants.of(kind))
    return entry
