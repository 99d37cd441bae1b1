"""Where a stored session may run: its recorded folder, only when the one who runs it is there.

A session's ``cwd`` is whatever its file said (an imported pi file's header), ``/`` as well, and a
session runs its tools with that folder as their workspace. So a front that runs a stored session
in its recorded folder, not in the folder it was itself started in, first checks that the folder
is that one or inside it: ``tether serve`` (the server's folder) for a prompt or a durable run,
``tether submit`` (the folder it is typed in) for a durable run. The CLI, RPC and ACP run a
stored session in their own folder and need no check.
"""

from __future__ import annotations

import os
from pathlib import Path

from tether.errors import UserError


class FolderGoneError(UserError):
    """A stored session's folder no longer exists: the session cannot run where it ran."""


class FolderOutsideError(UserError):
    """A stored session's folder is not the folder it is run from nor inside it."""


def recorded_workspace(session_id: str, folder: str, within: str | os.PathLike[str], outside: str) -> Path:
    """``folder``, where session ``session_id`` was recorded, resolved, when it is ``within`` or
    inside it (``FolderOutsideError`` otherwise, saying "outside " and then ``outside``: the
    folder it was checked against and what to do; ``FolderGoneError`` when it is gone). Both
    are compared resolved, so neither ``..`` nor a link inside ``within`` leads out of it, and
    the resolved path is what runs: the folder as given would be resolved again when opened, and
    a link swapped after the check would lead wherever it then pointed."""
    if not Path(folder).is_dir():
        # Not "fork it": a fork keeps the recorded folder, so it is refused alike.
        raise FolderGoneError(
            f"session {session_id} ran in {folder}, which is gone: restore the folder, or "
            f"open it with tether --session {session_id} in the folder it should work in"
        )
    where = Path(os.path.realpath(folder))
    if not where.is_relative_to(os.path.realpath(within)):
        raise FolderOutsideError(f"session {session_id} was recorded in {folder}, outside {outside}")
    return where
