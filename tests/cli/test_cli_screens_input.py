"""A full-screen view's keys reach the view, even while the suspended inline application's
"flush the half-read key" timer is still armed (the Esc lost after ``/tree``'s Enter)."""

from __future__ import annotations

import asyncio
from typing import Any

from prompt_toolkit.application import Application, create_app_session, in_terminal
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.output import DummyOutput

from tether.cli import screens


async def test_an_esc_typed_in_a_view_is_not_taken_by_the_suspended_application() -> None:
    """The inline application reads "x" (which opens the view, as Enter opens ``/tree``) and arms
    its flush of half-read keys for ``ttimeoutlen`` later. The Esc typed in the view waits in a
    parser for what may follow it (an escape sequence); the view waits longer than the inline
    application here, so that flush fires first: the Esc must still close the view."""
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        main_keys = KeyBindings()
        taken_by_main: list[str] = []
        view_up: asyncio.Event = asyncio.Event()
        outcome: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        views: list[Application[Any]] = []

        async def open_view() -> None:
            view_keys = KeyBindings()

            @view_keys.add("escape", eager=True)
            def _close(event: KeyPressEvent) -> None:
                event.app.exit(result="closed by Esc")

            view = screens.application(
                lambda: "view", Window(FormattedTextControl("body")), lambda: "", view_keys, color=False
            )
            view.ttimeoutlen = 0.6  # longer than the inline application's (below)
            views.append(view)
            async with in_terminal():
                view.pre_run_callables.append(view_up.set)
                outcome.set_result(await screens.run_view(view))

        @main_keys.add("x")
        def _open(event: KeyPressEvent) -> None:
            event.app.create_background_task(open_view())

        @main_keys.add("escape", eager=True)
        def _escape(event: KeyPressEvent) -> None:
            taken_by_main.append("escape")

        main: Application[None] = Application(
            layout=Layout(Window(FormattedTextControl("prompt"))), key_bindings=main_keys
        )
        main.ttimeoutlen = 0.2
        running = asyncio.ensure_future(main.run_async(handle_sigint=False))
        try:
            await asyncio.sleep(0.05)
            pipe.send_text("x")
            await asyncio.wait_for(view_up.wait(), 5)
            pipe.send_text("\x1b")
            await asyncio.wait({outcome}, timeout=5)
            assert (outcome.result() if outcome.done() else "still open", taken_by_main) == (
                "closed by Esc",
                [],
            )
        finally:
            for view in views:
                if view.is_running:
                    view.exit(result="still open")
            await asyncio.sleep(0)
            main.exit()
            await asyncio.wait_for(running, 5)
