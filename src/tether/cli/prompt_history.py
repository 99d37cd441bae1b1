"""The input box's history: ``prompt-history`` in the data folder, appended to by prompt_toolkit's
``FileHistory`` and read from its last ``HISTORY_BYTES`` only (``TailFileHistory``)."""

from __future__ import annotations

import io
import itertools
import os
import stat
from collections.abc import Iterable

from prompt_toolkit.history import FileHistory, History, InMemoryHistory

from tether.own_files import make_own_folder

HISTORY_BYTES = 1 << 20
"""How much of the file's end is read: some thousands of prompts, where pi's editor keeps 100
and prompt_toolkit reads the file whole, so a history grown for years (or a 1 GB file in its
place) took that much memory and time at every start."""


class TailFileHistory(FileHistory):
    """``FileHistory`` reading the last ``HISTORY_BYTES`` of the file: the entry cut in two at
    that point is left out, the ones after it are read as ``FileHistory`` reads them (``+``
    lines, one entry between two other lines), newest first."""

    def load_history_strings(self) -> Iterable[str]:
        try:
            with open(self.filename, "rb") as file:
                start = max(0, os.fstat(file.fileno()).st_size - HISTORY_BYTES)
                file.seek(start)
                tail = io.BytesIO(file.read(HISTORY_BYTES))  # lines end at b"\n" only, as in the file
        except OSError:
            return []
        lines = [line.decode("utf-8", errors="replace") for line in tail]
        if start:  # a partial line, then the rest of a cut entry
            lines = list(itertools.dropwhile(lambda line: line.startswith("+"), lines[1:]))
        strings: list[str] = []
        entry: list[str] = []
        for line in [*lines, ""]:
            if line.startswith("+"):
                entry.append(line[1:])
            elif entry:
                strings.append("".join(entry).removesuffix("\n"))
                entry = []
        return reversed(strings)


def prompt_history() -> tuple[History, str | None]:
    """The history file's ``FileHistory``, or one kept in memory for this run, with a warning
    line when the file is there but no regular file: ``FileHistory`` reads it whole in a thread,
    so a link to ``/dev/zero`` took memory until none was left and a FIFO kept that thread, and
    the process with it, waiting after the user quit. A data folder that cannot be made keeps
    the history in memory, said by nothing (as before)."""
    from tether.ai.paths import data_dir

    directory = data_dir()
    path = directory / "prompt-history"
    try:
        make_own_folder(directory)
        if os.path.lexists(path) and not stat.S_ISREG(os.stat(path).st_mode):
            why = "not a regular file (a pipe, socket or device)"
            return InMemoryHistory(), f"{path}: {why}; the input history is kept for this run only"
    except OSError:
        return InMemoryHistory(), None
    return TailFileHistory(str(path)), None
