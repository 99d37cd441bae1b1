"""The input box's history: ``prompt-history`` in the data folder, appended to by prompt_toolkit's
``FileHistory`` and read from its last ``HISTORY_BYTES`` only (``TailFileHistory``)."""

from __future__ import annotations

import datetime
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


class NotRegularFileError(OSError):
    """The history's path names a pipe, socket or device (or a link to one)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(f"{path}: not a regular file (a pipe, socket or device)")


def _open_history(path: str, flags: int) -> int:
    """A descriptor on the history file, opened without blocking (``O_NONBLOCK``: opening a
    FIFO otherwise waits for the other end) and checked on the descriptor itself (``fstat``), so
    a FIFO or a device swapped in after any earlier look at the path is refused, not waited on.
    Raises ``NotRegularFileError`` for one, ``OSError`` if the file cannot be opened."""
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, 0o666)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotRegularFileError(path)
    return fd


class TailFileHistory(FileHistory):
    """``FileHistory`` reading the last ``HISTORY_BYTES`` of the file: the entry cut in two at
    that point is left out, the ones after it are read as ``FileHistory`` reads them (``+``
    lines, one entry between two other lines), newest first. Both ends open the file with
    ``_open_history``: a FIFO put there while tether runs is passed over (the prompt stays in
    memory), where reading it kept a thread waiting and appending to it froze the input box."""

    def load_history_strings(self) -> Iterable[str]:
        try:
            with os.fdopen(_open_history(str(self.filename), os.O_RDONLY), "rb") as file:
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

    def store_string(self, string: str) -> None:
        """Append as ``FileHistory`` does (a ``#`` time line, then ``+`` lines); a file that
        cannot take it (a FIFO nobody reads: ``ENXIO``) keeps the prompt in memory only."""
        try:
            fd = _open_history(str(self.filename), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        except OSError:
            return
        lines = "".join(f"+{line}\n" for line in string.split("\n"))
        with os.fdopen(fd, "wb") as file:
            file.write(f"\n# {datetime.datetime.now()}\n{lines}".encode(errors="replace"))


def prompt_history() -> tuple[History, str | None]:
    """The history file's ``FileHistory``, or one kept in memory for this run, with a warning
    line when the file is there but no regular file: ``FileHistory`` reads it whole in a thread,
    so a link to ``/dev/zero`` took memory until none was left and a FIFO kept that thread, and
    the process with it, waiting after the user quit. The path is only looked at (``stat``)
    here, as opening some devices does something, and opening a FIFO lets a writer waiting on it
    go on; it is opened once, by the first read, whose descriptor is checked again
    (``_open_history``: a FIFO swapped in after this look is passed over, not waited on), and a
    file that cannot be opened then reads as empty and keeps the prompts in memory. A data
    folder that cannot be made keeps the history in memory, said by nothing (as before)."""
    from tether.ai.paths import data_dir

    directory = data_dir()
    path = directory / "prompt-history"
    try:
        make_own_folder(directory)
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise NotRegularFileError(path)
    except FileNotFoundError:  # made by the first prompt stored
        pass
    except NotRegularFileError as exc:
        return InMemoryHistory(), f"{exc}; the input history is kept for this run only"
    except OSError:
        return InMemoryHistory(), None
    return TailFileHistory(str(path)), None
