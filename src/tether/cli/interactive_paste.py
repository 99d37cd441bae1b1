"""A bracketed paste read in time proportional to its length.

prompt-toolkit's key parser keeps a paste in one string, appends each read to it (a terminal
hands the program about a kilobyte at a time) and searches the whole of it for the end mark
after every read: a 5 MB paste took 73 s to reach the input box, the screen frozen meanwhile.
``PasteParser`` searches each read (with the few characters before it, where the mark may have
begun) and joins the pieces once, at the end mark.
"""

from __future__ import annotations

from prompt_toolkit.input import Input
from prompt_toolkit.input.vt100 import Vt100Input
from prompt_toolkit.input.vt100_parser import Vt100Parser
from prompt_toolkit.key_binding import KeyPress
from prompt_toolkit.keys import Keys

END = "\x1b[201~"


class PasteParser(Vt100Parser):
    """prompt-toolkit's parser, but for the reads inside a bracketed paste."""

    _pieces: tuple[list[str], str] | None = None
    """The paste's reads so far, and its last few characters (where the end mark may begin)."""

    def feed(self, data: str) -> None:
        if not self._in_bracketed_paste:
            self._pieces = None
            super().feed(data)  # calls feed again with the rest once a paste starts
            return
        pieces, before = self._pieces or ([], "")
        window = before + data
        found = window.find(END)
        if found < 0:
            pieces.append(data)
            self._pieces = (pieces, window[-(len(END) - 1) :])
            return
        cut = found - len(before)  # where the mark starts in data; < 0: in the reads before
        pasted = "".join(pieces)
        pasted = pasted[: len(pasted) + cut] if cut < 0 else pasted + data[:cut]
        self._pieces = None
        self._in_bracketed_paste = False
        self.feed_key_callback(KeyPress(Keys.BracketedPaste, pasted))
        self.feed(data[cut + len(END) :])


def install(terminal: Input) -> None:
    """Read ``terminal``'s bracketed pastes with a ``PasteParser`` (a terminal's input only)."""
    if isinstance(terminal, Vt100Input):
        terminal.vt100_parser = PasteParser(terminal.vt100_parser.feed_key_callback)
