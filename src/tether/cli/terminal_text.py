"""Text from elsewhere, made harmless for a terminal: control characters shown escaped.

File names (a cloned repository's skill folders), tool names and answers the model chose, error
bodies a server sent: written as they are, ``\\x1b]52;c;...\\x07`` sets the clipboard (OSC 52),
``\\x1b]0;...`` the window title, ``\\x1b[2J`` clears the screen and ``\\r`` writes over a line
already shown, U+202E shows the rest of a line reversed. Every C0 control but tab and newline,
DEL, the C1 controls and the bidirectional overrides and isolates are shown as ``\\x1b``- and
``\\u202e``-style escapes instead; so is a lone surrogate (a model's JSON ``"\\ud800"``), which
has no UTF-8 form: prompt-toolkit wrote ``?`` in its place, so an approval asked about
``echo \\ud800`` read ``echo ?``.

Print, JSON and RPC modes write their notes and errors to stderr through ``EscapingWriter``
(tty or not: a log file is read in a terminal later), and print mode its answer too when stdout
is a terminal; a pipe gets the answer's exact text, which is the script's data.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TextIO

from tether.wire.escapes import visible as visible  # the terminal's, and the worker log's


class EscapingWriter:
    """A text stream that writes ``visible`` text to another; the rest is the other's."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(visible(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> object:  # flush, fileno, isatty, encoding, buffer...
        return getattr(self.stream, name)
