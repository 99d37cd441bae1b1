"""Searchable pickers over the interactive mode: models (Ctrl-L) and sessions (``/resume``).

Both are one full-screen list with a search line above it: typing filters (every word typed must
appear, in any order, case ignored), the arrows move, Enter picks, Esc cancels. The session picker
also sorts (Ctrl-S: newest first or by name), renames (Ctrl-R) and deletes (Ctrl-D, then ``y`` to
confirm) without leaving the list. Like the other views (``screens``), each runs on the alternate
screen inside ``in_terminal()``; the filtering and sorting are plain functions, tested alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from prompt_toolkit.buffer import Buffer
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import ConditionalContainer, HSplit, VSplit, Window
from prompt_toolkit.layout.controls import BufferControl, FormattedTextControl

from tether.cli.screens import Lines, Viewport, application, navigation_keys, run_view
from tether.cli.terminal_text import visible
from tether.session.stats import SessionRow
from tether.session.tree_view import fit
from tether.wire import ModelInfo


def matches(query: str, text: str) -> bool:
    """Every word of ``query`` occurs in ``text`` (case ignored); an empty query matches all."""
    lowered = text.lower()
    return all(word in lowered for word in query.lower().split())


SortOrder = Literal["date", "name"]


def sort_sessions(rows: Sequence[SessionRow], order: SortOrder) -> list[SessionRow]:
    """Newest first (``date``), or by title (or first prompt) A-Z, newest first among equals."""
    by_date = sorted(rows, key=lambda r: r.updated, reverse=True)
    if order == "date":
        return by_date
    return sorted(by_date, key=lambda r: r.title.lower())


@dataclass(slots=True)
class _Picker:
    """The state of one filtered list: what is shown, under which cursor."""

    labels: Callable[[], list[str]]
    """Every row's text, in display order (re-read after a rename or delete)."""
    query: Buffer = field(default_factory=lambda: Buffer(multiline=False))
    view: Viewport = field(default_factory=lambda: Viewport(count=0, cursor=0))
    shown: list[int] = field(default_factory=lambda: [])
    """Indexes (into ``labels()``) of the rows matching the query."""

    def refresh(self) -> None:
        self.shown = [i for i, label in enumerate(self.labels()) if matches(self.query.text, label)]
        self.view.count = len(self.shown)
        self.view.move(0)

    @property
    def selected(self) -> int | None:
        cursor = self.view.cursor
        return self.shown[cursor] if cursor is not None and 0 <= cursor < len(self.shown) else None

    def lines(self, width: int, height: int) -> tuple[int, Callable[[int], StyleAndTextTuples]]:
        labels = self.labels()

        def line(i: int) -> StyleAndTextTuples:
            selected = i == self.view.cursor
            text = fit(("› " if selected else "  ") + visible(labels[self.shown[i]]), width)
            return [("class:row.selected" if selected else "", text)]

        return len(self.shown), line


def _list_layout(picker: _Picker, extra: Sequence[Window | ConditionalContainer] = ()) -> HSplit:
    search = VSplit(
        [
            Window(FormattedTextControl("search: "), width=8, dont_extend_width=True),
            Window(BufferControl(picker.query), height=1),
        ]
    )
    return HSplit([search, Window(height=1, char="─"), Window(Lines(picker.lines, picker.view)), *extra])


def _list_keys(picker: _Picker) -> KeyBindings:
    keys = KeyBindings()
    navigation_keys(keys, picker.view)

    def changed(_buffer: Buffer) -> None:
        picker.refresh()

    picker.query.on_text_changed += changed
    return keys


async def pick_model(
    models: Sequence[ModelInfo], current: ModelInfo, *, color: bool
) -> tuple[ModelInfo, bool] | None:
    """The model picker: ``provider/id`` rows (the current one marked), filtered as you type.
    Enter picks; Ctrl-S picks and asks to save it as the default (pi's ``app.models.save``):
    ``(model, save)``, ``None`` when cancelled."""
    labels = [
        f"{m['provider']}/{m['id']}"
        + ("  · thinking" if m.get("reasoning") else "")
        + ("  ← current" if (m["provider"], m["id"]) == (current["provider"], current["id"]) else "")
        for m in models
    ]
    picker = _Picker(lambda: labels)
    picker.refresh()
    picker.view.cursor = next((i for i, label in enumerate(labels) if label.endswith("← current")), 0)
    keys = _list_keys(picker)

    @keys.add("enter")
    @keys.add("c-s")
    def _pick(event: KeyPressEvent) -> None:
        index = picker.selected
        save = event.key_sequence[0].key == "c-s"
        event.app.exit(result=(models[index], save) if index is not None else None)

    @keys.add("escape", eager=True)
    @keys.add("c-c")
    def _cancel(event: KeyPressEvent) -> None:
        event.app.exit(result=None)

    def footer() -> str:
        return (
            f"{len(picker.shown)} of {len(models)} models · type to filter · ↑↓ move · Enter switch · "
            "Ctrl-S also save as default · Esc cancel"
        )

    body = _list_layout(picker)
    app = application(lambda: "Select a model", body, footer, keys, color=color, focus=picker.query)
    result: tuple[ModelInfo, bool] | None = await run_view(app)
    return result


async def pick_line(title: str, labels: Sequence[str], *, start: int, noun: str, color: bool) -> int | None:
    """A searchable list of ``labels`` (the cursor on ``start``): the index picked, ``None`` on Esc."""
    picker = _Picker(lambda: list(labels))
    picker.refresh()
    picker.view.cursor = start
    keys = _list_keys(picker)

    @keys.add("enter")
    def _pick(event: KeyPressEvent) -> None:
        event.app.exit(result=picker.selected)

    @keys.add("escape", eager=True)
    @keys.add("c-c")
    def _cancel(event: KeyPressEvent) -> None:
        event.app.exit(result=None)

    def footer() -> str:
        return f"{len(picker.shown)} of {len(labels)} {noun} · type to filter · ↑↓ move · Enter choose · Esc cancel"

    app = application(lambda: title, _list_layout(picker), footer, keys, color=color, focus=picker.query)
    result: int | None = await run_view(app)
    return result


async def pick_many(
    title: str, labels: Sequence[str], chosen: Sequence[int], *, color: bool
) -> tuple[list[int], bool] | None:
    """pi's scoped-models selector: ``labels`` with a check box each, filtered as you type.
    Enter ticks or unticks the row, Ctrl-A ticks every row shown, Ctrl-X unticks them; Esc ends
    (``(ticked, False)``: for this session), Ctrl-S ends and saves (``(ticked, True)``), Ctrl-C
    cancels (``None``). The ticked rows come in the order they were ticked: the cycle's order."""
    ticked = [i for i in chosen if 0 <= i < len(labels)]

    def rows() -> list[str]:
        return [("[x] " if i in ticked else "[ ] ") + label for i, label in enumerate(labels)]

    picker = _Picker(rows)
    picker.refresh()
    keys = _list_keys(picker)

    def tick(indexes: Sequence[int], on: bool) -> None:
        for index in indexes:
            if on and index not in ticked:
                ticked.append(index)
            elif not on and index in ticked:
                ticked.remove(index)

    @keys.add("enter")
    def _toggle(event: KeyPressEvent) -> None:
        index = picker.selected
        if index is not None:
            tick([index], index not in ticked)

    @keys.add("c-a")
    def _all(event: KeyPressEvent) -> None:
        tick(picker.shown, True)

    @keys.add("c-x")
    def _none(event: KeyPressEvent) -> None:
        tick(picker.shown, False)

    @keys.add("escape", eager=True)
    @keys.add("c-s")
    def _done(event: KeyPressEvent) -> None:
        event.app.exit(result=(list(ticked), event.key_sequence[0].key == "c-s"))

    @keys.add("c-c")
    def _cancel(event: KeyPressEvent) -> None:
        event.app.exit(result=None)

    def footer() -> str:
        return (
            f"{len(ticked)} of {len(labels)} ticked · Enter tick · ^A all ^X none · "
            "Esc done (this session) · ^S save · ^C cancel"
        )

    app = application(lambda: title, _list_layout(picker), footer, keys, color=color, focus=picker.query)
    result: tuple[list[int], bool] | None = await run_view(app)
    return result


@dataclass(frozen=True, slots=True)
class SessionActions:
    """What the session picker may do to stored sessions (the core's operations)."""

    rows: Callable[[], list[SessionRow]]
    rename: Callable[[str, str], None]
    delete: Callable[[str], None]


async def pick_session(actions: SessionActions, *, current: str | None, color: bool) -> str | None:
    """``/resume``: the id of the session picked, ``None`` when cancelled. Renames and deletions
    happen at once (a failure is shown in the footer, the list stays)."""
    state: dict[str, object] = {"order": "date", "mode": "list", "note": ""}
    rows: list[SessionRow] = []

    def reload() -> None:
        rows[:] = sort_sessions(actions.rows(), "date" if state["order"] == "date" else "name")

    def labels() -> list[str]:
        return [f"{r}{'  ← current' if r.id == current else ''}" for r in rows]

    reload()
    picker = _Picker(labels)
    picker.refresh()
    rename = Buffer(multiline=False)
    keys = _list_keys(picker)
    listing = Condition(lambda: state["mode"] == "list")
    confirming = Condition(lambda: state["mode"] == "confirm")
    renaming = Condition(lambda: state["mode"] == "rename")

    def chosen() -> SessionRow | None:
        index = picker.selected
        return rows[index] if index is not None else None

    def done(note: str) -> None:
        state["mode"], state["note"] = "list", note
        reload()
        picker.refresh()

    @keys.add("enter", filter=listing)
    def _pick(event: KeyPressEvent) -> None:
        row = chosen()
        event.app.exit(result=row.id if row is not None else None)

    @keys.add("escape", eager=True, filter=listing)
    @keys.add("c-c", filter=listing)
    def _cancel(event: KeyPressEvent) -> None:
        event.app.exit(result=None)

    @keys.add("c-s", filter=listing)
    def _sort(event: KeyPressEvent) -> None:
        state["order"] = "name" if state["order"] == "date" else "date"
        done("")

    @keys.add("c-r", filter=listing)
    def _rename(event: KeyPressEvent) -> None:
        row = chosen()
        if row is not None:
            state["mode"] = "rename"
            rename.text = row.title
            rename.cursor_position = len(rename.text)
            event.app.layout.focus(rename)

    @keys.add("enter", filter=renaming)
    def _rename_done(event: KeyPressEvent) -> None:
        row, title = chosen(), rename.text.strip()
        event.app.layout.focus(picker.query)
        if row is None or not title:
            done("rename: cancelled")
            return
        try:
            actions.rename(row.id, title)
        except Exception as exc:  # a locked or vanished session: say so, keep the list
            done(f"rename failed: {exc}")
        else:
            done(f"renamed to {title!r}")

    @keys.add("escape", eager=True, filter=renaming)
    @keys.add("c-c", filter=renaming)
    def _rename_cancel(event: KeyPressEvent) -> None:
        event.app.layout.focus(picker.query)
        done("rename: cancelled")

    @keys.add("c-d", filter=listing)
    def _delete(event: KeyPressEvent) -> None:
        if chosen() is not None:
            state["mode"] = "confirm"

    @keys.add("<any>", filter=confirming)
    def _confirm(event: KeyPressEvent) -> None:
        row = chosen()
        if event.data.lower() != "y" or row is None:
            done("delete: cancelled")
            return
        try:
            actions.delete(row.id)
        except Exception as exc:  # the session in use, or locked by another process
            done(f"delete failed: {exc}")
        else:
            done(f"deleted {row.id}")

    def footer() -> str:
        row = chosen()
        if state["mode"] == "confirm" and row is not None:
            return f"Delete session {row.id} ({row.title})? y to delete, any key keeps it"
        if state["mode"] == "rename":
            return "new name, Enter to save · Esc cancel"
        note = f"{state['note']} · " if state["note"] else ""
        sort = "newest first" if state["order"] == "date" else "by name"
        return (
            f"{note}{len(picker.shown)} of {len(rows)} · {sort} · Enter resume · Ctrl-S sort · "
            "Ctrl-R rename · Ctrl-D delete · Esc cancel"
        )

    rename_line = ConditionalContainer(
        VSplit(
            [
                Window(FormattedTextControl("name: "), width=6, dont_extend_width=True),
                Window(BufferControl(rename), height=1),
            ]
        ),
        filter=renaming,
    )
    body = _list_layout(picker, [rename_line])
    app = application(
        lambda: "Resume a session · type to search", body, footer, keys, color=color, focus=picker.query
    )
    result: str | None = await run_view(app)
    return result
