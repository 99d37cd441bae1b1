"""Full-screen views over the interactive mode: the transcript (Ctrl-O), the tree navigator
(``/tree``) and the small questions that follow it.

Each view is its own prompt-toolkit application on the terminal's alternate screen, so the
scrollback underneath is untouched and comes back as it was. The caller runs them inside
``prompt_toolkit.application.in_terminal()``: that suspends the main application (its input box
keeps its text) for as long as the views are up. Scrolling state is a plain ``Viewport``, tested
without a terminal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from prompt_toolkit.application import Application, get_app_session
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import ANSI, StyleAndTextTuples, to_formatted_text
from prompt_toolkit.formatted_text.utils import split_lines
from prompt_toolkit.input import Input
from prompt_toolkit.input.vt100 import Vt100Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.key_binding.key_bindings import KeyHandlerCallable as KeyHandler
from prompt_toolkit.layout import Container, HSplit, Layout, VSplit, Window
from prompt_toolkit.layout.controls import BufferControl, FormattedTextControl, UIContent, UIControl
from prompt_toolkit.layout.layout import FocusableElement
from prompt_toolkit.layout.processors import PasswordProcessor, Processor
from prompt_toolkit.mouse_events import MouseEvent, MouseEventType
from prompt_toolkit.output.color_depth import ColorDepth
from prompt_toolkit.styles import Style

from tether.cli import interactive_paste
from tether.cli.keybindings import DEFAULTS, Bindings
from tether.cli.terminal_text import visible
from tether.session.tree_view import (
    FILTERS,
    HERE,
    TreeRow,
    TreeSource,
    branch_jump,
    fit,
    label_time,
    row_line,
)

STYLE = Style.from_dict(
    {
        "bar": "reverse",
        "row.selected": "reverse",
        "row.path": "bold",
        "row.off": "ansibrightblack",
        "row.here": "bold ansigreen",
    }
)
WHEEL_LINES = 3
VIEW_KEYS: tuple[tuple[str, str], ...] = (
    ("↑↓ PgUp PgDn Home End", "in the transcript, the tree and the pickers: move"),
    ("Esc, q", "close a view (q: not in the pickers, where it is text to search)"),
    ("Ctrl-S Ctrl-R Ctrl-D", "in /resume: sort by date or name, rename, delete (then y)"),
)
"""The fixed keys of the full-screen views, for ``/hotkeys``."""


@dataclass(slots=True)
class Viewport:
    """``height`` visible lines out of ``count``, from ``top``; with a ``cursor`` for lists.

    Every move clamps: the view never scrolls past the last line, and a cursor stays visible.
    """

    count: int
    height: int = 1
    top: int = 0
    cursor: int | None = None

    def resize(self, count: int, height: int) -> None:
        self.count, self.height = count, max(1, height)
        if self.cursor is not None:
            self.move(0)
        else:
            self.scroll(0)

    def scroll(self, delta: int) -> None:
        """Move the view (a pager); a cursor moves with it if it would leave the screen."""
        self.top = max(0, min(self.top + delta, self.count - self.height))
        if self.cursor is not None:
            self.cursor = max(self.top, min(self.cursor, self.top + self.height - 1, self.count - 1))

    def move(self, delta: int) -> None:
        """Move the cursor (a list); the view follows it."""
        if self.cursor is None:
            self.scroll(delta)
            return
        self.cursor = max(0, min(self.cursor + delta, self.count - 1))
        if self.cursor < self.top:
            self.top = self.cursor
        elif self.cursor >= self.top + self.height:
            self.top = self.cursor - self.height + 1
        self.top = max(0, min(self.top, self.count - self.height))

    def home(self) -> None:
        self.move(-self.count)

    def end(self) -> None:
        self.move(self.count)

    @property
    def page(self) -> int:
        return max(1, self.height - 1)


LineSource = Callable[[int, int], tuple[int, Callable[[int], StyleAndTextTuples]]]
"""For a width and a height: how many lines there are, and a function making line ``i`` (asked
only for the lines on screen, so a tree of thousands of entries costs one screenful per redraw)."""


class Lines(UIControl):
    """A scrolled window over the lines of a ``LineSource``."""

    def __init__(self, source: LineSource, view: Viewport) -> None:
        self._source = source
        self.view = view

    def is_focusable(self) -> bool:
        return True

    def create_content(self, width: int, height: int) -> UIContent:
        count, line = self._source(width, height)
        self.view.resize(count, height)
        top = self.view.top
        return UIContent(get_line=lambda i: line(top + i), line_count=max(0, min(height, count - top)))

    def mouse_handler(self, mouse_event: MouseEvent) -> Any:
        if mouse_event.event_type == MouseEventType.SCROLL_UP:
            self.view.scroll(-WHEEL_LINES)
        elif mouse_event.event_type == MouseEventType.SCROLL_DOWN:
            self.view.scroll(WHEEL_LINES)
        else:
            return NotImplemented
        return None


def navigation_keys(keys: KeyBindings, view: Viewport) -> None:
    @keys.add("up")
    def _up(event: KeyPressEvent) -> None:
        view.move(-1)

    @keys.add("down")
    def _down(event: KeyPressEvent) -> None:
        view.move(1)

    @keys.add("pageup")
    def _page_up(event: KeyPressEvent) -> None:
        view.move(-view.page)

    @keys.add("pagedown")
    def _page_down(event: KeyPressEvent) -> None:
        view.move(view.page)

    @keys.add("home")
    def _home(event: KeyPressEvent) -> None:
        view.home()

    @keys.add("end")
    def _end(event: KeyPressEvent) -> None:
        view.end()


def application(
    title: Callable[[], str],
    body: Container,
    footer: Callable[[], str],
    keys: KeyBindings,
    *,
    color: bool,
    focus: FocusableElement | None = None,
) -> Application[Any]:
    """A full-screen view: a title bar, ``body``, a footer bar; ``focus`` (default: the body) has
    the keyboard."""
    layout = HSplit(
        [
            Window(FormattedTextControl(lambda: [("class:bar", " " + title())]), height=1, style="class:bar"),
            body,
            Window(
                FormattedTextControl(lambda: [("class:bar", " " + footer())]), height=1, style="class:bar"
            ),
        ]
    )
    app: Application[Any] = Application(
        layout=Layout(layout, focused_element=focus if focus is not None else body),
        input=own_input(),
        key_bindings=keys,
        style=STYLE,
        full_screen=True,
        mouse_support=True,
        color_depth=None if color else ColorDepth.DEPTH_1_BIT,
    )
    app.ttimeoutlen = 0.05  # a lone Esc closes at once, not after half a second
    return app


def own_input() -> Input:
    """A key parser of the view's own on the terminal the suspended application reads.

    A view runs while the inline application is suspended, not finished: that application's
    pending "flush the half-read key" timer (armed by its last key, e.g. the Enter of ``/tree``,
    firing ``ttimeoutlen`` later) still calls ``flush_keys()`` on its input. Shared, that input
    held the view's Esc (a prefix of escape sequences, waiting ``ttimeoutlen`` for more), so the
    suspended application took it and the view never closed. With a parser of its own, a view's
    keys reach the view alone; both read the same descriptor, one at a time (the suspended one
    is detached)."""
    shared = get_app_session().input
    if not isinstance(shared, Vt100Input):
        return shared
    own = Vt100Input(shared.stdin)
    interactive_paste.install(own)
    return own


async def run_view(app: Application[Any]) -> Any:
    # The main application owns Ctrl-C (SIGINT) handling; these views see it as a key.
    return await app.run_async(handle_sigint=False)


@dataclass(slots=True)
class _Pages:
    """The transcript's lines rendered so far (the newest part), grown upwards by ``older()``."""

    older: Callable[[], str | None]
    lines: list[StyleAndTextTuples] = field(default_factory=lambda: [])
    done: bool = False

    def load(self) -> int:
        """Render the next older chunk above the rest; how many lines it added (0: none left)."""
        text = self.older()
        if text is None:
            self.done = True
            return 0
        added = list(split_lines(to_formatted_text(ANSI(text))))
        if self.lines:
            added.append([])  # the blank line between two messages
        self.lines[:0] = added
        return len(added)


class TranscriptLines:
    """The transcript view's ``LineSource``: rendered chunks per (width, thinking), grown upwards
    while fewer than two screens are rendered above the view, so a page up never waits on one."""

    def __init__(
        self,
        make_pages: Callable[[int, bool], Callable[[], str | None]],
        view: Viewport,
        *,
        show_thinking: bool,
    ) -> None:
        self._make_pages = make_pages
        self._view = view
        self._cache: dict[tuple[int, bool], _Pages] = {}
        self._shown: _Pages | None = None
        self.show_thinking = show_thinking
        self.to_start = False
        """Render everything up to the first message and move there (Home), on the next call."""

    @property
    def more(self) -> bool:
        """Older messages are not rendered yet."""
        return self._shown is None or not self._shown.done

    def __call__(self, width: int, height: int) -> tuple[int, Callable[[int], StyleAndTextTuples]]:
        key = (width, self.show_thinking)
        pages = self._cache.get(key)
        if pages is None:
            pages = self._cache[key] = _Pages(self._make_pages(width, self.show_thinking))
        self._shown = pages
        view = self._view
        while not pages.done and (self.to_start or min(view.top, len(pages.lines) - height) < 2 * height):
            view.top += pages.load()
        if self.to_start:
            self.to_start, view.top = False, 0
        return len(pages.lines), pages.lines.__getitem__


async def show_transcript(
    make_pages: Callable[[int, bool], Callable[[], str | None]], *, show_thinking: bool, color: bool
) -> bool:
    """Page through a transcript, starting at the end. ``make_pages(width, show_thinking)`` gives
    a function returning the ANSI text of older and older chunks (``None`` at the start): only the
    chunks needed to fill the screens above the view are rendered, so opening and scrolling cost
    what is on screen, whatever the session's length. Ctrl-T toggles thinking; Esc, q or Ctrl-O
    close. Returns the thinking setting at close."""
    view = Viewport(count=0, top=1 << 30)
    lines = TranscriptLines(make_pages, view, show_thinking=show_thinking)

    keys = KeyBindings()
    navigation_keys(keys, view)

    @keys.add("home")
    def _start(event: KeyPressEvent) -> None:
        lines.to_start = True  # rendered on the next redraw: everything above, then the top

    @keys.add("escape", eager=True)
    @keys.add("q")
    @keys.add("c-o")
    @keys.add("c-c")
    def _close(event: KeyPressEvent) -> None:
        event.app.exit(result=lines.show_thinking)

    @keys.add("c-t")
    def _thinking(event: KeyPressEvent) -> None:
        at_end = view.top + view.height >= view.count
        lines.show_thinking = not lines.show_thinking
        if at_end:
            view.top = 1 << 30  # stay at the bottom when the text above grows or shrinks

    def footer() -> str:
        last = min(view.count, view.top + view.height)
        thinking = "shown" if lines.show_thinking else "folded"
        more = "+" if lines.more else ""  # older messages not rendered yet
        return (
            f"lines {view.top + 1}-{last} of {view.count}{more} · ↑↓ PgUp PgDn Home End · "
            f"Ctrl-T thinking ({thinking}) · q/Esc close"
        )

    body = Window(Lines(lines, view))
    app = application(
        lambda: "Transcript · the current branch, nothing folded", body, footer, keys, color=color
    )
    return bool(await run_view(app))


@dataclass(frozen=True, slots=True)
class EditLabel:
    """What the tree navigator returns for Shift-L: edit ``row``'s label, then come back."""

    row: TreeRow
    search: str
    """What was typed in the search line, to come back to."""
    mode: str = "default"
    """The filter in use, to come back to."""


FILTER_ACTIONS = {
    "app.tree.filter.default": "default",
    "app.tree.filter.noTools": "no-tools",
    "app.tree.filter.userOnly": "user-only",
    "app.tree.filter.labeledOnly": "labeled-only",
    "app.tree.filter.all": "all",
}
"""pi's filter actions; each but the default toggles its filter and the default view."""


async def pick_tree_row(
    source: TreeSource,
    *,
    start: str | None = None,
    search: str = "",
    mode: str = "default",
    color: bool,
    bindings: Bindings = DEFAULTS,
    copy: Callable[[str], str] | None = None,
) -> TreeRow | EditLabel | None:
    """The tree navigator: the cursor starts on entry ``start`` (default: the current one);
    Enter picks, Esc/q cancel, Shift-L asks to edit the row's label (pi's ``app.tree.editLabel``),
    Shift-T shows when each label was set, Ctrl-X hands the row's whole text to ``copy`` (which
    answers where it went, shown in the footer while the cursor stays on that row).
    Typing searches (every word typed must appear in a row's text or label, case ignored: type
    it in lower case, as L is taken; q is then text, Esc clears the search first). pi's filters:
    Ctrl-D the default view, Ctrl-T no tool results, Ctrl-U only your messages, Ctrl-L only
    labelled entries, Ctrl-A everything (each but Ctrl-D toggles back to the default), Ctrl-O
    cycles through them; Ctrl-Left folds the branch under the cursor (or goes up to the start
    of its branch), Ctrl-Right unfolds it (or goes down to the next fork). A filter, a fold or
    a search clears the folds, as in pi. Rows are rebuilt only on a filter or a fold. The keys
    are those ``bindings`` (``keybindings.json``) give pi's ``app.tree.*`` actions."""
    query = Buffer(multiline=False, document=Document(search, len(search)))
    state = {"mode": mode, "copied": "", "copied_row": ""}
    label_times = [False]
    now = datetime.now().astimezone()
    folded: set[str] = set()
    rows: list[TreeRow] = source.rows(mode)
    shown: list[int] = []
    view = Viewport(count=len(rows), cursor=0)

    def refresh(keep: str | None) -> None:
        words = query.text.lower().split()
        shown[:] = [
            i
            for i, row in enumerate(rows)
            if all(word in f"{row.text} {row.label or ''}".lower() for word in words)
        ]
        view.count = len(shown)
        at = next((n for n, i in enumerate(shown) if rows[i].id == keep), None)
        if at is None:
            at = next((n for n, i in enumerate(shown) if rows[i].current), len(shown) - 1)
        view.cursor = max(0, at)
        view.top = max(0, view.cursor - 5)
        view.move(0)

    def rebuild(keep: str | None) -> None:
        rows[:] = source.rows(state["mode"], folded)
        refresh(source.nearest(keep, rows))

    def selected() -> TreeRow | None:
        cursor = view.cursor
        return rows[shown[cursor]] if cursor is not None and 0 <= cursor < len(shown) else None

    refresh(start)

    def searched(_buffer: Buffer) -> None:
        row = selected()
        if folded:
            folded.clear()
            rebuild(row.id if row else None)
        else:
            refresh(row.id if row else None)

    query.on_text_changed += searched

    def lines(width: int, height: int) -> tuple[int, Callable[[int], StyleAndTextTuples]]:
        def line(index: int) -> StyleAndTextTuples:
            row = rows[shown[index]]
            selected = index == view.cursor
            style = "class:row.selected" if selected else "class:row.path" if row.on_path else "class:row.off"
            when = source.label_times.get(row.id) if label_times[0] else None
            stamp = label_time(when, now) if when is not None else None
            text = ("› " if selected else "  ") + visible(row_line(row, width - 2, stamp))
            if row.current and text.endswith(HERE) and not selected:
                return [(style, text[: -len(HERE)]), ("class:row.here", HERE)]
            return [(style, text)]

        return len(shown), line

    keys = KeyBindings()
    navigation_keys(keys, view)
    searching = Condition(lambda: bool(query.text))

    @keys.add("enter")
    def _pick(event: KeyPressEvent) -> None:
        event.app.exit(result=selected())

    def bind(action: str) -> Callable[[KeyHandler], KeyHandler]:
        def register(handler: KeyHandler) -> KeyHandler:
            for sequence in bindings.for_action(action):
                keys.add(*sequence)(handler)
            return handler

        return register

    @bind("app.tree.editLabel")
    def _label(event: KeyPressEvent) -> None:
        row = selected()
        if row is not None:
            event.app.exit(result=EditLabel(row, query.text, state["mode"]))

    @bind("app.tree.toggleLabelTimestamp")
    def _label_times(event: KeyPressEvent) -> None:
        label_times[0] = not label_times[0]

    @bind("app.message.copy")
    def _copy(event: KeyPressEvent) -> None:
        row = selected()
        if row is None or copy is None:
            return
        text = source.copy_text(row.id)
        state["copied"] = copy(text) if text is not None else "this entry has no text to copy"
        state["copied_row"] = row.id

    @keys.add("escape", eager=True, filter=searching)
    def _clear(event: KeyPressEvent) -> None:
        query.text = ""  # (reset() would not tell the list)

    @keys.add("escape", eager=True, filter=~searching)
    @keys.add("q", filter=~searching)
    @keys.add("c-c")
    def _cancel(event: KeyPressEvent) -> None:
        event.app.exit(result=None)

    def set_mode(new: str) -> None:
        row = selected()
        state["mode"] = new
        folded.clear()
        rebuild(row.id if row else None)

    for action, name in FILTER_ACTIONS.items():

        @bind(action)
        def _filter(event: KeyPressEvent, name: str = name) -> None:
            set_mode("default" if state["mode"] == name or name == "default" else name)

    for action, step in (("app.tree.filter.cycleForward", 1), ("app.tree.filter.cycleBackward", -1)):

        @bind(action)
        def _cycle(event: KeyPressEvent, step: int = step) -> None:
            set_mode(FILTERS[(FILTERS.index(state["mode"]) + step) % len(FILTERS)])

    @bind("app.tree.foldOrUp")
    def _fold_or_up(event: KeyPressEvent) -> None:
        row = selected()
        if row is None:
            return
        if row.foldable and not row.folded:
            folded.add(row.id)
            rebuild(row.id)
        elif view.cursor is not None:
            target = branch_jump(rows, shown[view.cursor], -1)
            if target in shown:
                view.move(shown.index(target) - view.cursor)

    @bind("app.tree.unfoldOrDown")
    def _unfold_or_down(event: KeyPressEvent) -> None:
        row = selected()
        if row is None:
            return
        if row.folded:
            folded.discard(row.id)
            rebuild(row.id)
        elif view.cursor is not None:
            target = branch_jump(rows, shown[view.cursor], 1)
            if target in shown:
                view.move(shown.index(target) - view.cursor)

    def footer() -> str:
        row = selected()
        times = " [+label time]" if label_times[0] else ""
        if row is not None and state["copied_row"] == row.id:
            return f"{len(shown)}/{len(rows)} [{state['mode']}]{times} · {state['copied']}"
        return (
            f"{len(shown)}/{len(rows)} [{state['mode']}]{times} · Enter branch here · Esc cancel · "
            f"entry {row.id if row else '-'}"
        )

    title = (
        "Session tree · • active path · ^D ^T ^U ^L ^A filter, ^O cycle · ^← ^→ fold · "
        "L label, T its time · ^X copy"
    )
    search_line = VSplit(
        [
            Window(FormattedTextControl("search: "), width=8, dont_extend_width=True),
            Window(BufferControl(query), height=1),
        ]
    )
    body = HSplit([search_line, Window(Lines(lines, view))])
    app = application(lambda: title, body, footer, keys, color=color, focus=query)
    result: TreeRow | EditLabel | None = await run_view(app)
    return result


async def pick_option(title: str, options: Sequence[str], *, color: bool, start: int = 0) -> int | None:
    """A short menu: the index chosen with Enter (or its number key), ``None`` on Esc/q; the
    cursor starts on ``start``."""
    view = Viewport(count=len(options), cursor=0)
    view.move(start)

    def lines(width: int, height: int) -> tuple[int, Callable[[int], StyleAndTextTuples]]:
        def line(i: int) -> StyleAndTextTuples:
            selected = i == view.cursor
            text = fit(f"{'›' if selected else ' '} {i + 1}. {visible(options[i])}", width)
            return [("class:row.selected" if selected else "", text)]

        return len(options), line

    keys = KeyBindings()
    navigation_keys(keys, view)

    @keys.add("enter")
    def _pick(event: KeyPressEvent) -> None:
        event.app.exit(result=view.cursor)

    for number in range(1, min(len(options), 9) + 1):

        @keys.add(str(number))
        def _numbered(event: KeyPressEvent, index: int = number - 1) -> None:
            event.app.exit(result=index)

    @keys.add("escape", eager=True)
    @keys.add("q")
    @keys.add("c-c")
    def _cancel(event: KeyPressEvent) -> None:
        event.app.exit(result=None)

    app = application(
        lambda: title,
        Window(Lines(lines, view)),
        lambda: "↑↓ move · Enter choose · Esc cancel",
        keys,
        color=color,
    )
    result: int | None = await run_view(app)
    return result


async def ask_text(
    title: str,
    *,
    color: bool,
    default: str = "",
    secret: bool = False,
    multiline: bool = False,
) -> str | None:
    """One line of text (Enter accepts, Esc cancels), starting as ``default``; ``secret`` (an
    API key) shows each character as ``*``; ``multiline``: several, Enter adds a line and Ctrl-S
    accepts (an extension's ``ui.editor``)."""
    buffer = Buffer(multiline=multiline, document=Document(default, len(default)))
    keys = KeyBindings()

    @keys.add("c-s" if multiline else "enter")
    def _accept(event: KeyPressEvent) -> None:
        event.app.exit(result=buffer.text)

    @keys.add("escape", eager=True)
    @keys.add("c-c")
    def _cancel(event: KeyPressEvent) -> None:
        event.app.exit(result=None)

    processors: list[Processor] = [PasswordProcessor()] if secret else []
    body = Window(BufferControl(buffer, input_processors=processors), wrap_lines=True)
    hint = "Ctrl-S accept · Esc cancel" if multiline else "Enter accept · Esc cancel"
    app = application(lambda: title, body, lambda: hint, keys, color=color)
    result: str | None = await run_view(app)
    return result
