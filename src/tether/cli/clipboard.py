"""``/copy``: put text on the clipboard, through the terminal and through a local tool.

OSC 52 asks the terminal itself to set the clipboard, so it works over SSH and inside tmux
(``set-clipboard on``); terminals that do not support it ignore the sequence. A local clipboard
program is used as well when one is installed and its display is there (``wl-copy`` under
Wayland, ``xclip``/``xsel`` under X11, ``pbcopy`` on macOS), for terminals without OSC 52.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping

LOCAL_TOOLS: tuple[tuple[str, tuple[str, ...], str | None], ...] = (
    ("wl-copy", (), "WAYLAND_DISPLAY"),
    ("xclip", ("-selection", "clipboard"), "DISPLAY"),
    ("xsel", ("--clipboard", "--input"), "DISPLAY"),
    ("pbcopy", (), None),
)
"""Program, arguments, and the environment variable that says its display exists."""


def osc52(text: str) -> str:
    """The escape sequence that sets the terminal's clipboard to ``text``."""
    return "\x1b]52;c;" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "\x07"


def copy_locally(text: str, env: Mapping[str, str] | None = None) -> str | None:
    """Give ``text`` to the first usable local clipboard program; its name, or ``None``."""
    environ = os.environ if env is None else env
    for program, args, display in LOCAL_TOOLS:
        if display is not None and not environ.get(display):
            continue
        if program == "pbcopy" and sys.platform != "darwin":
            continue
        found = shutil.which(program, path=environ.get("PATH"))
        if found is None:
            continue
        try:
            done = subprocess.run(
                [found, *args],
                input=text.encode("utf-8"),
                stdout=subprocess.DEVNULL,  # xclip stays behind to serve the selection: no pipes to wait on
                stderr=subprocess.DEVNULL,
                timeout=5,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return program
    return None
