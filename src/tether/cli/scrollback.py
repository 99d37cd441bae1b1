"""What the interactive mode printed above its live area, kept to be drawn again at a new width.

A narrowed terminal rewraps every row (tmux, kitty, VTE, iTerm2 do) but keeps its blank rows at
the bottom, so the rows above the live area, the input box's top among them, rise into the
scrollback, where no cursor can reach: stale copies of the input box stayed there (moving up
over the rows the rewrap added cannot go above the screen's first row), and what was printed
stayed cut where the terminal cut it, mid-word. pi clears the screen and the scrollback on
every width change and draws again everything it printed; so does tether. Each thing printed is
kept as a ``render.Item`` and rendered again at the new width. An item keeps what it shows, not
what it was made from: a tool's line and its folded result, not the result with its images
(``render.FinishedTool``, ``render.ended_item``).

A long session's redraw is bounded: the newest items filling ``KEPT_ROWS`` rows are kept, as
many as tmux keeps by default (``history-limit``); older ones are dropped, and the top of a
redraw says where the whole conversation is (the transcript, Ctrl-O).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any

from prompt_toolkit.application import Application

from tether.cli.render import Item, Painter

CLEAR = "\x1b[H\x1b[2J\x1b[3J"
"""Cursor home, erase the screen, then the scrollback: in this order, since tmux
(``scroll-on-clear``) and other terminals move an erased screen into the scrollback."""
KEPT_ROWS = 2_000
"""Rows of output kept to be drawn again: tmux's default ``history-limit``. A redraw at this
bound (about 200 items: a turn's prompt, answer and tool result) costs 0.67 G instructions
(callgrind), 0.3-0.5 s, at any session length."""
SETTLE = 0.1
"""Seconds a new size must hold before the redraw (``follow_width``)."""
EARLIER = "── earlier output above this point: Ctrl-O (the transcript) shows the conversation ──"


class Scrollback:
    """The items printed, newest last, with the rows each took when last drawn."""

    def __init__(self, rows: int = KEPT_ROWS) -> None:
        self._limit = rows
        self._items: deque[tuple[Item, int]] = deque()
        self._rows = 0
        self._dropped = False
        self.width: int | None = None
        """The width of what is on screen (set by the first item printed)."""

    def add(self, item: Item, painter: Painter) -> str:
        """``item``'s text at ``painter``'s width, kept to be drawn again (when not empty)."""
        text = item(painter)
        if not text:
            return text
        if self.width is None:
            self.width = painter.width
        self._items.append((item, _rows(text)))
        self._rows += self._items[-1][1]
        while self._rows - self._items[0][1] >= self._limit:
            self._rows -= self._items.popleft()[1]
            self._dropped = True
        return text

    def redraw(self, painter: Painter) -> str | None:
        """When ``painter``'s width is not the one on screen: what clears the screen and the
        scrollback and draws every item kept again at that width (the newest filling
        ``KEPT_ROWS`` rows: a narrower width takes more rows). ``None``: same width."""
        if self.width in (None, painter.width):
            return None
        self.width = painter.width
        texts: list[str] = []
        kept: deque[tuple[Item, int]] = deque()
        self._rows = 0
        for item, _ in reversed(self._items):
            if self._rows >= self._limit:
                self._dropped = True
                break
            texts.append(_drawn(item, painter))
            kept.appendleft((item, _rows(texts[-1])))
            self._rows += kept[0][1]
        self._items = kept
        if self._dropped:
            texts.append(painter.styled(EARLIER, "muted"))
        return CLEAR + "\n".join(reversed(texts))


def _drawn(item: Item, painter: Painter) -> str:
    """``item`` at ``painter``'s width; a display bug shown in its place (an extension's renderer
    of its messages may fail at a width it did not fail at), never raised into the resize."""
    try:
        return item(painter)
    except Exception as exc:
        return painter.styled(f"(display error: {type(exc).__name__}: {exc})", "error")


def _rows(text: str) -> int:
    """The rows ``text`` takes: its lines (rendered at the width, none is wider)."""
    return text.count("\n") + 1


def follow_width(app: Application[Any], redraw: Callable[[], None]) -> None:
    """Call ``redraw`` once the terminal of ``app`` (an inline application) has kept its size for
    ``SETTLE`` seconds: dragging a window's edge resizes it many times a second, and each redraw
    of a long session costs tenths of a second (the live area is drawn again at once, as before)."""
    original = app._on_resize  # pyright: ignore[reportPrivateUsage]
    pending: list[asyncio.TimerHandle] = []

    def on_resize() -> None:
        for handle in pending:
            handle.cancel()
        pending[:] = [asyncio.get_running_loop().call_later(SETTLE, redraw)]
        original()

    app._on_resize = on_resize  # pyright: ignore[reportAttributeAccessIssue, reportPrivateUsage]
