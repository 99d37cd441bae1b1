"""Where ``bash`` keeps the full output of long commands, and when it goes away.

Each workspace gets one private temp directory, made on first use; the session removes it when
it ends (``AgentSession.close``), so spools do not pile up in ``/tmp`` run after run. A library
user's tools (``coding_tools(cwd)``) have no session to close them: their directory goes when its
``Spools`` is collected or, at the latest, when the process exits. A spool stops growing at
``MAX_SPOOL_BYTES``: a command printing without end must not fill the disk.
"""

from __future__ import annotations

import os
import weakref
from pathlib import Path

MAX_SPOOL_BYTES = 64 * 1024 * 1024
"""Output beyond this is counted but not saved."""


class Spools:
    """A lazily created temp directory of output files, removed as a whole."""

    def __init__(self) -> None:
        self._directory: Path | None = None
        self._removal: weakref.finalize[[str, int], Spools] | None = None

    @property
    def directory(self) -> Path | None:
        """The directory, once made (a sandbox shows it read-only so commands can search spools)."""
        return self._directory

    def new_file(self) -> Path:
        """A fresh, empty file path in the directory (created now, with the directory if needed)."""
        import tempfile  # loads with the first long output, not with every start

        if self._directory is None or not self._directory.is_dir():
            self._directory = Path(tempfile.mkdtemp(prefix="tether-output-"))
            self._removal = weakref.finalize(self, _remove, str(self._directory), os.getpid())
        fd, name = tempfile.mkstemp(dir=self._directory, prefix="bash-", suffix=".log")
        os.close(fd)
        return Path(name)

    def remove(self) -> None:
        """Delete every spool; safe to call more than once."""
        if self._removal is not None:
            self._removal()
            self._removal = None
        self._directory = None


def _remove(directory: str, owner: int) -> None:
    """The removal, run once: by ``remove``, by the collector, or at exit. Not in a forked child
    (its copy of the object would delete the parent's spools as it exits)."""
    if os.getpid() == owner:
        import shutil  # only output that spooled has anything to remove

        shutil.rmtree(directory, ignore_errors=True)
