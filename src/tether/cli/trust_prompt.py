"""The trust question: what a project would add, named item by item and granted kind by kind.

A cloned repository can bring settings that widen the model's powers, Python extensions (code
that runs inside tether), ``.mcp.json`` servers (programs tether starts), skills and prompt
templates. Answering yes to one question must not grant the others, and nobody should grant
code execution without being told which code: so each kind the project has, and the user has
not yet granted, is listed by name (the settings keys, the extension files, each server's
command line, the skill and template names) and asked about on its own. Asked only with a
person at the keyboard; every other mode leaves them out and says so (``tether.session``).

A yes to servers or extensions covers the ones named (``tether.session.trust_items``): one the
project adds or changes later is offered on its own, the others staying granted.

Offered once: a no is remembered (``trust-declined.json`` in the data folder) for that folder,
kind and list of items, so the next start does not ask again; the project adding or changing
an item (a new server, another extension) asks again, since that is a new decision. ``/trust``
asks about everything still not granted, whatever was declined.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TextIO, cast

from tether.own_files import make_own_folder, read_own_file
from tether.session.settings import Settings

WHAT = {
    "settings": "settings that widen what the model may do",
    "extensions": "Python extensions, code that runs inside tether",
    "mcp": "MCP servers, programs tether starts",
    "skills": "skills, instructions for the model",
    "prompts": "prompt templates, slash commands",
}
DECLINED_FILE = "trust-declined.json"

Offer = tuple[Path, str, list[str]]
"""The folder to trust, the kind of grant, and the items it would let in (by name)."""


def offered(cwd: Path, settings: Settings, config_dir: Path, data_dir: Path | None = None) -> list[Offer]:
    """``(folder to trust, kind, item names)`` for each kind the project has and was not
    granted yet (servers and extensions: the ones not granted as they are now); with
    ``data_dir``, not the ones the user declined as they are now."""
    from tether.session.trust import ITEMIZED, TrustFileError, granted

    found: list[Offer] = []
    tether_dir = next((d / ".tether" for d in (cwd, *cwd.parents) if (d / ".tether").is_dir()), None)
    if settings.ignored and settings.project_file is not None:
        # the folder holding the settings file, whose grant is checked (``load_settings``): the
        # nearest ``.tether`` may be a subfolder's without one, and a yes to it granted nothing
        found.append((settings.project_file.parent.parent, "settings", list(settings.ignored)))
    if tether_dir is not None:
        found += [(tether_dir.parent, kind, names) for kind, names in _tether_items(tether_dir) if names]
    from tether.mcp.files import project_mcp_file
    from tether.session.trust_items import server_items

    mcp_file = project_mcp_file(cwd)
    servers = list(server_items(mcp_file).values()) if mcp_file is not None else []
    if mcp_file is not None and servers:
        found.append((mcp_file.parent, "mcp", servers))
    declined = _declined(data_dir) if data_dir is not None else []
    try:
        waiting = [
            (f, kind, [n for n in names if not given.allows(kind, n)] if kind in ITEMIZED else names)
            for f, kind, names in found
            if kind not in (given := granted(config_dir, f)).kinds
        ]
    except TrustFileError:
        return []  # reported where the grants are read
    return [(f, kind, names) for f, kind, names in waiting if names and _key(f, kind, names) not in declined]


def ask_grants(
    offers: list[Offer],
    config_dir: Path,
    err: TextIO,
    ask: Callable[[str], str] = input,
    data_dir: Path | None = None,
) -> bool:
    """Ask about each offer and record the grants (and, with ``data_dir``, the refusals, so
    they are not asked again); whether anything was granted."""
    from tether.session.trust import trust

    any_granted = False
    refused: list[Offer] = []
    for folder, kind, names in offers:
        err.write(f"{shown(str(folder))} brings {WHAT[kind]}:\n")
        for name in names:
            err.write(f"  {shown(name)}\n")
        later = " (a no is remembered; /trust asks again)" if data_dir is not None else ""
        answer = ask(f"Allow {kind} from {shown(str(folder))}?{later} [y/N] ").strip().lower()
        if answer in ("y", "yes"):
            trust(config_dir, folder, [kind], {kind: names})
            any_granted = True
        else:
            refused.append((folder, kind, names))
    if data_dir is not None and refused:
        _remember(data_dir, refused)
    return any_granted


def describe(offers: list[Offer]) -> str:
    """What granting ``offers`` lets in, kind by kind with every item (``/trust``'s question)."""
    lines: list[str] = []
    for folder, kind, names in offers:
        lines.append(f"{WHAT[kind]} from {shown(str(folder))}:")
        lines += [f"  {shown(name)}" for name in names]
    return "\n".join(lines)


def shown(text: str) -> str:
    """``text`` (a name the project chose: a file name, a server's arguments) with its control,
    format and separator characters written as escapes (``\\x1b``, ``\\r``, ``\\u202e``): on
    the terminal they would move the cursor, clear the line or reorder what follows, and the
    question would show another command than the one it grants."""
    import unicodedata

    return "".join(
        c if c == " " or unicodedata.category(c)[0] not in "CZ" else c.encode("unicode_escape").decode()
        for c in text
    )


def _key(folder: Path, kind: str, names: list[str]) -> list[object]:
    return [os.path.realpath(folder), kind, sorted(names)]


def _declined(data_dir: Path) -> list[list[object]]:
    """The offers the user said no to (an unreadable file: none, so they are asked again; an
    entry that is not a list, such as a hand-edited ``[1]``, is dropped: it made a no crash)."""
    try:
        # own_files' policy: a FIFO in its place blocked every interactive start
        data: object = json.loads(read_own_file(data_dir / DECLINED_FILE, None).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return []
    entries = cast(list[object], data) if isinstance(data, list) else []
    return [cast(list[object], entry) for entry in entries if isinstance(entry, list)]


def _remember(data_dir: Path, refused: list[Offer]) -> None:
    kept = [k for k in _declined(data_dir) if k[:2] not in [_key(*o)[:2] for o in refused]]
    kept += [_key(*o) for o in refused]
    try:
        make_own_folder(data_dir)
        from tether.store.jsonl import write_lines  # a new file renamed over it: no link followed

        write_lines(data_dir / DECLINED_FILE, [json.dumps(kept, indent=1).encode()])
    except OSError:
        pass  # not remembered: the question comes again next time, nothing worse


def _tether_items(tether_dir: Path) -> list[tuple[str, list[str]]]:
    from tether.session.trust_items import extension_items

    extensions = list(extension_items(tether_dir / "extensions").values())
    skills_dir = tether_dir / "skills"
    skills = sorted(p.name for p in _children(skills_dir) if (p / "SKILL.md").is_file())
    prompts = sorted(f"/{p.stem}" for p in _children(tether_dir / "prompts") if p.suffix == ".md")
    return [("extensions", extensions), ("skills", skills), ("prompts", prompts)]


def _children(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []
