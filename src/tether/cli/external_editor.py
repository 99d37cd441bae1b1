"""Ctrl-G: edit the input box in the user's own editor (``$VISUAL``, else ``$EDITOR``).

The text goes to a temporary ``.md`` file, the editor runs on the terminal (the live area is
suspended meanwhile), and what the file holds when it exits becomes the input. An editor that
cannot start or exits with an error leaves the input as it was, and says so.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from tether.errors import UserError

FALLBACKS = ("editor", "nano", "vi")
"""Tried in order when neither ``VISUAL`` nor ``EDITOR`` is set (Debian's ``editor`` first)."""


class EditorError(UserError):
    """The editor did not give text back; the message says why, in one line."""


def editor_command(env: Mapping[str, str] | None = None) -> list[str]:
    """The editor to run: ``$VISUAL`` or ``$EDITOR`` (split like a shell would), else a fallback."""
    import shutil

    environ = os.environ if env is None else env
    for name in ("VISUAL", "EDITOR"):
        value = environ.get(name, "").strip()
        if value:
            try:
                return shlex.split(value)
            except ValueError as exc:
                raise EditorError(f"${name} ({value!r}) cannot be split into a command: {exc}") from None
    for program in FALLBACKS:
        if shutil.which(program, path=environ.get("PATH")) is not None:
            return [program]
    raise EditorError("no editor: set $VISUAL or $EDITOR")


def edit(text: str, command: list[str]) -> str:
    """Run ``command`` on a file holding ``text`` (blocking; the caller gives it the terminal)
    and return the file's text then, without the final newline editors add."""
    with tempfile.TemporaryDirectory(prefix="tether-edit-") as folder:
        path = Path(folder) / "prompt.md"
        path.write_text(text, encoding="utf-8")
        try:
            done = subprocess.run([*command, str(path)], check=False)
        except OSError as exc:
            raise EditorError(f"cannot run {command[0]!r}: {exc.strerror}; the input is unchanged") from None
        if done.returncode != 0:
            raise EditorError(f"{command[0]} exited with status {done.returncode}; the input is unchanged")
        edited = path.read_text(encoding="utf-8", errors="replace")
    return edited[:-1] if edited.endswith("\n") else edited
