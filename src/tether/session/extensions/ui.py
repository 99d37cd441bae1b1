"""How an extension reaches the user: the ``ExtensionUI`` every front end supplies, and the one
wrapper (``Dialogs``) extensions actually call through.

pi's ``ctx.ui`` has two kinds of calls: dialogs (``confirm``, ``select``, ``input``, ``editor``)
that wait for an answer, and fire-and-forget calls (``notify``, ``set_status``, ``set_widget``,
``set_title``, ``set_editor_text``) that show something and return. A dialog may carry a
``timeout`` (seconds here, milliseconds on pi's wire): when it runs out the dialog is dismissed
(``False`` / ``None``) on the agent's side, so no front end has to track time and a client that
never answers cannot hold a run forever. ``Dialogs`` enforces that once for every front end, and
drops a fire-and-forget call a front end has no place for (an ``ExtensionUI`` written before
these calls existed keeps working).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, Protocol, TypeVar

NotifyLevel = Literal["info", "warning", "error"]
WidgetPlacement = Literal["aboveEditor", "belowEditor"]
"""Where a widget goes: above the input box (pi's default) or below it."""

_T = TypeVar("_T")


class ExtensionUI(Protocol):
    """How an extension asks the user; every front end supplies one. ``timeout`` (seconds) is
    given to a dialog only when the extension set one: a front end may show it (RPC puts it in
    the frame); ``Dialogs`` ends the dialog when it runs out."""

    async def confirm(self, title: str, message: str = "", *, timeout: float | None = None) -> bool:
        """Yes or no; ``False`` when nobody answers or the question is dismissed."""
        ...

    async def select(self, title: str, options: Sequence[str], *, timeout: float | None = None) -> str | None:
        """One of ``options``; ``None`` when dismissed."""
        ...

    async def input(self, title: str, placeholder: str = "", *, timeout: float | None = None) -> str | None:
        """A line of text; ``None`` when dismissed."""
        ...

    def notify(self, message: str, level: NotifyLevel = "info") -> None:
        """Tell the user something; nothing to answer."""
        ...


class RichUI(ExtensionUI, Protocol):
    """A front end that also has pi's multi-line editor and places to show state: a status line
    (footer), widgets (lines by the input box), the window title and the input box's text."""

    async def editor(self, title: str, prefill: str = "", *, timeout: float | None = None) -> str | None:
        """Several lines of text, starting from ``prefill``; ``None`` when dismissed."""
        ...

    def set_status(self, key: str, text: str | None) -> None:
        """Show ``text`` in the status line under ``key``; ``None`` clears it."""
        ...

    def set_widget(self, key: str, lines: Sequence[str] | None, placement: WidgetPlacement) -> None:
        """Show ``lines`` by the input box under ``key``; ``None`` clears them."""
        ...

    def set_title(self, title: str) -> None:
        """The terminal window's (or client's) title."""
        ...

    def set_editor_text(self, text: str) -> None:
        """Put ``text`` in the input box, for the user to edit and send."""
        ...


class HeadlessUI:
    """Nobody at the keyboard (print and JSON modes): ``confirm`` is ``False``, ``select``,
    ``input`` and ``editor`` are ``None``, and each question is reported as a notice saying so;
    there is no status line, widget, title or input box to set."""

    ui_mode = "print"

    def __init__(self, notice: Callable[[str], None]) -> None:
        self._notice = notice

    async def confirm(self, title: str, message: str = "", *, timeout: float | None = None) -> bool:
        self._notice(f"{title}: nobody can answer here, taken as no")
        return False

    async def select(self, title: str, options: Sequence[str], *, timeout: float | None = None) -> str | None:
        self._notice(f"{title}: nobody can answer here, nothing selected")
        return None

    async def input(self, title: str, placeholder: str = "", *, timeout: float | None = None) -> str | None:
        self._notice(f"{title}: nobody can answer here, no input")
        return None

    async def editor(self, title: str, prefill: str = "", *, timeout: float | None = None) -> str | None:
        self._notice(f"{title}: nobody can answer here, no text")
        return None

    def notify(self, message: str, level: NotifyLevel = "info") -> None:
        self._notice(message if level == "info" else f"{level}: {message}")


class Asking:
    """How many dialogs wait for the user right now. A hook's time limit (``ExtensionHost``)
    does not count the time the user takes to answer: a hook that asks "Discard this session?"
    is waiting for a person, not hanging."""

    def __init__(self) -> None:
        self.count = 0


class Dialogs:
    """What ``api.ui`` and ``ctx.ui`` are: the front end's ``ExtensionUI`` with pi's dialog
    timeouts enforced here, and the calls a front end does not have dropped (an ``editor`` it
    lacks is a dismissal, said with a notice). ``asking`` counts the dialogs open."""

    def __init__(self, front_end: ExtensionUI, asking: Asking | None = None) -> None:
        self.front_end = front_end
        self.asking = asking if asking is not None else Asking()

    async def confirm(self, title: str, message: str = "", *, timeout: float | None = None) -> bool:
        asked = self.front_end.confirm(title, message, **_limit(timeout))
        return await self._open(_within(asked, timeout, False))

    async def select(self, title: str, options: Sequence[str], *, timeout: float | None = None) -> str | None:
        asked = self.front_end.select(title, list(options), **_limit(timeout))
        return await self._open(_within(asked, timeout, None))

    async def input(self, title: str, placeholder: str = "", *, timeout: float | None = None) -> str | None:
        asked = self.front_end.input(title, placeholder, **_limit(timeout))
        return await self._open(_within(asked, timeout, None))

    async def editor(self, title: str, prefill: str = "", *, timeout: float | None = None) -> str | None:
        editor = getattr(self.front_end, "editor", None)
        if editor is None:
            self.front_end.notify(f"{title}: no text editor here; nothing entered", "warning")
            return None
        return await self._open(_within(editor(title, prefill, **_limit(timeout)), timeout, None))

    async def _open(self, answer: Awaitable[_T]) -> _T:
        self.asking.count += 1
        try:
            return await answer
        finally:
            self.asking.count -= 1

    def notify(self, message: str, level: NotifyLevel = "info") -> None:
        self.front_end.notify(message, level)

    def set_status(self, key: str, text: str | None) -> None:
        self._show("set_status", key, text)

    def set_widget(
        self, key: str, lines: Sequence[str] | None, placement: WidgetPlacement = "aboveEditor"
    ) -> None:
        self._show("set_widget", key, list(lines) if lines is not None else None, placement)

    def set_title(self, title: str) -> None:
        self._show("set_title", title)

    def set_editor_text(self, text: str) -> None:
        self._show("set_editor_text", text)

    def _show(self, method: str, *args: Any) -> None:
        """A fire-and-forget call: the front end's, or nothing where it has no such place."""
        call = getattr(self.front_end, method, None)
        if call is not None:
            call(*args)


def _limit(timeout: float | None) -> dict[str, float]:
    """The ``timeout`` keyword for a front end, only when there is one (a front end written before
    timeouts existed takes no such keyword and still works for dialogs without one)."""
    if timeout is None:
        return {}
    if timeout <= 0:
        raise ValueError(f"a dialog's timeout is a number of seconds above 0, got {timeout}")
    return {"timeout": timeout}


async def _within(asked: Awaitable[_T], timeout: float | None, dismissed: _T) -> _T:
    """The dialog's answer, or ``dismissed`` once ``timeout`` seconds passed (the front end's
    dialog is cancelled, so it closes: an RPC request is forgotten, a terminal dialog removed)."""
    if timeout is None:
        return await asked
    try:
        return await asyncio.wait_for(asked, timeout)
    except TimeoutError:
        return dismissed
