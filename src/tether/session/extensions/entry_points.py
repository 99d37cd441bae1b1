"""Installed extensions (entry-point group ``tether.extensions``), without paying for the search
on every start.

``importlib.metadata`` takes tens of milliseconds to import and to read every installed
package's metadata, most of ``tether -p``'s start-up budget, for a group that is usually empty.
So the answer is kept in ``<data dir>/extension-entry-points.json`` together with the
modification times of the ``site-packages`` folders on ``sys.path``: installing or removing a
package adds or removes its ``.dist-info`` folder there, which changes the folder's time, and only
then is the search done again. (Other folders on the path, such as the current directory, change
for unrelated reasons and hold no installed metadata.)
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

GROUP = "tether.extensions"
CACHE_FILE = "extension-entry-points.json"


def installed_entry_points(data_dir: Path) -> list[tuple[str, str]]:
    """``(name, "module:attr")`` of every entry point in the group, installed order."""
    stamps = _folder_stamps()
    cache = data_dir / CACHE_FILE
    try:
        cached = json.loads(cache.read_text(encoding="utf-8"))
        if cached.get("folders") == stamps:
            return [(str(n), str(v)) for n, v in cached["entryPoints"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    from importlib.metadata import entry_points

    found = [(ep.name, ep.value) for ep in entry_points(group=GROUP)]
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        temporary = cache.with_name(cache.name + f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"folders": stamps, "entryPoints": found}), encoding="utf-8")
        temporary.replace(cache)
    except OSError:
        pass  # a read-only data folder: search again next time
    return found


def _folder_stamps() -> dict[str, int]:
    stamps: dict[str, int] = {}
    for folder in sys.path:
        if os.path.basename(folder) not in ("site-packages", "dist-packages"):
            continue
        try:
            stamps[folder] = os.stat(folder).st_mtime_ns
        except OSError:
            continue
    return stamps
