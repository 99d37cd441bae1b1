"""The input box's history: ``prompt-history`` in the data folder, read and appended to by
prompt_toolkit's ``FileHistory``."""

from __future__ import annotations

import os
import stat

from prompt_toolkit.history import FileHistory, History, InMemoryHistory

from tether.own_files import make_own_folder


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
    return FileHistory(str(path)), None
