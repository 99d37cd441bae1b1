"""Prompt syntax that the host runs itself, turned into transcript messages
(seed 000, ``reference/seeds/000-wire.txt``).

- ``!cmd`` runs a shell command and records a ``bashExecution`` message; ``!!cmd`` records it
  with ``excludeFromContext`` (the user sees it, the model does not);
- ``$code`` / ``$$code`` do the same for Python (``pythonExecution``), run in a subprocess with
  the current interpreter, so a crash or ``sys.exit`` cannot take the host down;
- ``@path`` mentions attach files as one ``fileMention`` message: text with its line count and
  size, images as image content, and a ``skippedReason`` instead of content for files that are
  too large or binary.

These functions only build messages; the CLI decides when to run them and how to show them.
"""

from __future__ import annotations

import base64
import os
import re
import sys
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import NotRequired

from typing_extensions import TypedDict

from tether.ai.abort import AbortSignal
from tether.tools.bash import shell_argv
from tether.tools.read import MAX_IMAGE_BYTES
from tether.tools.sandbox import Sandbox
from tether.tools.sniff import SNIFF_BYTES, image_mime_type, looks_binary
from tether.tools.workspace import Workspace
from tether.wire import (
    BashExecutionMessage,
    FileMentionItem,
    FileMentionMessage,
    JsonObject,
    PythonExecutionMessage,
)

MAX_MENTION_BYTES = 256 * 1024
"""Text files larger than this are mentioned by name only (``skippedReason: tooLarge``)."""

_MENTION = re.compile(r"""(?:^|(?<=\s))@(?:"([^"]+)"|(\S+))""")
_TRAILING_PUNCTUATION = ".,;:!?)]}'\""


@dataclass(frozen=True, slots=True)
class ShellInput:
    """``!cmd`` (``exclude_from_context=False``) or ``!!cmd`` (``True``)."""

    command: str
    exclude_from_context: bool


@dataclass(frozen=True, slots=True)
class PythonInput:
    """``$code`` (``exclude_from_context=False``) or ``$$code`` (``True``)."""

    code: str
    exclude_from_context: bool


def parse_prompt_input(text: str) -> ShellInput | PythonInput | None:
    """Classify a prompt: shell or Python input for the host to run, or ``None`` for the model."""
    for marker, kind in (("!", ShellInput), ("$", PythonInput)):
        if text.startswith(marker):
            exclude = text.startswith(marker * 2)
            body = text[2 if exclude else 1 :].strip()
            return kind(body, exclude) if body else None
    return None


async def run_shell_input(
    command: str,
    *,
    cwd: Path,
    sandbox: Sandbox | None = None,
    exclude_from_context: bool = False,
    signal: AbortSignal | None = None,
    on_output: Callable[[str], None] | None = None,
    timeout: float | None = None,
    env_passthrough: Collection[str] = (),
) -> BashExecutionMessage:
    """Run ``command`` with ``bash -c`` in ``cwd`` (confined by ``sandbox``, when given) and record it
    as a ``bashExecution`` message."""
    argv = shell_argv(command)
    run = await _execute(
        argv, cwd, exclude_from_context, signal, on_output, timeout, env_passthrough, sandbox
    )
    return {"role": "bashExecution", "command": command, **run}


async def run_python_input(
    code: str,
    *,
    cwd: Path,
    sandbox: Sandbox | None = None,
    exclude_from_context: bool = False,
    signal: AbortSignal | None = None,
    on_output: Callable[[str], None] | None = None,
    timeout: float | None = None,
    env_passthrough: Collection[str] = (),
) -> PythonExecutionMessage:
    """Run ``code`` with this interpreter (unbuffered, so output streams) as ``pythonExecution``."""
    argv = [sys.executable, "-u", "-c", code]
    run = await _execute(
        argv, cwd, exclude_from_context, signal, on_output, timeout, env_passthrough, sandbox
    )
    return {"role": "pythonExecution", "code": code, **run}


class _Execution(TypedDict):
    """The fields ``bashExecution`` and ``pythonExecution`` messages share, in wire order."""

    output: str
    cancelled: bool
    truncated: bool
    timestamp: int
    exitCode: NotRequired[int]
    meta: NotRequired[JsonObject]
    excludeFromContext: NotRequired[bool]


async def _execute(
    argv: list[str],
    cwd: Path,
    exclude_from_context: bool,
    signal: AbortSignal | None,
    on_output: Callable[[str], None] | None,
    timeout: float | None,
    env_passthrough: Collection[str],
    sandbox: Sandbox | None,
) -> _Execution:
    from tether.tools.process import run_process  # loads with the first `!` command, not at start-up

    result = await run_process(
        argv,
        cwd=cwd,
        timeout=timeout,
        signal=signal,
        on_output=on_output,
        env_passthrough=env_passthrough,
        sandbox=sandbox,
    )
    run: _Execution = {
        "output": result.output,
        "cancelled": result.cancelled or result.timed_out,
        "truncated": result.truncated,
        "timestamp": _now_ms(),
    }
    if result.exit_code is not None:
        run["exitCode"] = result.exit_code
    if result.timed_out:
        run["meta"] = {"timedOut": True, "timeoutSeconds": timeout}
    if exclude_from_context:
        run["excludeFromContext"] = True
    return run


def find_mentions(text: str, cwd: Path, workspace: Workspace | None = None) -> list[Path]:
    """Files named by ``@path`` (or ``@"path with spaces"``) tokens that exist, in order, once each.

    An ``@`` inside a word (``user@example.com``) is not a mention, and ``@name`` that names no
    file is left alone: it is prose. Trailing punctuation is dropped when the path is followed
    by it ("look at @notes.md."). A mention obeys the same workspace policy as the ``read`` tool
    (default: ``Workspace(cwd)``): ``@/etc/passwd`` or ``@~/.ssh/id_rsa`` outside the allowed
    roots, or a file the sandbox hides from the tools (credentials, tether's keys and sessions,
    even with ``--allow-outside`` or in a workspace that holds them), is left as text, so a prompt
    cannot send what the model could not read.
    """
    policy = workspace if workspace is not None else Workspace(cwd)
    found: list[Path] = []
    for match in _MENTION.finditer(text):
        quoted, bare = match.group(1), match.group(2)
        candidates = [quoted] if quoted else [bare, bare.rstrip(_TRAILING_PUNCTUATION)]
        for candidate in candidates:
            if not candidate:
                continue
            path = _real_file(cwd / os.path.expanduser(candidate))
            if path is None or not policy.readable(path):
                continue
            if path not in found:
                found.append(path)
            break
    return found


def _real_file(path: Path) -> Path | None:
    """The regular file ``path`` names, resolved, or ``None``: nothing there, a folder, a FIFO, or
    a name no file can have (a link loop, RuntimeError on Python 3.11; a name too long for the
    file system; a NUL byte). Such a mention is prose; raised, it ended the run with a traceback."""
    try:
        real = path.resolve()
        return real if real.is_file() else None
    except (OSError, RuntimeError, ValueError):
        return None


def file_mention_item(path: Path, shown: str) -> FileMentionItem:
    """One attached file: its text, or its image, or why it was skipped."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        head = handle.read(SNIFF_BYTES)
        mime = image_mime_type(head)
        if mime is not None and size <= MAX_IMAGE_BYTES:
            data = head + handle.read()
            return {
                "path": shown,
                "content": "",
                "byteSize": size,
                "image": {"type": "image", "data": base64.b64encode(data).decode(), "mimeType": mime},
            }
        if mime is None and looks_binary(head):
            return {"path": shown, "content": "", "byteSize": size, "skippedReason": "binary"}
        if mime is not None or size > MAX_MENTION_BYTES:
            return {"path": shown, "content": "", "byteSize": size, "skippedReason": "tooLarge"}
        text = (head + handle.read()).decode("utf-8", errors="replace")
    lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    return {"path": shown, "content": text, "lineCount": lines, "byteSize": size}


def file_mentions_message(
    text: str, cwd: Path, workspace: Workspace | None = None
) -> FileMentionMessage | None:
    """The ``fileMention`` message for every file ``text`` mentions, or ``None`` if none."""
    paths = find_mentions(text, cwd, workspace)
    if not paths:
        return None
    resolved_cwd = cwd.resolve()
    items: list[FileMentionItem] = []
    for path in paths:
        try:
            items.append(file_mention_item(path, _display(path, resolved_cwd)))
        except OSError:  # no permission, gone since, /proc/self/mem's EIO: prose, as @nobody is
            continue
    return {"role": "fileMention", "files": items, "timestamp": _now_ms()} if items else None


def _display(path: Path, cwd: Path) -> str:
    return path.relative_to(cwd).as_posix() if path.is_relative_to(cwd) else str(path)


def _now_ms() -> int:
    return int(time.time() * 1000)
