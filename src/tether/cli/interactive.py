"""The interactive mode: a prompt-toolkit input pinned under rich-rendered, streaming output.

The screen has two parts. Finished things (your prompts, answers, tool calls, command output)
are printed once into the terminal's own scrollback, so they can be scrolled, searched and
copied like any output. Below them a small live area, redrawn by prompt-toolkit, shows what is
still changing: the streaming answer, running tools, an approval question, pending steering and
follow-up "chips", the input box and a status line (model, thinking, tokens, cost, context %).

Keys (defaults, pi's; ``keybindings.json`` renames them, ``keybindings`` lists every action):
Enter sends (while the agent works: steers it); Alt-Enter queues a follow-up while it works and
adds a line otherwise (Shift-Enter and Ctrl-J always add a line); Esc while it works aborts the
run and brings the queued messages back into the input box (Alt-Up brings them back without
aborting); Ctrl-C clears the input and never stops a run (twice on an empty input: quits); Ctrl-D
on an empty input exits; Ctrl-V attaches the clipboard's image; Ctrl-T shows or folds thinking;
Ctrl-O opens the transcript; Ctrl-L the model picker, Ctrl-P and Alt-P cycle models, Shift-Tab
cycles the thinking level; Ctrl-G edits the input in ``$EDITOR``; Ctrl-X copies the last answer
(``/copy``). ``/`` and ``@`` open their completion menus as you type (``completers``).
``/tree`` alone opens the tree navigator and ``/resume`` alone the session picker. What those
open is in ``interactive_views``; the status line is ``footer``'s.

Past our usual ~600 lines: the screen's layout, keys and live state belong to one
prompt-toolkit ``Application``; the views (``screens``, ``pickers``, ``interactive_views``),
rendering (``render``) and everything a run does (``tether.session.agent_session``) are elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import AsyncGenerator, Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from prompt_toolkit.application import Application, in_terminal
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.completion import merge_completers
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition, Filter, completion_is_selected
from prompt_toolkit.formatted_text import ANSI, AnyFormattedText, OneStyleAndTextTuple
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.key_binding.key_bindings import KeyHandlerCallable as KeyHandler
from prompt_toolkit.layout import ConditionalContainer, HSplit, Layout, VSplit, Window
from prompt_toolkit.layout.controls import BufferControl, FormattedTextControl
from prompt_toolkit.layout.dimension import Dimension
from prompt_toolkit.layout.menus import CompletionsMenu
from prompt_toolkit.patch_stdout import patch_stdout
from prompt_toolkit.styles import Style

from tether.ai.abort import AbortController
from tether.cli import footer, interactive_views as views, render, screens
from tether.cli.completers import CommandCompleter, FileCompleter
from tether.cli.file_index import FileIndex
from tether.cli.interactive_extensions import ExtensionDisplay, shortcut_keys
from tether.cli.keybindings import (
    FILE_NAME,
    MODIFY_OTHER_KEYS_OFF,
    MODIFY_OTHER_KEYS_ON,
    Bindings,
    hotkeys_text,
    install_sequences,
    load_bindings,
)
from tether.session import commands
from tether.session.agent_session import AgentSession
from tether.session.stats import Stats
from tether.wire import AgentMessage, ImageContent, ToolCall

if TYPE_CHECKING:
    from tether.session.extensions.api import ExtensionShortcut, NotifyLevel, WidgetPlacement

STYLE = Style.from_dict(
    {
        "status": "reverse",
        "chip.steer": "bg:ansiblue fg:ansiwhite",
        "chip.follow": "bg:ansimagenta fg:ansiwhite",
        "chip.image": "bg:ansicyan fg:ansiblack",
        "prompt": "bold ansimagenta",
        "rule": "ansibrightblack",
        "approval": "bold ansiyellow",
        "extension-status": "ansibrightblack",
    }
)
_QUIET_SHOWN_AFTER = 3.0
"""Seconds without an event before the status line counts the wait for the model."""


FRONT_END_COMMANDS = {
    "copy": "/copy               copy the last answer (OSC 52, and a local clipboard tool if present)",
    "hotkeys": "/hotkeys            the key bindings (keybindings.json in the config folder changes them)",
    "share": "/share              write the session as a standalone HTML page and print its file:// address",
    "trust": "/trust              trust what this project brings (settings, extensions, MCP servers, skills, templates)",
}
"""Commands only a terminal has a use for, beside the core's (``tether.session.commands``)."""


class InteractiveApp:
    ui_mode = "tui"
    """What extensions see as ``ctx.mode`` (pi's name for the terminal UI)."""

    def __init__(self, *, cwd: Path, bindings: Bindings | None = None) -> None:
        self.cwd = cwd
        if bindings is None:
            from tether.ai.paths import config_dir

            bindings = load_bindings(config_dir())
        self._bindings = bindings
        self.color = not os.environ.get("NO_COLOR")
        self.show_thinking = False
        self._core: AgentSession | None = None
        self._app: Application[int] | None = None
        self._approval: tuple[str, asyncio.Future[bool]] | None = None
        self._always: Callable[[], None] = lambda: None
        self._always_confirmed: set[str] = set()
        """Extension questions answered "always" in this session."""
        self._shown = ExtensionDisplay()
        """Extensions' status entries and widgets."""
        self._live: dict[str, Any] | None = None
        self._tools: dict[str, tuple[str, object]] = {}
        self._last_event = time.monotonic()
        """When the run last showed a sign of life; the status line counts the silence after it."""
        self._steering: list[str] = []
        self._follow_ups: list[str] = []
        self._buffer: Buffer | None = None
        self._held: list[str] | None = None
        """Output held back while a full-screen view is up (printed when it closes)."""
        self._work_abort: AbortController | None = None
        """Ctrl-C's target besides the agent: a branch summary being written."""
        self._stats: Stats | None = None
        self._task: asyncio.Task[None] | None = None
        """The current prompt, shell input or command; the UI is busy while it runs."""
        self._side_tasks: set[asyncio.Task[None]] = set()
        self._last_interrupt = 0.0
        self._revision = 0
        """Bumped on every change the live area shows; keys its render cache."""
        self._live_cache: tuple[tuple[int, int, bool, bool], str] | None = None
        self._unsubscribe: Callable[[], None] = lambda: None
        self._compaction_reports = 0
        self._files = FileIndex(cwd)
        """What ``@`` offers; listed on a thread once the screen is up."""
        self._spent = footer.SessionSpend()
        self._images: list[ImageContent] = []
        """Images pasted with Ctrl+V, sent with the next message."""
        """``compaction_end`` events shown: ``/compact`` prints nothing more when one was."""

    # -- public --------------------------------------------------------------------------------------

    async def ask_approval(self, tool_call: ToolCall, question: str) -> bool:
        """Show the question in the live area and wait for y (yes), n (no) or a (always: no
        more questions about tool calls in this session)."""
        return await self._ask_yes_no(question, self._approve_all)

    def _approve_all(self) -> None:
        if self._core is not None and self._core.approval is not None:
            self._core.approval.policy = "yes"

    # -- extension dialogs (this app is the extensions' ``ExtensionUI``) ------------------------------

    async def confirm(self, title: str, message: str = "", *, timeout: float | None = None) -> bool:
        """An extension's yes-or-no question, asked like a tool approval; "always" answers this
        same question yes for the rest of the session (and changes nothing about tool calls).
        ``timeout`` is shown; the extension API dismisses the question when it runs out."""
        question = f"{title} {message}".strip()
        if question in self._always_confirmed:
            return True
        return await self._ask_yes_no(
            question + _limit(timeout), lambda: self._always_confirmed.add(question)
        )

    async def select(self, title: str, options: Sequence[str], *, timeout: float | None = None) -> str | None:
        async with self.full_screen():
            index = await screens.pick_option(title + _limit(timeout), options, color=self.color)
        return options[index] if index is not None else None

    async def input(self, title: str, placeholder: str = "", *, timeout: float | None = None) -> str | None:
        async with self.full_screen():
            return await screens.ask_text(title + _limit(timeout), color=self.color)

    async def editor(self, title: str, prefill: str = "", *, timeout: float | None = None) -> str | None:
        """pi's ``ui.editor``: several lines, starting from ``prefill``."""
        async with self.full_screen():
            return await screens.ask_text(
                title + _limit(timeout), color=self.color, prefill=prefill, multiline=True
            )

    def set_status(self, key: str, text: str | None) -> None:
        self._shown.set_status(key, text)
        self._invalidate()

    def set_widget(self, key: str, lines: Sequence[str] | None, placement: WidgetPlacement) -> None:
        self._shown.set_widget(key, lines, placement)
        self._invalidate()

    def set_title(self, title: str) -> None:
        if self._app is not None:
            self._app.output.set_title(title)
            self._app.output.flush()

    def set_editor_text(self, text: str) -> None:
        if self._buffer is not None:
            self._buffer.text = text
            self._buffer.cursor_position = len(text)
            self._invalidate()

    def notify(self, message: str, level: NotifyLevel = "info") -> None:
        self.say(self.painter().styled(message, "red" if level == "error" else "yellow"))

    async def _ask_yes_no(self, question: str, always: Callable[[], None]) -> bool:
        """``always``: what the "a" answer remembers besides saying yes."""
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._approval = (question, future)
        self._always = always
        self._invalidate()
        try:
            return await future
        finally:
            self._approval = None
            self._invalidate()

    def attach(self, core: AgentSession, *, history: History | None = None) -> Application[int]:
        """Set the screen up for ``core`` (input box, layout, keys, event listener) without
        starting it: ``run`` starts it; ``bench/tui_views.py`` renders its frames.
        ``history``: the input box's (default: the prompt-history file)."""
        install_sequences()
        self._core = core
        self._stats = core.stats()
        if core.resources is not None and core.resources.extensions is not None:
            core.resources.extensions.ui = self
        self._buffer = Buffer(
            multiline=True,
            history=history if history is not None else _history(),
            completer=merge_completers(
                [CommandCompleter(self._command_list(core)), FileCompleter(self._files)]
            ),
            complete_while_typing=True,
        )
        self._app = self._build(self._buffer)
        self._unsubscribe = core.subscribe(self._on_event)
        return self._app

    @staticmethod
    def _command_list(core: AgentSession) -> list[tuple[str, str]]:
        builtin = [(name, command.summary) for name, command in commands.COMMANDS.items()]
        front_end = [(name, text.split("  ", 1)[-1].strip()) for name, text in FRONT_END_COMMANDS.items()]
        return [*builtin, *front_end, *commands.user_commands(core)]

    def _hotkeys(self) -> str:
        from tether.ai.paths import config_dir

        where = config_dir() / FILE_NAME
        return (
            hotkeys_text(self._bindings, screens.VIEW_KEYS) + f"\n\nChange them in {where} (see docs/cli.md)."
        )

    def detach(self) -> None:
        """Stop listening to the core's events (``run`` does it when it ends)."""
        self._unsubscribe()

    async def run(self, core: AgentSession, initial_prompt: str | None) -> int:
        app = self.attach(core)

        def ready() -> None:
            """Runs once the terminal is in raw mode: keys typed after the header are keys."""
            app.output.write_raw(MODIFY_OTHER_KEYS_ON)  # Shift+Enter reported, under tmux too
            self._files.start()
            self._print_header(core)
            if initial_prompt:
                self._start(initial_prompt)

        def pre_run() -> None:  # called just before raw mode; call_soon lands just after it
            asyncio.get_running_loop().call_soon(ready)

        with patch_stdout(raw=True):
            try:
                return await app.run_async(pre_run=pre_run)
            finally:
                app.output.write_raw(MODIFY_OTHER_KEYS_OFF)
                app.output.flush()
                self.detach()
                if self._task is not None and not self._task.done():
                    core.abort()
                    with contextlib.suppress(Exception, asyncio.CancelledError):
                        await self._task

    # -- layout and keys -----------------------------------------------------------------------------

    def _build(self, buffer: Buffer) -> Application[int]:
        approving = Condition(lambda: self._approval is not None)
        chips = Condition(lambda: bool(self._steering or self._follow_ups or self._images))
        live = Condition(lambda: bool(self._live_text_raw()))
        main = HSplit(
            [
                ConditionalContainer(
                    Window(FormattedTextControl(self._live_text), wrap_lines=True, dont_extend_height=True),
                    filter=live,
                ),
                ConditionalContainer(Window(FormattedTextControl(self._chips), height=1), filter=chips),
                self._shown.widget_row("aboveEditor"),
                # The menu of completions as you type: a row of the layout above the input, so it
                # pushes the conversation up instead of covering the status line.
                CompletionsMenu(max_height=8, scroll_offset=1),
                Window(height=1, char="─", style="class:rule"),
                input_row := VSplit(
                    [
                        Window(FormattedTextControl(self._prompt_mark), width=2, dont_extend_width=True),
                        Window(
                            BufferControl(buffer),
                            wrap_lines=True,
                            height=Dimension(min=1, max=12),
                            dont_extend_height=True,
                        ),
                    ]
                ),
                self._shown.widget_row("belowEditor"),
                Window(FormattedTextControl(self._status), height=1, style="class:status"),
                self._shown.status_row(),
            ]
        )
        keys = KeyBindings()
        bound = self._bindings

        def bind(action: str, *, when: Filter | None = None) -> Callable[[KeyHandler], KeyHandler]:
            """Register a handler on the keys ``keybindings.json`` gives ``action``."""

            def register(handler: KeyHandler) -> KeyHandler:
                for sequence in bound.for_action(action):
                    keys.add(*sequence, filter=when if when is not None else True)(handler)
                return handler

            return register

        @bind("tui.input.submit", when=~approving)
        def _enter(event: KeyPressEvent) -> None:
            text = buffer.text
            if text.endswith("\\"):
                buffer.text = text[:-1]
                buffer.insert_text("\n")
                return
            if not text.strip():
                return
            buffer.append_to_history()
            buffer.reset()
            if self._busy and commands.parse(text) is None:
                self._queue(text, follow_up=False)
            else:
                self._start(text, self._take_images() if commands.parse(text) is None else [])

        @keys.add("enter", filter=completion_is_selected)  # added later: wins over plain Enter
        def _accept_completion(event: KeyPressEvent) -> None:
            state = buffer.complete_state
            if state is not None and state.current_completion is not None:
                buffer.apply_completion(state.current_completion)

        @bind("app.message.followUp", when=~approving)
        def _alt_enter(event: KeyPressEvent) -> None:
            if self._busy and buffer.text.strip():
                text = buffer.text
                buffer.append_to_history()
                buffer.reset()
                self._queue(text, follow_up=True)
            else:
                buffer.insert_text("\n")

        @bind("tui.input.newLine")
        def _newline(event: KeyPressEvent) -> None:
            buffer.insert_text("\n")

        menu_open = Condition(lambda: buffer.complete_state is not None)

        @bind("app.interrupt", when=Condition(lambda: self._busy) & ~approving & ~menu_open)
        def _escape(event: KeyPressEvent) -> None:
            self._restore_queued()
            assert self._core is not None
            self._core.abort()
            if self._work_abort is not None:
                self._work_abort.abort()

        @keys.add("escape", filter=menu_open, eager=True)
        def _close_menu(event: KeyPressEvent) -> None:
            buffer.cancel_completion()

        @bind("app.message.dequeue", when=~approving)
        def _dequeue(event: KeyPressEvent) -> None:
            if not self._restore_queued():
                self.say(self.painter().styled("(no queued messages to restore)", "dim"))

        @bind("app.clear")
        def _interrupt(event: KeyPressEvent) -> None:
            """pi's Ctrl-C: it clears the input and never stops a run (Esc does); twice on an
            empty input, it exits. A pending question is declined."""
            if self._approval is not None:
                self._answer(False)
            elif buffer.text:
                buffer.reset()
                self._images.clear()
            elif time.monotonic() - self._last_interrupt < 1.5:
                event.app.exit(result=0)
            else:
                self._last_interrupt = time.monotonic()
                hint = (
                    "(Ctrl-C again to exit; Esc aborts the run)"
                    if self._busy
                    else "(Ctrl-C again or Ctrl-D to exit)"
                )
                self.say(render.Painter(self._width, self.color).styled(hint, "dim"))

        @bind("app.clipboard.pasteImage", when=~approving)
        def _paste_image(event: KeyPressEvent) -> None:
            self._paste_image()

        @bind("app.session.tree", when=~approving)
        def _tree(event: KeyPressEvent) -> None:
            self._start("/tree")

        @bind("app.exit")
        def _eof(event: KeyPressEvent) -> None:
            if not buffer.text:
                if self._busy and self._core is not None:
                    self._core.abort()
                event.app.exit(result=0)
            else:
                buffer.delete()

        @bind("app.thinking.toggle")
        def _toggle_thinking(event: KeyPressEvent) -> None:
            self.show_thinking = not self.show_thinking
            self._invalidate()

        @bind("app.tools.expand", when=~approving)
        def _transcript(event: KeyPressEvent) -> None:
            self._side_task(self._show_transcript())

        @bind("app.thinking.cycle", when=~approving)
        def _cycle_thinking(event: KeyPressEvent) -> None:
            if self._idle_or_say("the thinking level"):
                assert self._core is not None
                self._core.cycle_thinking_level()
                self._invalidate()

        @bind("app.model.cycleForward", when=~approving)
        def _next_model(event: KeyPressEvent) -> None:
            if self._idle_or_say("the model"):
                self._side_task(self._cycle_model(backward=False))

        @bind("app.model.cycleBackward", when=~approving)
        def _previous_model(event: KeyPressEvent) -> None:
            if self._idle_or_say("the model"):
                self._side_task(self._cycle_model(backward=True))

        @bind("app.model.select", when=~approving)
        def _select_model(event: KeyPressEvent) -> None:
            if self._idle_or_say("the model"):
                assert self._core is not None
                self._side_task(views.pick_model(self, self._core))

        @bind("app.editor.external", when=~approving)
        def _external_editor(event: KeyPressEvent) -> None:
            self._side_task(self._edit_externally())

        @bind("app.message.copy", when=~approving)
        def _copy(event: KeyPressEvent) -> None:
            self._copy_last_answer()

        @bind("app.session.resume", when=~approving)
        def _resume(event: KeyPressEvent) -> None:
            self._start("/resume")

        host = self._core.resources.extensions if self._core is not None and self._core.resources else None
        for sequence, shortcut in shortcut_keys(host.shortcuts() if host else [], bound, self.say):

            @keys.add(*sequence, filter=~approving)
            def _shortcut(event: KeyPressEvent, shortcut: ExtensionShortcut = shortcut) -> None:
                self._side_task(self._run_shortcut(shortcut))

        for key, allowed in (("y", True), ("n", False), ("a", True)):

            @keys.add(key, filter=approving)
            def _approve(event: KeyPressEvent, allowed: bool = allowed, key: str = key) -> None:
                if key == "a":
                    self._always()
                self._answer(allowed)

        app: Application[int] = Application(
            layout=Layout(main, focused_element=input_row),
            key_bindings=keys,
            style=STYLE,
            full_screen=False,
            mouse_support=False,
            color_depth=None if self.color else _monochrome(),
            min_redraw_interval=0.03,
            refresh_interval=1.0,  # the status line's count of the model's silence
            erase_when_done=True,
        )
        screens.follow_reflow(app)
        # A lone Esc is a key of its own (app.interrupt), not only Alt's prefix: decide sooner.
        # (ttimeoutlen stays: lowered, this app's flush of the shared input fired while a
        # full-screen view was up and took the Esc meant for the view.)
        app.timeoutlen = 0.4
        return app

    # -- live area -------------------------------------------------------------------------------

    @property
    def _busy(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def _width(self) -> int:
        if self._app is not None:
            with contextlib.suppress(Exception):
                return max(20, self._app.output.get_size().columns)
        return 80

    def painter(self) -> render.Painter:
        return render.Painter(self._width, self.color)

    def rows(self) -> int:
        if self._app is not None:
            with contextlib.suppress(Exception):
                return max(5, self._app.output.get_size().rows)
        return 24

    def _live_text_raw(self) -> str:
        """The live area's text, rendered once per state (prompt-toolkit asks several times per
        redraw, and re-rendering a long answer's markdown is the expensive part)."""
        key = (self._revision, self._width, self.show_thinking, self._busy)
        if self._live_cache is None or self._live_cache[0] != key:
            self._live_cache = (key, self._render_live())
        return self._live_cache[1]

    def _render_live(self) -> str:
        painter = self.painter()
        parts: list[str] = []
        if self._live is not None:
            for block in self._live.get("content", []):
                kind = block.get("type")
                if kind == "thinking":
                    parts.append(
                        render.thinking_text(painter, block["thinking"], expanded=self.show_thinking)
                    )
                elif kind == "text" and block["text"].strip():
                    parts.append(painter.markdown(block["text"]))
                elif kind == "toolCall":
                    parts.append(
                        render.tool_header(painter, block["name"], block.get("arguments", {}), "running")
                    )
        for name, args in self._tools.values():
            parts.append(render.tool_header(painter, name, args, "running"))
        if self._approval is not None:
            question = self._approval[0]
            parts.append(painter.styled(f"? {question}\n  allow? [y]es / [n]o / [a]lways", "bold yellow"))
        elif self._busy and not parts:
            parts.append(painter.styled("working… (Esc to abort)", "dim"))
        return render.tail_lines("\n".join(p for p in parts if p), max(3, self.rows() - 6))

    def _live_text(self) -> AnyFormattedText:
        return ANSI(self._live_text_raw())

    def _chips(self) -> AnyFormattedText:
        chips: list[OneStyleAndTextTuple] = []
        for text in self._steering:
            chips += [("class:chip.steer", f" steer: {_short(text)} "), ("", " ")]
        for text in self._follow_ups:
            chips += [("class:chip.follow", f" follow-up: {_short(text)} "), ("", " ")]
        for number, image in enumerate(self._images, 1):
            chips += [("class:chip.image", f" image {number}: {image['mimeType']} "), ("", " ")]
        return chips

    def _prompt_mark(self) -> AnyFormattedText:
        return [("class:prompt", "» " if self._busy else "› ")]

    def _status(self) -> AnyFormattedText:
        core = self._core
        if core is None:
            return ""
        model = core.model
        percent = self._stats.context_percent if self._stats is not None else None
        return footer.status_text(
            model=f"{model['provider']}/{model['id']}",
            thinking=str(core.thinking_level),
            shown=self.show_thinking,
            spent=self._spent.of(core),
            context_percent=percent,
            activity=self._activity() if self._busy else None,
            width=self._width,
        )

    def _activity(self) -> str:
        """ "working", or how long the model has been silent (a slow or stalled provider) once
        that is long enough to wonder; tools and questions have their own display."""
        silent = time.monotonic() - self._last_event
        if self._tools or self._approval is not None or silent < _QUIET_SHOWN_AFTER:
            return "● working"
        return f"● waiting for the model… {silent:.0f} s"

    # -- events ----------------------------------------------------------------------------------

    def _on_event(self, event: Mapping[str, Any]) -> None:
        """Show an event. A display bug is printed, never raised: it must not end the agent's run."""
        self._last_event = time.monotonic()
        try:
            self._show(event)
        except Exception as exc:
            self.say(f"(display error: {type(exc).__name__}: {exc})")
        self._invalidate()

    def _show(self, event: Mapping[str, Any]) -> None:
        kind = event["type"]
        painter = self.painter()
        if kind == "message_start":
            message = event["message"]
            if message["role"] == "user":
                self.say(render.user_text(painter, render.message_text(message)))
            elif message["role"] == "assistant":
                self._live = message
        elif kind == "message_update":
            self._live = event["message"]
        elif kind == "message_end":
            if self._core is not None:
                self._spent.of(self._core).add(event["message"])
            self._message_end(event["message"], painter)
        elif kind == "tool_execution_start":
            self._tools[event["toolCallId"]] = (event["toolName"], event.get("args"))
        elif kind == "tool_execution_end":
            name, args = self._tools.pop(event["toolCallId"], (event["toolName"], {}))
            self._tool_end(name, args, event, painter)
        elif kind == "queue_update":
            self._steering = list(event["steering"])
            self._follow_ups = list(event["followUp"])
        elif kind == "compaction_start":
            self.say(painter.styled("compacting the conversation…", "dim"))
        elif kind == "compaction_end":
            self._compaction_reports += 1
            self.say(render.compaction_report(painter, event))
        elif kind == "notice":
            self.say(painter.styled(str(event["message"]), "yellow"))
        elif kind in ("agent_end", "turn_end") and self._core is not None:
            self._stats = self._core.stats()

    def _message_end(self, message: dict[str, Any], painter: render.Painter) -> None:
        if message["role"] == "assistant":
            self._live = None
        for text in render.ended_message(painter, message, show_thinking=self.show_thinking):
            self.say(text)

    def _tool_end(self, name: str, args: object, event: Mapping[str, Any], painter: render.Painter) -> None:
        result = event.get("result")
        if not isinstance(result, Mapping):  # an AgentToolResult
            result = {
                "content": getattr(result, "content", None),
                "details": getattr(result, "details", None),
            }
        shown = {**cast(Mapping[str, Any], result), "isError": bool(event.get("isError"))}
        self.say(render.finished_tool(painter, name, args, shown, expanded=False))

    # -- actions ---------------------------------------------------------------------------------

    def _take_images(self) -> list[ImageContent]:
        images, self._images = self._images, []
        return images

    def _paste_image(self) -> None:
        """Ctrl+V: the clipboard's image goes with the next message (a chip shows it)."""
        from tether.cli import clipboard

        try:
            self._images.append(clipboard.paste_image_content())
        except clipboard.ClipboardError as exc:
            self.say(self.painter().styled(f"paste: {exc}", "yellow"))
        self._invalidate()

    def _start(self, text: str, images: list[ImageContent] | None = None) -> None:
        task = asyncio.ensure_future(self._submit(text, images or []))
        task.add_done_callback(lambda _t: self._invalidate())
        if self._busy:  # a command (/session, /help) while the agent works runs beside the run
            self._side_tasks.add(task)
            task.add_done_callback(self._side_tasks.discard)
        else:
            self._task = task
        self._invalidate()

    async def _submit(self, text: str, images: list[ImageContent]) -> None:
        core = self._core
        assert core is not None
        painter = self.painter()
        try:
            parsed = commands.parse(text)
            if parsed == ("tree", "") and not core.is_running:
                self.say(render.user_text(painter, text))
                await self._navigate_tree()
            elif parsed == ("resume", "") and not core.is_running:
                self.say(render.user_text(painter, text))
                await views.resume_picked(self, core)
            elif parsed == ("fork", "") and not core.is_running:
                self.say(render.user_text(painter, text))
                self._put_in_input(await views.fork_picked(self, core))
            elif parsed is not None and parsed[0] in FRONT_END_COMMANDS:
                self.say(render.user_text(painter, text))
                if parsed[0] == "copy":
                    self._copy_last_answer()
                elif parsed[0] == "share":
                    views.share(self, core)
                elif parsed[0] == "trust":
                    await views.trust_folder(
                        self, self.cwd, lambda question: self._ask_yes_no(question, lambda: None)
                    )
                else:
                    self.say(self._hotkeys())
            elif commands.runs_here(core, text):
                self.say(render.user_text(painter, text))
                reports = self._compaction_reports
                result = await commands.execute(core, text)
                if self._compaction_reports != reports:  # /compact: its compaction_end said it all
                    result = commands.CommandResult("", quit=result.quit)
                extra = "\n".join(FRONT_END_COMMANDS.values()) if parsed == ("help", "") else ""
                self.say(
                    painter.styled(
                        "\n".join(filter(None, [result.text, extra])), "red" if result.error else ""
                    )
                )
                self._stats = core.stats()
                if result.quit and self._app is not None:
                    self._app.exit(result=0)
            else:
                await core.submit(text, images)
        except Exception as exc:  # a bug must not kill the session: show it and keep going
            self.say(render.error_text(painter, f"{type(exc).__name__}: {exc}", aborted=False))
        finally:
            self._stats = core.stats()

    def _queue(self, text: str, *, follow_up: bool) -> None:
        core = self._core
        assert core is not None
        if follow_up:
            core.follow_up(text, self._take_images())
        else:
            core.steer(text, self._take_images())
        self._invalidate()

    def _answer(self, allowed: bool) -> None:
        """Resolve the question now: the keys typed right after the answer are text again."""
        if self._approval is not None:
            future = self._approval[1]
            self._approval = None
            if not future.done():
                future.set_result(allowed)
            self._invalidate()

    async def _show_transcript(self) -> None:
        assert self._core is not None
        await views.show_transcript(self, self._core, cast(AgentMessage | None, self._live))

    # -- models, queue, editor, sessions ---------------------------------------------------------

    def _side_task(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` beside the prompt (a view, a model switch); its failure is printed."""

        async def guarded() -> None:
            try:
                await work
            except Exception as exc:
                self.say(render.error_text(self.painter(), f"{type(exc).__name__}: {exc}", aborted=False))
            finally:
                if self._core is not None:
                    self._stats = self._core.stats()
                self._invalidate()

        task = asyncio.ensure_future(guarded())
        self._side_tasks.add(task)
        task.add_done_callback(self._side_tasks.discard)

    def _idle_or_say(self, what: str) -> bool:
        """Settings change between runs: while one goes on, say so instead."""
        if self._busy:
            self.say(self.painter().styled(f"({what} changes once the agent is done)", "dim"))
            return False
        return True

    async def _cycle_model(self, *, backward: bool) -> None:
        assert self._core is not None
        await self._core.cycle_model("backward" if backward else "forward")

    def _restore_queued(self) -> int:
        """Queued steering and follow-ups leave the queue and go back into the input box (above
        what is typed there), as pi does; how many there were."""
        assert self._core is not None and self._buffer is not None
        queued = self._core.clear_queue()
        texts = [*queued.steering, *queued.follow_up]
        if texts:
            combined = "\n\n".join(t for t in [*texts, self._buffer.text] if t.strip())
            self._buffer.document = Document(combined, len(combined))
        self._invalidate()
        return len(texts)

    def _put_in_input(self, text: str | None) -> None:
        if text is not None and self._buffer is not None:
            self._buffer.document = Document(text, len(text))

    async def _edit_externally(self) -> None:
        assert self._buffer is not None
        text = await views.edit_externally(self, self._buffer.text)
        if text is not None:
            self._buffer.document = Document(text, len(text))

    def _copy_last_answer(self) -> None:
        assert self._core is not None
        views.copy_last_answer(self, self._core, self._app.output if self._app is not None else None)

    async def _navigate_tree(self) -> None:
        assert self._core is not None
        self._work_abort = AbortController()
        try:
            editor_text = await views.navigate_tree(self, self._core, self._work_abort)
        finally:
            self._work_abort = None
        if editor_text is not None and self._buffer is not None:
            self._buffer.document = Document(editor_text, len(editor_text))

    @contextlib.asynccontextmanager
    async def full_screen(self) -> AsyncGenerator[None]:
        """Suspend the live area for a full-screen view; output made meanwhile waits for it."""
        self._held = []
        try:
            async with in_terminal():
                yield
        finally:
            held, self._held = self._held, None
            for text in held:
                self.say(text)

    def say(self, text: str) -> None:
        if text and self._held is not None:
            self._held.append(text)
        elif text:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()

    def _print_header(self, core: AgentSession) -> None:
        for text in views.header(core, self.painter(), self.rows(), self._bindings.warning):
            self.say(text)

    async def _run_shortcut(self, shortcut: ExtensionShortcut) -> None:
        """An extension's key: its handler gets a command's context (``ctx.send`` prompts)."""
        core = self._core
        host = core.resources.extensions if core is not None and core.resources is not None else None
        if core is None or host is None:
            return

        async def send(text: str) -> None:
            self._start(text)

        await host.run_shortcut(shortcut, host.command_context(core, send))

    def _invalidate(self) -> None:
        self._revision += 1
        if self._app is not None:
            self._app.invalidate()


def _limit(timeout: float | None) -> str:
    """How a dialog's time limit is shown after its title."""
    return f" (closes in {timeout:g} s)" if timeout is not None else ""


def _history() -> History:
    from tether.ai.paths import data_dir

    directory = data_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        return FileHistory(str(directory / "prompt-history"))
    except OSError:
        return InMemoryHistory()


def _short(text: str, limit: int = 30) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _monochrome() -> Any:
    from prompt_toolkit.output.color_depth import ColorDepth

    return ColorDepth.DEPTH_1_BIT
