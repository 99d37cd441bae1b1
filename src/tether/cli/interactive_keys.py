"""The interactive mode's keys: each action ``keybindings.json`` names, bound to what it does.

The keys drive the app only through ``KeyActions``, the app's public actions (send, queue,
abort, answer a question, switch the model, open a view), so what a key does reads here and how
the app does it reads in ``interactive``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal, Protocol

from prompt_toolkit.buffer import Buffer
from prompt_toolkit.filters import Condition, Filter, completion_is_selected
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.key_binding.key_bindings import KeyHandlerCallable as KeyHandler
from prompt_toolkit.keys import Keys

from tether.cli import render
from tether.cli.interactive_extensions import shortcut_keys
from tether.cli.interactive_paste import Pastes
from tether.cli.keybindings import Bindings
from tether.session import commands
from tether.wire import ImageContent

if TYPE_CHECKING:
    from tether.session.extensions.api import ExtensionShortcut


class KeyActions(Protocol):
    """The interactive app, as its keys see it."""

    @property
    def busy(self) -> bool:
        """A prompt, shell input or command is running."""
        ...

    @property
    def asking(self) -> bool:
        """A yes-or-no question waits in the live area (y, n and a answer it)."""
        ...

    @property
    def pastes(self) -> Pastes:
        """The input box's folded pastes."""
        ...

    def say(self, item: render.Item) -> None: ...

    def painter(self) -> render.Painter: ...

    def start(self, text: str, images: list[ImageContent] | None = None) -> None:
        """Send ``text`` (a prompt or a command)."""
        ...

    def queue(self, text: str, *, follow_up: bool) -> None:
        """Steer the running agent with ``text``, or queue it as a follow-up."""
        ...

    def take_images(self) -> list[ImageContent]:
        """The pasted images, which leave the chips (they go with the message being sent)."""
        ...

    def paste_image(self) -> None: ...

    def restore_queued(self) -> int:
        """Queued messages back into the input box; how many there were."""
        ...

    def abort(self) -> None:
        """Stop the agent's run."""
        ...

    def interrupt(self) -> None:
        """Esc: the queue back into the input box, the run stopped, and other work Esc stops."""
        ...

    def answer(self, allowed: bool, *, always: bool = False) -> None:
        """Answer the question waiting; ``always``: remember the yes as its "a" answer does."""
        ...

    def toggle_thinking(self) -> None: ...

    def idle_or_say(self, what: str) -> bool:
        """True between runs; while one goes on, say that ``what`` changes once it is done."""
        ...

    def cycle_thinking(self) -> None: ...

    def cycle_model(self, direction: Literal["forward", "backward"]) -> None: ...

    def pick_model(self) -> None: ...

    def show_transcript(self) -> None: ...

    def edit_externally(self) -> None: ...

    def copy_last_answer(self) -> None: ...

    def extension_shortcuts(self) -> Sequence[ExtensionShortcut]: ...

    def run_shortcut(self, shortcut: ExtensionShortcut) -> None: ...


def key_bindings(app: KeyActions, buffer: Buffer, bound: Bindings) -> KeyBindings:
    """The keys, as ``keybindings.json`` names them (``/reload`` reads it again and calls this)."""
    approving = Condition(lambda: app.asking)
    keys = KeyBindings()
    last_interrupt = 0.0
    """When Ctrl-C last found the input empty (twice within 1.5 s exits)."""

    def bind(action: str, *, when: Filter | None = None) -> Callable[[KeyHandler], KeyHandler]:
        """Register a handler on the keys ``keybindings.json`` gives ``action``."""

        def register(handler: KeyHandler) -> KeyHandler:
            for sequence in bound.for_action(action):
                keys.add(*sequence, filter=when if when is not None else True)(handler)
            return handler

        return register

    @keys.add(Keys.BracketedPaste)
    def _paste(event: KeyPressEvent) -> None:
        buffer.insert_text(app.pastes.fold(event.data))

    def marker(*, before: bool) -> tuple[int, int] | None:
        return app.pastes.marker_at(buffer.text, buffer.cursor_position, before=before)

    marker_before = Condition(lambda: marker(before=True) is not None)
    marker_after = Condition(lambda: marker(before=False) is not None)

    @keys.add("backspace", filter=marker_before)
    @keys.add("c-w", filter=marker_before)
    @keys.add("escape", "backspace", filter=marker_before)
    def _delete_marker_before(event: KeyPressEvent) -> None:
        """A paste's marker goes whole, as in pi's editor (a half marker would be sent as typed)."""
        span = marker(before=True)
        if span is not None:
            buffer.delete_before_cursor(span[1] - span[0])

    @keys.add("delete", filter=marker_after)
    @keys.add("escape", "d", filter=marker_after)
    def _delete_marker_after(event: KeyPressEvent) -> None:
        span = marker(before=False)
        if span is not None:
            buffer.delete(span[1] - span[0])

    def sent() -> str:
        """The input box's text, its pastes expanded, leaving the box (and going into the
        history as typed)."""
        text = app.pastes.expand(buffer.text)
        buffer.append_to_history()
        buffer.reset()
        return text

    @bind("tui.input.submit", when=~approving)
    def _enter(event: KeyPressEvent) -> None:
        text = buffer.text
        if text.endswith("\\"):
            buffer.text = text[:-1]
            buffer.insert_text("\n")
            return
        if not text.strip():
            return
        text = sent()
        if app.busy and commands.parse(text) is None:
            app.queue(text, follow_up=False)
        else:
            app.start(text, app.take_images() if commands.parse(text) is None else [])

    @keys.add("enter", filter=completion_is_selected)  # added later: wins over plain Enter
    def _accept_completion(event: KeyPressEvent) -> None:
        state = buffer.complete_state
        if state is not None and state.current_completion is not None:
            buffer.apply_completion(state.current_completion)

    @bind("app.message.followUp", when=~approving)
    def _alt_enter(event: KeyPressEvent) -> None:
        if app.busy and buffer.text.strip():
            app.queue(sent(), follow_up=True)
        else:
            buffer.insert_text("\n")

    @bind("tui.input.newLine")
    def _newline(event: KeyPressEvent) -> None:
        buffer.insert_text("\n")

    menu_open = Condition(lambda: buffer.complete_state is not None)

    @bind("app.interrupt", when=Condition(lambda: app.busy) & ~approving & ~menu_open)
    def _escape(event: KeyPressEvent) -> None:
        app.interrupt()

    @keys.add("escape", filter=menu_open, eager=True)
    def _close_menu(event: KeyPressEvent) -> None:
        buffer.cancel_completion()

    @bind("app.message.dequeue", when=~approving)
    def _dequeue(event: KeyPressEvent) -> None:
        if not app.restore_queued():
            app.say(render.note("(no queued messages to restore)", "muted"))

    @bind("app.clear")
    def _interrupt(event: KeyPressEvent) -> None:
        """pi's Ctrl-C: it clears the input and never stops a run (Esc does); twice on an
        empty input, it exits. A pending question is declined."""
        nonlocal last_interrupt
        if app.asking:
            app.answer(False)
        elif buffer.text:
            buffer.reset()
            app.take_images()
        elif time.monotonic() - last_interrupt < 1.5:
            event.app.exit(result=0)
        else:
            last_interrupt = time.monotonic()
            hint = (
                "(Ctrl-C again to exit; Esc aborts the run)"
                if app.busy
                else "(Ctrl-C again or Ctrl-D to exit)"
            )
            app.say(render.note(hint, "muted"))

    @bind("app.clipboard.pasteImage", when=~approving)
    def _paste_image(event: KeyPressEvent) -> None:
        app.paste_image()

    @bind("app.session.tree", when=~approving)
    def _tree(event: KeyPressEvent) -> None:
        app.start("/tree")

    @bind("app.session.new", when=~approving)
    def _new(event: KeyPressEvent) -> None:
        app.start("/new")

    @bind("app.session.fork", when=~approving)
    def _fork(event: KeyPressEvent) -> None:
        app.start("/fork")

    @bind("app.exit")
    def _eof(event: KeyPressEvent) -> None:
        if not buffer.text:
            if app.busy:
                app.abort()
            event.app.exit(result=0)
        else:
            buffer.delete()

    @bind("app.suspend")
    def _suspend(event: KeyPressEvent) -> None:
        """pi's Ctrl+Z: stop as a shell job does (the whole process group, tools included); on
        ``fg`` the input box is drawn again and everything carries on."""
        event.app.suspend_to_background()

    @bind("app.thinking.toggle")
    def _toggle_thinking(event: KeyPressEvent) -> None:
        app.toggle_thinking()

    @bind("app.tools.expand", when=~approving)
    def _transcript(event: KeyPressEvent) -> None:
        app.show_transcript()

    @bind("app.thinking.cycle", when=~approving)
    def _cycle_thinking(event: KeyPressEvent) -> None:
        if app.idle_or_say("the thinking level"):
            app.cycle_thinking()

    @bind("app.model.cycleForward", when=~approving)
    def _next_model(event: KeyPressEvent) -> None:
        if app.idle_or_say("the model"):
            app.cycle_model("forward")

    @bind("app.model.cycleBackward", when=~approving)
    def _previous_model(event: KeyPressEvent) -> None:
        if app.idle_or_say("the model"):
            app.cycle_model("backward")

    @bind("app.model.select", when=~approving)
    def _select_model(event: KeyPressEvent) -> None:
        if app.idle_or_say("the model"):
            app.pick_model()

    @bind("app.editor.external", when=~approving)
    def _external_editor(event: KeyPressEvent) -> None:
        app.edit_externally()

    @bind("app.message.copy", when=~approving)
    def _copy(event: KeyPressEvent) -> None:
        app.copy_last_answer()

    @bind("app.session.resume", when=~approving)
    def _resume(event: KeyPressEvent) -> None:
        app.start("/resume")

    for sequence, shortcut in shortcut_keys(
        app.extension_shortcuts(), bound, lambda line: app.say(render.note(line, ""))
    ):

        @keys.add(*sequence, filter=~approving)
        def _shortcut(event: KeyPressEvent, shortcut: ExtensionShortcut = shortcut) -> None:
            app.run_shortcut(shortcut)

    for key, allowed in (("y", True), ("n", False), ("a", True)):

        @keys.add(key, filter=approving)
        def _approve(event: KeyPressEvent, allowed: bool = allowed, key: str = key) -> None:
            app.answer(allowed, always=key == "a")

    return keys
