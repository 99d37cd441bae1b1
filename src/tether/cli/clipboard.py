"""``/copy``: put text on the clipboard, through the terminal and through a local tool; Ctrl+V:
read an image (or else text) from it.

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

from tether.wire import ImageContent

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


IMAGE_TOOLS: tuple[tuple[str, tuple[str, ...], tuple[str, ...], str], ...] = (
    ("wl-paste", ("--list-types",), ("--type",), "WAYLAND_DISPLAY"),
    (
        "xclip",
        ("-selection", "clipboard", "-t", "TARGETS", "-o"),
        ("-selection", "clipboard", "-o", "-t"),
        "DISPLAY",
    ),
)
"""Program, arguments listing the clipboard's types, arguments before the type to read, and the
environment variable that says its display exists. A terminal cannot hand an image over (it
pastes text only), so an image is read where the clipboard lives: on this machine."""
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
TEXT_TYPES = ("text/plain;charset=utf-8", "UTF8_STRING", "text/plain", "STRING")
"""Text as Wayland (MIME types) and X11 (atoms) offer it, the UTF-8 forms first."""
MAX_IMAGE_BYTES = 20 * 1024 * 1024


class ClipboardError(Exception):
    """Why no image came from the clipboard (one line for the user)."""


def paste_image(env: Mapping[str, str] | None = None, *, text: bool = False) -> tuple[bytes, str]:
    """The clipboard's image and its MIME type, read with the first usable local tool; with
    ``text``, its text (and the type it came as) when it holds no image."""
    environ = os.environ if env is None else env
    tried: list[str] = []
    for program, list_args, read_args, display in IMAGE_TOOLS:
        found = shutil.which(program, path=environ.get("PATH"))
        if found is None or not environ.get(display):
            tried.append(f"{program} (needs {display})" if found else program)
            continue
        types = _run(found, list_args)
        if types is None:
            continue
        offered = types.decode("utf-8", "replace").split()
        mime = next((t for t in (*IMAGE_TYPES, *(TEXT_TYPES if text else ())) if t in offered), None)
        if mime is None:
            raise ClipboardError("the clipboard holds no image" + (" or text" if text else ""))
        data = _run(found, (*read_args, mime))
        if not data:
            raise ClipboardError(f"{program} gave no {mime} data")
        if len(data) > MAX_IMAGE_BYTES:
            raise ClipboardError(f"the clipboard's image is over {MAX_IMAGE_BYTES // (1024 * 1024)} MB")
        return data, mime
    raise ClipboardError(f"no clipboard reachable ({', '.join(tried)}); paste a file path with @ instead")


def paste_content(env: Mapping[str, str] | None = None) -> ImageContent | str:
    """Ctrl+V, as pi's: the clipboard's image as the image block a message carries, else its
    text (for a terminal whose own paste is another key, or none)."""
    data, mime = paste_image(env, text=True)
    if mime not in IMAGE_TYPES:
        return data.decode("utf-8", "replace")
    return {"type": "image", "data": base64.b64encode(data).decode("ascii"), "mimeType": mime}


def _run(program: str, args: tuple[str, ...]) -> bytes | None:
    try:
        done = subprocess.run(
            [program, *args], stdin=subprocess.DEVNULL, capture_output=True, timeout=5, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None
