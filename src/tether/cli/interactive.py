"""The interactive mode: a prompt-toolkit input pinned under rich-rendered, streaming output.

The screen has two parts. Finished things (your prompts, answers, tool calls, command output)
are printed once into the terminal's own scrollback, so they can be scrolled, searched and
copied like any output. Below them a small live area, redrawn by prompt-toolkit, shows what is
still changing: the streaming answer, running tools, an approval question, pending steering and
follow-up "chips", the input box and a status line (model, thinking, tokens, cost, context %).

The keys are pi's (``keybindings`` lists every action and its default; ``keybindings.json``
renames them): Enter sends (while the agent works: steers), Alt-Enter queues a follow-up, Esc
aborts a run, Ctrl-C clears the input and never stops a run, Ctrl-D on an empty input exits.
``interactive_keys`` binds them to the app's public actions. ``/`` and ``@`` open their
completion menus as you type (``completers``); the status line is ``footer``'s.

The terminal-only commands are ``interactive_commands``'s (``/settings`` ``interactive_settings``'s);
the views are ``screens``, ``pickers`` and ``interactive_views``; rendering is ``render``'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from prompt_toolkit.application import Application, in_terminal
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.completion import merge_completers
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import ANSI, AnyFormattedText
from prompt_toolkit.history import History
from prompt_toolkit.key_binding import DynamicKeyBindings, KeyBindings
from prompt_toolkit.layout import ConditionalContainer, HSplit, Layout, VSplit, Window
from prompt_toolkit.layout.controls import BufferControl, FormattedTextControl
from prompt_toolkit.layout.dimension import Dimension
from prompt_toolkit.layout.menus import CompletionsMenu
from prompt_toolkit.output.color_depth import ColorDepth
from prompt_toolkit.patch_stdout import patch_stdout

from tether.ai.abort import AbortController
from tether.cli import (
    footer,
    interactive_commands,
    interactive_paste,
    interactive_views as views,
    render,
    screens,
    scrollback,
    themes,
)
from tether.cli.completers import CommandCompleter, FileCompleter
from tether.cli.file_index import FileIndex
from tether.cli.interactive_extensions import ExtensionDisplay
from tether.cli.interactive_keys import key_bindings
from tether.cli.keybindings import (
    FILE_NAME,
    MODIFY_OTHER_KEYS_OFF,
    MODIFY_OTHER_KEYS_ON,
    Bindings,
    hotkeys_text,
    install_sequences,
    load_bindings,
)
from tether.cli.prompt_history import prompt_history
from tether.session import commands
from tether.session.agent_session import AgentSession
from tether.session.stats import Stats
from tether.wire import AgentMessage, ImageContent, ToolCall

if TYPE_CHECKING:
    from tether.session.extensions.api import ExtensionShortcut, NotifyLevel, WidgetPlacement


class InteractiveApp:
    ui_mode = "tui"
    """What extensions see as ``ctx.mode`` (pi's name for the terminal UI)."""

    def __init__(
        self,
        *,
        cwd: Path,
        bindings: Bindings | None = None,
        theme: str | None = None,
        rebuild: interactive_commands.Rebuild | None = None,
    ) -> None:
        """``theme``: the setting's name (``themes.load_theme``); ``rebuild``: what ``/reload``
        calls (without it, ``/reload`` says it cannot)."""
        from tether.ai.paths import config_dir

        self.cwd = cwd
        if bindings is None:
            bindings = load_bindings(config_dir())
        self._bindings = bindings
        self.theme, self._theme_warning = themes.load_theme(theme, config_dir())
        self._history_warning: str | None = None
        self._rebuild = rebuild
        self._keymap = KeyBindings()
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
        self._held: list[render.Item] | None = None
        """Output held back while a full-screen view is up (printed when it closes)."""
        self._work_abort: AbortController | None = None
        """Ctrl-C's target besides the agent: a branch summary being written."""
        self._stats: Stats | None = None
        self._task: asyncio.Task[None] | None = None
        """The current prompt, shell input or command; the UI is busy while it runs."""
        self._side_tasks: set[asyncio.Task[None]] = set()
        self._revision = 0
        """Bumped on every change the live area shows; keys its render cache."""
        self._live_cache: tuple[tuple[int, int, int, bool, bool], str] | None = None
        self._scrollback = scrollback.Scrollback()
        self._unsubscribe: Callable[[], None] = lambda: None
        self._compaction_reports = 0
        self._files = FileIndex(cwd)
        """What ``@`` offers; listed on a thread once the screen is up."""
        self._spent = footer.SessionSpend()
        self._pastes = interactive_paste.Pastes()
        self._images: list[ImageContent] = []
        """Images pasted with Ctrl+V, sent with the next message."""
        """``compaction_end`` events shown: ``/compact`` prints nothing more when one was."""

    # -- public --------------------------------------------------------------------------------------

    async def ask_approval(self, tool_call: ToolCall, question: str) -> bool:
        """Show the question in the live area and wait for y (yes), n (no) or a (always: no
        more questions about tool calls in this session)."""
        return await self._ask_yes_no(question, self._approve_all)

    def ask_yes_no(self, question: str) -> Awaitable[bool]:
        """A yes-or-no question in the live area ("always" is a plain yes)."""
        return self._ask_yes_no(question, lambda: None)

    @property
    def pastes(self) -> interactive_paste.Pastes:
        """The input box's large pastes, each shown there as a marker until sent."""
        return self._pastes

    @property
    def core(self) -> AgentSession | None:
        """The core on screen: ``/reload`` replaces the one ``run`` was given."""
        return self._core

    async def reload(self) -> None:
        """``/reload`` (``interactive_commands.reload``), then the keys and the theme read again."""
        from tether.ai.paths import config_dir

        assert self._core is not None and self._app is not None and self._buffer is not None
        if self._rebuild is None:
            self.say(render.note("/reload: not available here", "error"))
            return
        fresh = await interactive_commands.reload(self, self._core, self._rebuild, self.detach)
        if fresh is None:
            return
        self._bindings = load_bindings(config_dir())
        self._use(fresh)
        theme, warning = themes.load_theme(fresh.settings.theme, config_dir())
        self.set_theme(theme)
        for note in (self._bindings.warning, warning):
            if note:
                self.say(render.note(note, "warning"))

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
                title + _limit(timeout), color=self.color, default=prefill, multiline=True
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
        self.say(render.note(message, "error" if level == "error" else "warning"))

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
        if history is None:
            history, self._history_warning = prompt_history()
        self._buffer = Buffer(multiline=True, history=history, complete_while_typing=True)
        interactive_paste.step_over_markers(self._buffer, self._pastes)
        self._app = self._build(self._buffer)
        interactive_paste.install(self._app.input)
        self._use(core)
        return self._app

    def _use(self, core: AgentSession) -> None:
        """Show ``core``: its events, its commands in the completion menu, its extensions'
        dialogs here."""
        self._core = core
        self._stats = core.stats()
        if core.resources is not None and core.resources.extensions is not None:
            core.resources.extensions.ui = self
        assert self._buffer is not None
        self._buffer.completer = merge_completers(
            [CommandCompleter(self._command_list(core)), FileCompleter(self._files)]
        )
        self._unsubscribe = core.subscribe(self._on_event)
        # the keys again, now with this core's extension shortcuts (DynamicKeyBindings sees them)
        self._keymap = key_bindings(self, self._buffer, self._bindings)

    @staticmethod
    def _command_list(core: AgentSession) -> list[tuple[str, str]]:
        builtin = [(name, command.summary) for name, command in commands.COMMANDS.items()]
        front_end = [
            (name, text.split("  ", 1)[-1].strip())
            for name, text in interactive_commands.FRONT_END_COMMANDS.items()
        ]
        return [*builtin, *front_end, *commands.user_commands(core)]

    def hotkeys(self) -> str:
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
            """Runs once the terminal is in raw mode."""
            app.output.write_raw(MODIFY_OTHER_KEYS_ON)  # Shift+Enter reported, under tmux too
            app.output.flush()  # now, not with the next frame: a Shift+Enter typed first counts too
            self._files.start()
            if initial_prompt:
                self.start(initial_prompt)

        def pre_run() -> None:  # called just before raw mode; call_soon lands just after it
            asyncio.get_running_loop().call_soon(ready)

        # The header (and a resumed conversation) is printed before the first frame, so no frame
        # shows the input box and status line alone at the top, then pushed down by the header.
        # The keys typed meanwhile wait in the terminal unechoed (raw mode), for the input box:
        # raw mode is held from the header into the application's own, since in a cooked gap
        # the terminal would echo them and take Enter and Ctrl-D as line editing.
        with app.input.raw_mode():
            self._print_header(core)
            with patch_stdout(raw=True):
                try:
                    return await app.run_async(pre_run=pre_run)
                finally:
                    # the terminal may be gone (closed: SIGHUP, then EIO): the run is still stopped
                    with contextlib.suppress(OSError):
                        app.output.write_raw(MODIFY_OTHER_KEYS_OFF)
                        app.output.flush()
                    self.detach()
                    if self._task is not None and not self._task.done() and self._core is not None:
                        self._core.abort()
                        with contextlib.suppress(Exception, asyncio.CancelledError):
                            await self._task

    # -- layout and keys -----------------------------------------------------------------------------

    def _build(self, buffer: Buffer) -> Application[int]:
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
        app: Application[int] = Application(
            layout=Layout(main, focused_element=input_row),
            key_bindings=DynamicKeyBindings(lambda: self._keymap),
            style=self.theme.toolkit_style(),
            full_screen=False,
            mouse_support=False,
            color_depth=None if self.color else ColorDepth.DEPTH_1_BIT,
            min_redraw_interval=0.03,
            refresh_interval=1.0,  # the status line's count of the model's silence
            erase_when_done=True,
        )
        scrollback.follow_width(app, self._follow_width)
        # A lone Esc is a key of its own (app.interrupt), not only Alt's prefix: decide sooner.
        # (Its flush of a half-read key may still fire while a full-screen view is up: the views
        # parse keys with their own input, screens.own_input, so it cannot take theirs.)
        app.timeoutlen = 0.4
        return app

    # -- live area -------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """A prompt, shell input or command of this screen runs, or a run started elsewhere (an
        extension's ``send_user_message``, its command's turn): "● working" shows, Esc aborts
        and Enter steers whichever started it. Only the screen's own were: an extension's run
        went on unseen, Enter started another prompt and Esc did nothing."""
        if self._task is not None and not self._task.done():
            return True
        return self._core is not None and self._core.is_running

    @property
    def asking(self) -> bool:
        return self._approval is not None

    @property
    def _width(self) -> int:
        if self._app is not None:
            with contextlib.suppress(Exception):
                return max(20, self._app.output.get_size().columns)
        return 80

    def painter(self) -> render.Painter:
        return render.Painter(self._width, self.color, self.theme)

    def theme_name(self) -> str:
        return self.theme.name

    def set_theme(self, theme: themes.Theme) -> None:
        """Draw with ``theme`` from now on: what was printed keeps its colours until a width
        change draws it again (``scrollback``), in the theme of that time."""
        self.theme = theme
        if self._app is not None:  # made once per theme: a new Style empties prompt-toolkit's caches
            self._app.style = theme.toolkit_style()
        self._revision += 1  # drawn anew when the live area is next (after a full-screen view)

    def bindings(self) -> Bindings:
        return self._bindings

    def rows(self) -> int:
        if self._app is not None:
            with contextlib.suppress(Exception):
                return max(5, self._app.output.get_size().rows)
        return 24

    def _live_text_raw(self) -> str:
        """The live area's text, rendered once per state (prompt-toolkit asks several times per
        redraw, and re-rendering a long answer's markdown is the expensive part)."""
        key = (self._revision, self._width, self.rows(), self.show_thinking, self.busy)
        if self._live_cache is None or self._live_cache[0] != key:
            self._live_cache = (key, self._render_live())
        return self._live_cache[1]

    def _render_live(self) -> str:
        question = self._approval[0] if self._approval is not None else None
        return render.live_area(
            self.painter(),
            self._live,
            self._tools.values(),
            question,
            self.busy,
            self.show_thinking,
            max(3, self.rows() - 6),
        )

    def _live_text(self) -> AnyFormattedText:
        return ANSI(self._live_text_raw())

    def _chips(self) -> AnyFormattedText:
        return footer.chips(self._steering, self._follow_ups, [i["mimeType"] for i in self._images])

    def _prompt_mark(self) -> AnyFormattedText:
        return [("class:prompt", "» " if self.busy else "› ")]

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
            activity=footer.activity(self._last_event, bool(self._tools or self._approval))
            if self.busy
            else None,
            width=self._width,
        )

    # -- events ----------------------------------------------------------------------------------

    def _on_event(self, event: Mapping[str, Any]) -> None:
        """Show an event. A display bug is printed, never raised: it must not end the agent's run."""
        self._last_event = time.monotonic()
        try:
            self._show(event)
        except Exception as exc:
            self.say(render.note(f"(display error: {type(exc).__name__}: {exc})", "error"))
        self._invalidate()

    def _show(self, event: Mapping[str, Any]) -> None:
        kind = event["type"]
        if kind == "message_start":
            message = event["message"]
            if message["role"] == "user":
                self._echo(render.message_text(message))
            elif message["role"] == "assistant":
                self._live = message
        elif kind == "message_update":
            self._live = event["message"]
        elif kind == "message_end":
            if self._core is not None:
                self._spent.of(self._core).add(event["message"])
            self._message_end(event["message"])
        elif kind == "tool_execution_start":
            self._tools[event["toolCallId"]] = (event["toolName"], event.get("args"))
        elif kind == "tool_execution_end":
            name, args = self._tools.pop(event["toolCallId"], (event["toolName"], {}))
            self.say(render.tool_end(name, args, event))
        elif kind == "queue_update":
            self._steering = list(event["steering"])
            self._follow_ups = list(event["followUp"])
        elif kind == "compaction_start":
            self.say(render.note("compacting the conversation…", "muted"))
        elif kind == "compaction_end":
            self._compaction_reports += 1
            self.say(render.item(render.compaction_report, event))
        elif kind == "agent_start" and self._core is not None:  # any run's, an extension's too:
            self._side_task(self._core.wait_for_idle())  # drawn idle once it settled
        elif kind == "notice":
            self.say(render.note(str(event["message"]), "warning"))
        elif kind in ("agent_end", "turn_end") and self._core is not None:
            self._stats = self._core.stats()

    def _echo(self, text: str) -> None:
        """Show the user's message, its pastes as their markers: a sent one at its
        ``message_start``, a command run here (``/tree``, ``/resume``...) as it starts, since no
        event shows it."""
        self.say(render.user_item(self._pastes.shown(text)))

    def _message_end(self, message: dict[str, Any]) -> None:
        if message["role"] == "assistant":
            self._live = None
        custom, thinking = views.custom_renderer(self._core), self.show_thinking
        self.say(render.ended_item(message, show_thinking=thinking, custom=custom))

    # -- actions ---------------------------------------------------------------------------------

    def take_images(self) -> list[ImageContent]:
        images, self._images = self._images, []
        return images

    def paste_image(self) -> None:
        """Ctrl+V: the clipboard's image goes with the next message (a chip shows it); text on a
        clipboard without an image is typed into the input box, as pi pastes it."""
        from tether.cli import clipboard

        try:
            pasted = clipboard.paste_content()
        except clipboard.ClipboardError as exc:
            self.say(render.note(f"paste: {exc}", "warning"))
        else:
            if isinstance(pasted, str):
                if self._buffer is not None:
                    self._buffer.insert_text(self._pastes.fold(pasted))
            else:
                self._images.append(pasted)
        self._invalidate()

    def start(self, text: str, images: list[ImageContent] | None = None) -> None:
        task = asyncio.ensure_future(self._submit(text, images or []))
        task.add_done_callback(lambda _t: self._invalidate())
        if self.busy:  # a command (/session, /help) while the agent works runs beside the run
            self._side_tasks.add(task)
            task.add_done_callback(self._side_tasks.discard)
        else:
            self._task = task
        self._invalidate()

    async def _submit(self, text: str, images: list[ImageContent]) -> None:
        core = self._core
        assert core is not None
        try:
            parsed = commands.parse(text)
            idle = not (core.is_running or core.is_compacting)  # else ``execute`` says why not
            if parsed == ("tree", "") and idle:
                self._echo(text)
                await self._navigate_tree()
            elif parsed == ("resume", "") and idle:
                self._echo(text)
                await views.resume_picked(self, core)
            elif parsed == ("fork", "") and idle:
                self._echo(text)
                self._put_in_input(await views.fork_picked(self, core))
            elif parsed is not None and parsed[0] in interactive_commands.FRONT_END_COMMANDS:
                self._echo(text)
                await interactive_commands.run(self, core, *parsed)
            elif commands.runs_here(core, text):
                self._echo(text)
                reports = self._compaction_reports
                result = await commands.execute(core, text)
                if self._compaction_reports != reports:  # /compact: its compaction_end said it all
                    result = commands.CommandResult("", quit=result.quit)
                extra = (
                    "\n".join(interactive_commands.FRONT_END_COMMANDS.values())
                    if parsed == ("help", "")
                    else ""
                )
                self.say(
                    render.note(
                        "\n".join(filter(None, [result.text, extra])), "error" if result.error else ""
                    )
                )
                self._stats = core.stats()
                if result.quit and self._app is not None:
                    self._app.exit(result=0)
            else:
                await core.submit(text, images)
        except Exception as exc:  # a bug must not kill the session: show it and keep going
            self.say(render.item(render.error_text, f"{type(exc).__name__}: {exc}", aborted=False))
        finally:
            self._stats = core.stats()

    def queue(self, text: str, *, follow_up: bool) -> None:
        core = self._core
        assert core is not None
        if follow_up:
            core.follow_up(text, self.take_images())
        else:
            core.steer(text, self.take_images())
        self._invalidate()

    def answer(self, allowed: bool, *, always: bool = False) -> None:
        """Resolve the question now: the keys typed right after the answer are text again.
        ``always``: the "a" answer, which also remembers what the question said it would."""
        if always:
            self._always()
        if self._approval is not None:
            future = self._approval[1]
            self._approval = None
            if not future.done():
                future.set_result(allowed)
            self._invalidate()

    def abort(self) -> None:
        if self._core is not None:
            self._core.abort()

    def interrupt(self) -> None:
        """Esc: the queue goes back into the input box, the run stops, and so does a branch
        summary being written."""
        self.restore_queued()
        self.abort()
        if self._work_abort is not None:
            self._work_abort.abort()

    def toggle_thinking(self) -> None:
        self.show_thinking = not self.show_thinking
        self._invalidate()

    # -- models, queue, editor, sessions ---------------------------------------------------------

    def cycle_thinking(self) -> None:
        assert self._core is not None
        self._core.cycle_thinking_level()
        self._invalidate()

    def cycle_model(self, direction: Literal["forward", "backward"]) -> None:
        assert self._core is not None
        self._side_task(self._core.cycle_model(direction))

    def pick_model(self) -> None:
        assert self._core is not None
        self._side_task(views.pick_model(self, self._core))

    def show_transcript(self) -> None:
        """The whole branch in a full-screen view, the answer streaming now included."""
        assert self._core is not None
        self._side_task(views.show_transcript(self, self._core, cast(AgentMessage | None, self._live)))

    def _side_task(self, work: Coroutine[Any, Any, object]) -> None:
        """Run ``work`` beside the prompt (a view, a model switch); its failure is printed."""

        async def guarded() -> None:
            try:
                await work
            except Exception as exc:
                self.say(render.item(render.error_text, f"{type(exc).__name__}: {exc}", aborted=False))
            finally:
                if self._core is not None:
                    self._stats = self._core.stats()
                self._invalidate()

        task = asyncio.ensure_future(guarded())
        self._side_tasks.add(task)
        task.add_done_callback(self._side_tasks.discard)

    def idle_or_say(self, what: str) -> bool:
        """Settings change between runs: while one goes on, say so instead."""
        if self.busy:
            self.say(render.note(f"({what} changes once the agent is done)", "muted"))
            return False
        return True

    def restore_queued(self) -> int:
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

    def edit_externally(self) -> None:
        self._side_task(self._edit_externally())

    async def _edit_externally(self) -> None:
        """The editor gets the pastes' text, not their markers (a marker there was a line the
        user could not read or edit), as pi's does; unchanged pastes come back folded."""
        assert self._buffer is not None
        typed = self._buffer.text
        edited = await views.edit_externally(self, self._pastes.expanded(typed))
        self._put_in_input(None if edited is None else self._pastes.folded_again(edited, typed))

    def copy_last_answer(self) -> None:
        assert self._core is not None
        views.copy_last_answer(self, self._core)

    def copy(self, text: str) -> str:
        return views.copy(text, self._app.output if self._app is not None else None)

    async def _navigate_tree(self) -> None:
        assert self._core is not None
        self._work_abort = AbortController()
        try:
            editor_text = await views.navigate_tree(self, self._core, self._work_abort)
        finally:
            self._work_abort = None
        self._put_in_input(editor_text)

    @contextlib.asynccontextmanager
    async def full_screen(self) -> AsyncGenerator[None]:
        """Suspend the live area for a full-screen view; output made meanwhile waits for it."""
        self._held = []
        try:
            async with in_terminal():
                yield
        finally:
            held, self._held = self._held, None
            self._follow_width()  # resized while the view was up: its own handler had the signal
            for item in held:
                self.say(item)

    def say(self, item: render.Item) -> None:
        """Print ``item`` above the live area (kept to be drawn again at a new width)."""
        if self._held is not None:
            self._held.append(item)
        elif text := self._scrollback.add(item, self.painter()):
            sys.stdout.write(text + "\n")
            sys.stdout.flush()

    def _follow_width(self) -> None:
        """On a width change: the screen and the scrollback cleared, everything printed drawn
        again at the new width (``scrollback``). Through ``sys.stdout`` as ``say``'s text goes,
        so what it still holds comes out before."""
        if self._held is not None or self._app is None or not self._app.is_running:
            return  # a view is up (done when it closes), or the screen is no longer ours
        redrawn = self._scrollback.redraw(self.painter())
        if redrawn is not None:
            sys.stdout.write(redrawn + "\n")
            sys.stdout.flush()

    def _print_header(self, core: AgentSession) -> None:
        found = (self._bindings.warning, self._theme_warning, self._history_warning)
        warnings = "\n".join(w for w in found if w) or None
        for item in views.header(core, self.painter(), self.rows(), warnings):
            self.say(item)

    def extension_shortcuts(self) -> Sequence[ExtensionShortcut]:
        host = self._core.resources.extensions if self._core is not None and self._core.resources else None
        return host.shortcuts() if host else []

    def run_shortcut(self, shortcut: ExtensionShortcut) -> None:
        self._side_task(self._run_shortcut(shortcut))

    async def _run_shortcut(self, shortcut: ExtensionShortcut) -> None:
        """An extension's key: its handler gets a command's context (``ctx.send`` prompts)."""
        core = self._core
        host = core.resources.extensions if core is not None and core.resources is not None else None
        if core is None or host is None:
            return

        async def send(text: str) -> None:
            self.start(text)

        await host.run_shortcut(shortcut, host.command_context(core, send))

    def _invalidate(self) -> None:
        self._revision += 1
        if self._app is not None:
            self._app.invalidate()


def _limit(timeout: float | None) -> str:
    """How a dialog's time limit is shown after its title."""
    return f" (closes in {timeout:g} s)" if timeout is not None else ""
