"""What extensions show in the interactive mode besides dialogs: pi's status entries, widgets,
window title and input-box text, and the keys they register (``register_shortcut``).

Kept apart from ``interactive`` (the screen and its keys): this is the state those calls leave
and the rows that show it. Status entries share one row under tether's own status line, in the
order they were first set; a widget's lines sit above the input box (pi's default) or below it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import AnyFormattedText
from prompt_toolkit.layout import ConditionalContainer, FormattedTextControl, Window

from tether.cli.keybindings import BY_NAME, Bindings, UnsendableKeyError, to_prompt_toolkit

if TYPE_CHECKING:
    from tether.session.extensions.api import ExtensionShortcut, WidgetPlacement

MAX_WIDGET_LINES = 10
"""A widget longer than this shows its first lines and how many more: an extension must not push
the input box off the screen."""


@dataclass(slots=True)
class ExtensionDisplay:
    """Status entries and widgets by key, as extensions last set them."""

    status: dict[str, str] = field(default_factory=lambda: {})
    widgets: dict[str, tuple[list[str], WidgetPlacement]] = field(default_factory=lambda: {})

    def set_status(self, key: str, text: str | None) -> None:
        if text is None:
            self.status.pop(key, None)
        else:
            self.status[key] = text.replace("\n", " ")

    def set_widget(self, key: str, lines: Sequence[str] | None, placement: WidgetPlacement) -> None:
        if lines is None:
            self.widgets.pop(key, None)
        else:
            self.widgets[key] = ([str(line) for line in lines], placement)

    def widget_text(self, placement: WidgetPlacement) -> str:
        shown: list[str] = []
        for lines, where in self.widgets.values():
            if where != placement:
                continue
            shown += lines[:MAX_WIDGET_LINES]
            if len(lines) > MAX_WIDGET_LINES:
                shown.append(f"… {len(lines) - MAX_WIDGET_LINES} more lines")
        return "\n".join(shown)

    def status_text(self) -> str:
        return "  ·  ".join(self.status.values())

    def widget_row(self, placement: WidgetPlacement) -> ConditionalContainer:
        return ConditionalContainer(
            Window(
                FormattedTextControl(lambda: self._styled(self.widget_text(placement), "class:widget")),
                wrap_lines=True,
                dont_extend_height=True,
            ),
            filter=Condition(lambda: bool(self.widget_text(placement))),
        )

    def status_row(self) -> ConditionalContainer:
        return ConditionalContainer(
            Window(
                FormattedTextControl(lambda: self._styled(self.status_text(), "class:extension-status")),
                height=1,
            ),
            filter=Condition(lambda: bool(self.status)),
        )

    @staticmethod
    def _styled(text: str, style: str) -> AnyFormattedText:
        return [(style, text)]


def shortcut_keys(
    shortcuts: Sequence[ExtensionShortcut], bindings: Bindings, report: Callable[[str], None]
) -> list[tuple[tuple[str, ...], ExtensionShortcut]]:
    """The prompt-toolkit keys of the extensions' shortcuts. One the terminal cannot send, one
    tether's own actions use (``keybindings.json``), or one an extension before took is left out
    and reported in one line each: an extension must not take Enter or Ctrl-C from the user."""
    taken = {
        tuple(sequence)
        for action in bindings.keys
        if not BY_NAME[action].view  # a view's keys apply in the view alone
        for sequence in bindings.for_action(action)
    }
    found: list[tuple[tuple[str, ...], ExtensionShortcut]] = []
    for shortcut in shortcuts:
        try:
            keys = to_prompt_toolkit(shortcut.key)
        except UnsendableKeyError as exc:
            report(f"extension {shortcut.extension}: shortcut {exc}; not bound")
            continue
        if keys in taken:
            report(f"extension {shortcut.extension}: shortcut {shortcut.key} is already bound; not bound")
            continue
        taken.add(keys)
        found.append((keys, shortcut))
    return found
