"""Completion as you type in the input box: ``/`` offers commands, ``@`` offers files.

Both open their menu on the first character, as pi's do, and both match fuzzily: a command whose
name starts with what is typed comes first, then one that contains it, then one whose letters
appear in order; files come from a ``FileIndex`` listed once in the background (``.gitignore``
respected). Anything else typed asks nothing of them, so plain typing costs what it did.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from tether.cli.file_index import FileIndex, in_order
from tether.cli.terminal_text import visible
from tether.tools.completion import MentionCompleter


def rank(query: str, names: Iterable[str]) -> list[str]:
    """``names`` matching ``query``: prefix matches, then substring, then in-order letters."""
    query = query.lower()
    prefix: list[str] = []
    inside: list[str] = []
    scattered: list[str] = []
    for name in names:
        lowered = name.lower()
        if lowered.startswith(query):
            prefix.append(name)
        elif query in lowered:
            inside.append(name)
        elif in_order(query, lowered):
            scattered.append(name)
    return prefix + inside + scattered


class CommandCompleter(Completer):
    """``/`` at the start of the input: the commands (built-in ones, then those of the user's
    prompts, skills and extensions), each with what it does."""

    def __init__(self, commands: Sequence[tuple[str, str]]) -> None:
        self._commands = dict(commands)

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/") or " " in text or "\n" in text:
            return
        for name in rank(text[1:], self._commands):
            yield Completion(
                name,
                start_position=-(len(text) - 1),
                display=visible(f"/{name}"),
                display_meta=visible(self._commands[name]),
            )


class FileCompleter(Completer):
    """``@`` anywhere: files and folders of the project, matched fuzzily against the index; while
    the index is still being listed, the folder-by-folder completion of ``MentionCompleter``."""

    def __init__(self, index: FileIndex, limit: int = 30) -> None:
        self._index = index
        self._limit = limit
        self._fallback = MentionCompleter(index.root)

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        word = document.get_word_before_cursor(WORD=True)
        if not word.startswith("@"):
            return
        if not self._index.ready:
            for found in self._fallback.get_completions(document, complete_event):
                yield Completion(found.text, found.start_position, display=visible(found.display_text))
            return
        partial = word[1:]
        for path in self._index.search(partial, self._limit):
            yield Completion(path, start_position=-len(partial), display=visible(path))
