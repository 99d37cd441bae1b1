"""Bracketed pastes: read in time proportional to their length, and folded as pi folds them.

prompt-toolkit's key parser keeps a paste in one string, appends each read to it (a terminal
hands the program about a kilobyte at a time) and searches the whole of it for the end mark
after every read: a 5 MB paste took 73 s to reach the input box, the screen frozen meanwhile.
``PasteParser`` searches each read (with the few characters before it, where the mark may have
begun) and joins the pieces once, at the end mark. ``Pastes`` puts a large paste into the input
box as pi's marker.

A paste the terminal does not mark (bracketed paste off, ``tmux paste-buffer`` without ``-p``)
came as typed keys, each handled alone, the input box laid out again after each: 50 KB took 26 s
and 1.2 GB, 1 MB went past 5 GB in 90 s. Such input comes faster than anyone types: the
``BurstReader`` reads on while it comes, and the ``PasteParser`` takes a run of at least
``BURST`` characters of text in one read (no escape sequence, no control key but line ends and
tabs) as a paste.
"""

from __future__ import annotations

import re
import select

from prompt_toolkit.buffer import Buffer
from prompt_toolkit.input import Input
from prompt_toolkit.input.posix_utils import PosixStdinReader
from prompt_toolkit.input.vt100 import Vt100Input
from prompt_toolkit.input.vt100_parser import Vt100Parser
from prompt_toolkit.key_binding import KeyPress
from prompt_toolkit.keys import Keys

END = "\x1b[201~"
BURST = 256
"""Characters of text in one read taken as a paste: a person's keys come a few at a time (the
event loop reads as they come), a paste a kilobyte at a time."""
SETTLE = 0.05
"""Seconds the reader waits for the rest of a burst: tmux sent 1 MB in reads a millisecond apart."""
BURST_CAP = 16 * 1024 * 1024
"""The most characters read as one burst: input that never stops is still handled (in pastes
of this size)."""
_TEXT = re.compile(f"[^\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f]{{{BURST},}}")
"""A run of ``BURST`` characters of text: tab, line feed and carriage return the only controls."""


class BurstReader(PosixStdinReader):
    """A terminal's reader reading all there is, and once that is ``BURST`` characters, on while
    more comes within ``SETTLE``: a paste reaches the parser whole, one paste, not a paste a
    kilobyte (or a few keys, then a paste)."""

    def read(self, count: int = 1024) -> str:
        pieces = [super().read(count)]
        size = len(pieces[0])
        while size < BURST_CAP and self._more(SETTLE if size >= BURST else 0):
            more = super().read(65536)
            if not more:
                break
            pieces.append(more)
            size += len(more)
        return "".join(pieces)

    def _more(self, wait: float) -> bool:
        """More input is there within ``wait`` seconds (end of input included)."""
        try:
            return not self.closed and bool(select.select([self.stdin_fd], [], [], wait)[0])
        except OSError:  # the descriptor closed: read says so
            return False


class PasteParser(Vt100Parser):
    """prompt-toolkit's parser, but for the reads inside a bracketed paste, and a burst of text
    taken as a paste."""

    _pieces: tuple[list[str], str] | None = None
    """The paste's reads so far, and its last few characters (where the end mark may begin)."""
    _parsed = 0
    """Characters given to prompt-toolkit's parser less those its keys took: more than 0 while it
    holds the start of an escape sequence (what comes next may end it)."""

    def feed(self, data: str) -> None:
        if not self._in_bracketed_paste:
            self._pieces = None
            burst = _TEXT.search(data) if len(data) >= BURST else None
            if burst is None:
                self._parse(data)
                return
            start, end = burst.span()
            self._parse(data[:start])
            while self._parsed and start < end and not self._in_bracketed_paste:
                self._parse(data[start])  # the end of a sequence begun before
                start += 1
            if self._in_bracketed_paste:
                self.feed(data[start:])
                return
            self.feed_key_callback(KeyPress(Keys.BracketedPaste, data[start:end]))
            self.feed(data[end:])
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

    def _parse(self, data: str) -> None:
        """``data`` to prompt-toolkit's parser a character at a time, counted in ``_parsed``, as
        its ``feed`` does it: the rest to ``feed`` once a bracketed paste starts. A paste's end
        mark outside a paste (a paste taken as a burst before its mark came, a terminal's stray
        one) is no key: prompt-toolkit knows no such sequence and read it as Esc, then
        ``[201~`` typed, and Esc aborted the run."""
        at = 0
        while at < len(data):
            if self._in_bracketed_paste:
                self.feed(data[at:])
                return
            char = data[at]
            if char == "\x1b" and data.startswith(END, at):
                at += len(END)
                continue
            self._parsed += 1
            self._input_parser.send(char)
            at += 1

    def _call_handler(self, key: str | Keys | tuple[Keys, ...], insert_text: str) -> None:
        self._parsed -= len(insert_text)
        super()._call_handler(key, insert_text)


def install(terminal: Input) -> None:
    """Read ``terminal`` with a ``BurstReader`` and a ``PasteParser`` (a terminal's input only)."""
    if isinstance(terminal, Vt100Input):
        terminal.stdin_reader = BurstReader(terminal.stdin_reader.stdin_fd, encoding=terminal.stdin.encoding)
        terminal.vt100_parser = PasteParser(terminal.vt100_parser.feed_key_callback)


FOLD_LINES = 10
FOLD_CHARS = 1_000
"""pi's editor folds a paste of more lines or more characters than these into a marker."""


class Pastes:
    """pi's folded pastes: a paste of more than ``FOLD_LINES`` lines or ``FOLD_CHARS``
    characters goes into the input box as a marker (``[paste #1 +50000 lines]``,
    ``[paste #2 1500 chars]``), so a 5 MB paste neither fills the box nor is laid out on every
    key; the marker becomes the pasted text again when the message is sent (``expand``), and the
    message's echo in the scrollback shows the marker again (``shown``).

    A marker is one unit in the box, as in pi's editor: the cursor steps over it (``outside``)
    and a backspace, a delete or a word deleted takes all of it (``marker_at``); a marker
    edited anyway is no marker and is sent as typed. The pastes are kept for the session (a
    deleted marker is back with its paste on undo): a message recalled from the history (Up)
    carries its markers; one from an earlier session's history expands only if this session
    made the same marker (number and size)."""

    def __init__(self) -> None:
        self._pasted: dict[str, str] = {}
        """Each marker made, to its paste."""
        self._sent: dict[str, str] = {}
        """Messages sent with their pastes expanded, each to the text typed (the echo's)."""

    def fold(self, pasted: str) -> str:
        """What a paste puts into the input box: its text (line ends as ``\\n``), or a marker."""
        text = pasted.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.count("\n") + 1
        if lines <= FOLD_LINES and len(text) <= FOLD_CHARS:
            return text
        number = len(self._pasted) + 1
        marker = (
            f"[paste #{number} +{lines} lines]"
            if lines > FOLD_LINES
            else f"[paste #{number} {len(text)} chars]"
        )
        self._pasted[marker] = text
        return marker

    def expanded(self, typed: str) -> str:
        """``typed`` with each marker replaced by its paste."""
        if not self._pasted:
            return typed
        return _MARKER.sub(lambda found: self._pasted.get(found[0], found[0]), typed)

    def expand(self, typed: str) -> str:
        """``typed`` expanded (``expanded``): the message to send, its echo remembered."""
        sent = self.expanded(typed)
        if sent != typed:
            self._sent[sent] = typed
        return sent

    def folded_again(self, edited: str, typed: str) -> str:
        """What the external editor gave back for ``typed`` expanded (Ctrl-G, which edits the
        whole text, as pi's does), each paste of ``typed`` that came back unchanged its marker
        again: the box looks as it did but for the edits, a 5 MB paste not laid out in it. A
        paste changed in the editor comes back as text."""
        markers = [typed[start:end] for start, end in self.spans(typed)]
        for marker in sorted(markers, key=lambda marker: -len(self._pasted[marker])):  # a paste
            edited = edited.replace(self._pasted[marker], marker, 1)  # inside another: after it
        return edited

    def spans(self, typed: str) -> list[tuple[int, int]]:
        """Where in ``typed`` the markers this session made are (a marker-like text typed by hand
        is text)."""
        return [found.span() for found in _MARKER.finditer(typed) if found[0] in self._pasted]

    def marker_at(self, typed: str, position: int, *, before: bool) -> tuple[int, int] | None:
        """The span of the marker ending at ``position`` (``before``; starting there otherwise),
        if there is one: what a backspace (a delete) there removes whole."""
        for start, end in self.spans(typed):
            if (end if before else start) == position:
                return start, end
        return None

    def outside(self, typed: str, position: int, previous: int) -> int:
        """A cursor ``position`` inside a marker moved out of it: to its end when the cursor came
        from before ``position`` (Right, a word right), to its start otherwise (Left, Up, Down)."""
        for start, end in self.spans(typed):
            if start < position < end:
                return end if position > previous else start
        return position

    def shown(self, message: str) -> str:
        """A user message as the scrollback echoes it: a message sent from the input box with
        pastes in it as it was typed there (its markers), any other as it is."""
        for sent, typed in list(self._sent.items()):
            if sent in message:
                message = message.replace(sent, typed)
                del self._sent[sent]
        return message


def step_over_markers(buffer: Buffer, pastes: Pastes) -> None:
    """Keep ``buffer``'s cursor out of its markers, however it moved (arrows, words, Home/End of
    a wrapped line, a click): pi's editor moves over a marker as over one character."""
    previous = buffer.cursor_position

    def moved(_: Buffer) -> None:
        nonlocal previous
        position = buffer.cursor_position
        outside = pastes.outside(buffer.text, position, previous)
        previous = outside
        if outside != position:
            buffer.cursor_position = outside  # calls moved again, which finds it outside

    buffer.on_cursor_position_changed += moved


_MARKER = re.compile(r"\[paste #\d+ (?:\+\d+ lines|\d+ chars)\]")
