"""Completing ``@path`` mentions while the user types (a prompt-toolkit ``Completer``).

Kept apart from ``prompt_input`` so that building messages never imports prompt-toolkit, which
only the interactive mode needs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

MAX_COMPLETIONS = 200


class MentionCompleter(Completer):
    """Completes the ``@partial/path`` word under the cursor against files below ``root``.

    Directories complete with a trailing ``/`` so the user can keep descending; dotfiles are
    offered only once the partial name starts with a dot.
    """

    def __init__(self, root: Path) -> None:
        self.root = root

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        word = document.get_word_before_cursor(WORD=True)
        if not word.startswith("@"):
            return
        partial = word[1:]
        directory, _, prefix = partial.rpartition("/")
        base = self.root / os.path.expanduser(directory) if directory else self.root
        for name, is_dir in complete_path(base, prefix):
            suffix = "/" if is_dir else ""
            yield Completion(
                text=name[len(prefix) :] + suffix,
                start_position=0,
                display=name + suffix,
            )


def complete_path(directory: Path, prefix: str) -> list[tuple[str, bool]]:
    """Entries of ``directory`` starting with ``prefix``: ``(name, is_dir)``, directories first.

    Nothing for a folder no name can reach (a NUL byte typed into the prompt: ``os.scandir``
    raises ValueError, which came out of the ``@`` completer), as for one that cannot be listed."""
    try:
        entries = list(os.scandir(directory))
    except (OSError, ValueError):
        return []
    found: list[tuple[str, bool]] = []
    for entry in entries:
        if not entry.name.startswith(prefix) or (entry.name.startswith(".") and not prefix.startswith(".")):
            continue
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        found.append((entry.name, is_dir))
    found.sort(key=lambda item: (not item[1], item[0].lower()))
    return found[:MAX_COMPLETIONS]
