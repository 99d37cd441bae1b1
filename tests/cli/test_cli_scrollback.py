"""What the interactive mode printed, kept to be drawn again at a new width (``scrollback``): the
real drawing in a terminal is the tmux test's (``test_cli_tui_pi``); here, what is kept and what
a redraw holds."""

from __future__ import annotations

from tether.cli import render
from tether.cli.render import Painter
from tether.cli.scrollback import CLEAR, EARLIER, Scrollback

WIDE, NARROW = Painter(100, False), Painter(40, False)
ANSWER = " ".join(f"word{n}" for n in range(30))


def answer(painter: Painter) -> str:
    return painter.markdown(ANSWER)


def test_a_width_change_clears_and_draws_every_item_again_at_the_new_width() -> None:
    kept = Scrollback()
    printed = [kept.add(render.note("tether · header", "muted"), WIDE), kept.add(answer, WIDE)]
    assert printed[1] == WIDE.markdown(ANSWER)
    assert kept.redraw(WIDE) is None  # same width: nothing to do
    redrawn = kept.redraw(NARROW)
    assert redrawn is not None and redrawn.startswith(CLEAR)
    assert redrawn == CLEAR + "tether · header\n" + NARROW.markdown(ANSWER)
    assert all(len(line) <= 40 for line in redrawn.splitlines())
    assert redrawn.count("\n") > CLEAR.count("\n") + "\n".join(printed).count("\n")  # rewrapped: more rows
    assert kept.redraw(NARROW) is None


def test_an_empty_item_is_neither_printed_nor_kept() -> None:
    kept = Scrollback()
    assert kept.add(render.note("", ""), WIDE) == ""
    assert kept.width is None  # nothing on screen yet
    kept.add(render.note("shown", ""), WIDE)
    assert kept.redraw(NARROW) == CLEAR + "shown"


def test_a_long_session_keeps_and_redraws_only_its_newest_rows() -> None:
    """Only the newest items filling the row limit are kept: a redraw's cost does not grow with
    the session, and a line at the top says where the rest is."""
    kept = Scrollback(rows=100)
    for n in range(1_000):
        kept.add(render.note(f"line {n}\nsecond row", ""), WIDE)
    redrawn = kept.redraw(Painter(90, False))
    assert redrawn is not None
    lines = redrawn.removeprefix(CLEAR).splitlines()
    assert EARLIER[:30] in lines[0] and lines[-2:] == ["line 999", "second row"]
    assert 100 <= len(lines) - 1 <= 102  # whole items, the newest first, up to the limit
    assert lines[1] == f"line {1_000 - (len(lines) - 1) // 2}"


def test_an_item_failing_at_the_new_width_is_shown_as_a_display_error() -> None:
    def fussy(painter: Painter) -> str:
        if painter.width < 80:
            raise ValueError("narrow")
        return "wide enough"

    kept = Scrollback()
    kept.add(fussy, WIDE)
    kept.add(render.note("after it", ""), WIDE)
    assert kept.redraw(NARROW) == CLEAR + "(display error: ValueError: narrow)\nafter it"
