"""From parsed options to a running mode: settings, session choice, core, then the front end.

User mistakes (a bad settings file, an unknown model or tool, a missing session) end here as one
line on stderr and exit status 1 — never a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO, cast

from tether._event_loop import run as run_event_loop
from tether.cli.collector import start_up_done
from tether.cli.options import RunOptions
from tether.cli.stdout import give_back_stdout, take_over_stdout, text_output
from tether.errors import TetherError
from tether.session.options import SessionOptions
from tether.telemetry.otlp import start_from_env

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from tether.session.agent_session import AgentSession
    from tether.session.settings import Settings

DEMO_MODEL = "local:"
"""``tether demo`` always runs the embedded model unless told otherwise (never a paid API)."""


def run(options: RunOptions) -> int:
    stop_telemetry = start_from_env()  # exports only when an OTLP endpoint is configured
    try:
        return _run_mode(options)
    finally:
        if stop_telemetry is not None:
            stop_telemetry()


def _run_mode(options: RunOptions) -> int:
    if options.export is not None:
        from tether.cli.session_files import export_html

        start_up_done()
        return export_html(*options.export)
    if options.mode == "acp":
        start_up_done()  # an editor's server runs for hours
        return _run_acp(options)
    try:
        if options.mode != "rpc":
            # Before the event loop: its SIGINT handler only cancels the main task, which a
            # blocking read of an open pipe never notices (it took a second Ctrl-C).
            options = _with_prompt(options)
        return run_event_loop(_run(options))
    except KeyboardInterrupt:
        return 130
    except TetherError as exc:  # each message says what and where: one line, no traceback
        sys.stderr.write(f"tether: {exc}\n")
        return 1


def run_demo(question: str, model: str | None) -> int:
    """``tether demo``: ``tether -p QUESTION --no-session --tools ''``, streaming the answer."""
    if model is None:
        sys.stderr.write(
            "Model: SmolLM2-135M-Instruct, embedded and offline. It is a smoke-test model: it answers,\n"
            "but it is far too small to be a useful coding agent (set an API key and use --model).\n"
        )
    sys.stderr.write(f"Question: {question}\n")
    options = RunOptions(
        prompt=question,
        mode="print",
        no_session=True,
        stream=True,
        session_options=SessionOptions(model=model or DEMO_MODEL, tools=()),
    )
    return run(options)


async def _run(options: RunOptions) -> int:
    if options.mode not in ("print", "json", "rpc"):
        return await _stopped_by_signals(_run_modes(options))
    from tether.cli.terminal_text import EscapingWriter

    # notes and errors name files, tools and servers chosen by others: no control sequences
    given = sys.stderr
    sys.stderr = cast(TextIO, EscapingWriter(given))
    try:
        if options.mode == "rpc":  # it ends on these signals itself (tether.rpc.mode)
            return await _run_modes(options)
        return await _stopped_by_signals(_run_modes(options))
    finally:
        if sys.stdout is sys.stderr:
            sys.stdout = given
        sys.stderr = given


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


async def _stopped_by_signals(run: Coroutine[Any, Any, int]) -> int:
    """``run``, ended by SIGTERM or SIGHUP as Ctrl-C ends it (the main task cancelled), then
    128 + the signal's number. Their default action ended ``-p``, ``--mode json`` and the
    interactive mode where they stood: a ``bash`` call's sandbox placeholders (a read-only
    ``.git``, ``.mcp.json``, ...) stayed in the workspace, and the next start there read them as
    the project's own. A closed terminal hangs up (SIGHUP) and then fails every write to it
    (EIO): such a failure while the run unwinds is part of that ending, not an error of its own."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None  # the event loop's main task
    heard: list[int] = []

    def stop(signum: int) -> None:
        if not heard:
            heard.append(signum)
            task.cancel()

    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, stop, signum)
    try:
        return await run
    except (asyncio.CancelledError, OSError):  # OSError: the terminal that hung up, written to
        if not heard:
            raise
        task.uncancel()
        return 128 + heard[0]
    finally:
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)


async def _run_modes(options: RunOptions) -> int:
    cwd = options.cwd or Path.cwd()
    rpc_out = None
    json_out = None
    print_out = None
    if options.mode in ("rpc", "json", "print") and sys.stdout is None:  # started with fd 1 closed
        name = "-p" if options.mode == "print" else f"--mode {options.mode}"
        sys.stderr.write(f"tether: standard output is closed: {name} has nowhere to write\n")
        return 1
    if options.mode == "rpc":
        if options.prompt:
            sys.stderr.write("tether: --mode rpc takes its prompts as commands on stdin, not as arguments\n")
            return 2

        rpc_out = take_over_stdout()  # before anything could print: stdout carries frames only
    elif options.mode == "json":
        json_out = text_output(take_over_stdout())  # the event lines only, as in RPC
    elif options.mode == "print":
        # The answer only: ``answer=$(tether -p ...)`` got an extension's print() before it.
        previous = sys.stdout
        print_out = text_output(take_over_stdout())
        try:
            return await _run_session(options, cwd, rpc_out, json_out, print_out)
        finally:
            with contextlib.suppress(OSError, ValueError):
                give_back_stdout(print_out, previous)
                print_out.close()
    return await _run_session(options, cwd, rpc_out, json_out, print_out)


async def _run_session(
    options: RunOptions,
    cwd: Path,
    rpc_out: BinaryIO | None,
    json_out: TextIO | None,
    print_out: TextIO | None,
) -> int:
    """The run of ``_run``, stdout taken over as the mode needs."""
    from tether.session.factory import SessionChoice, start_session

    if options.follow and (options.mode != "rpc" or not options.session_id):
        sys.stderr.write(
            "tether: --follow watches a running session over RPC: --mode rpc --session ID --follow "
            "(or print its entries with `tether sessions follow ID`)\n"
        )
        return 2
    if options.name is not None and (options.no_session or options.follow):
        sys.stderr.write(
            "tether: --name names the stored session this run writes: drop --no-session/--follow\n"
        )
        return 2
    if options.mode not in ("interactive", "rpc") and not options.prompt:
        sys.stderr.write("tether: no prompt: pass it as an argument or on stdin\n")
        return 2
    settings = _settings(cwd, interactive=options.mode == "interactive")
    session_id = options.session_id or options.resume or None
    if options.resume == "":
        session_id = await _pick_session(cwd)
        if session_id is None:
            return 1
    choice = SessionChoice(
        persist=not options.no_session,
        continue_latest=options.continue_,
        session_id=session_id,
        read_only=options.follow,
    )
    app = None
    if options.mode == "interactive":
        from tether.cli.interactive import InteractiveApp

        def rebuild(session_id: str | None, settings_now: Settings | None) -> AgentSession:
            """``/reload``'s core: the files read again (settings too, unless given)."""
            from tether.ai.paths import config_dir
            from tether.session.settings import load_settings

            fresh = settings_now if settings_now is not None else load_settings(config_dir(), cwd)
            again = SessionChoice(persist=True, session_id=session_id)
            assert app is not None
            return start_session(
                options.session_options, cwd=cwd, settings=fresh, ask=app.ask_approval, session=again
            )

        app = InteractiveApp(cwd=cwd, theme=settings.theme, rebuild=rebuild)
    ask = app.ask_approval if app is not None else None
    core = start_session(
        options.session_options,
        cwd=cwd,
        settings=settings,
        ask=ask,
        session=choice,
        require_model=rpc_out is None,  # pi's RPC mode starts without a model: its client may choose one
    )
    start_up_done()
    try:
        if options.name is not None and options.name.strip():
            core.rename(options.name.strip())
        if app is not None:
            return await app.run(core, options.prompt)
        if rpc_out is not None:
            from tether.cli.headless import write_notes
            from tether.rpc.mode import serve

            write_notes(core, sys.stderr)

            if not options.follow:
                return await serve(core, stdin_fd=sys.stdin.fileno(), out=rpc_out)
            stop = threading.Event()
            watching = asyncio.ensure_future(core.follow(stop))
            try:
                return await serve(core, stdin_fd=sys.stdin.fileno(), out=rpc_out)
            finally:
                stop.set()
                await asyncio.gather(watching, return_exceptions=True)
        from tether.cli.headless import run_json, run_print, write_notes

        prompts = [options.prompt or "", *options.more_prompts]
        if json_out is not None:
            try:
                return await run_json(core, prompts, json_out, sys.stderr)
            finally:
                with contextlib.suppress(OSError, ValueError):
                    json_out.close()
        write_notes(core, sys.stderr)
        assert print_out is not None
        terminal = print_out.isatty()
        stream = options.stream if options.stream is not None else terminal
        if terminal:  # shown, not data: the answer's control sequences escaped (terminal_text)
            from tether.cli.terminal_text import EscapingWriter

            print_out = cast(TextIO, EscapingWriter(print_out))
        return await run_print(core, prompts, print_out, sys.stderr, stream=stream)
    finally:
        await _close(app.core if app is not None and app.core is not None else core)


CLOSE_WAIT = 10.0
"""Seconds the end of a run waits for the session to close (a run stuck on a dead dependency
is aborted and left behind rather than keeping the process alive)."""


async def _close(core: AgentSession) -> None:
    """``core.close()``, bounded: shielded, so a close that ends late is not cut in half."""
    closing = asyncio.ensure_future(core.close())
    done, _ = await asyncio.wait([closing], timeout=CLOSE_WAIT)
    if not done:
        sys.stderr.write(f"tether: the session did not close within {CLOSE_WAIT:g} s; exiting\n")
        return
    closing.result()


def _run_acp(options: RunOptions) -> int:
    """``--mode acp``: stdin and stdout belong to the editor's JSON-RPC from here on."""
    if options.prompt is not None:
        sys.stderr.write("tether: --mode acp takes no prompt: the editor sends the prompts\n")
        return 2
    if options.no_session or options.continue_ or options.resume is not None or options.session_id:
        sys.stderr.write(
            "tether: --mode acp: the editor picks sessions (session/new, session/load) and they are "
            "always stored; drop --no-session, --continue, --resume and --session\n"
        )
        return 2
    try:
        from tether.acp.server import run_acp
    except ImportError as exc:
        if exc.name is None or not exc.name.startswith("acp"):
            raise
        sys.stderr.write(
            "tether: --mode acp needs the Agent Client Protocol SDK (the acp extra): "
            "pip install 'agent-client-protocol>=0.12.1,<0.13'\n"
        )
        return 1
    return run_acp(options.session_options, take_over_stdout)


def _with_prompt(options: RunOptions) -> RunOptions:
    """Piped stdin means a script is talking: run headless, with the piped text before the
    prompt (``cat README | tether -p "Summarize"``), as pi does. pi glues the two together
    without a separator; a blank line keeps the model from reading them as one sentence."""
    if sys.stdin.isatty():
        return options
    mode = "print" if options.mode == "interactive" else options.mode
    # bytes, decoded as pi decodes them: what is not UTF-8 becomes U+FFFD instead of failing
    # the read (or, with surrogateescape in a C locale, the session store later)
    piped = sys.stdin.buffer.read().decode("utf-8", "replace").strip()
    prompt = "\n\n".join(part for part in (piped, options.prompt) if part) or None
    return replace(options, mode=mode, prompt=prompt)


def _settings(cwd: Path, *, interactive: bool) -> Settings:
    """Settings for ``cwd``. With someone at the keyboard, what the project would add and was
    not granted (widening settings, extensions, MCP servers, skills, templates) is named and
    asked about kind by kind, once (``tether.cli.trust_prompt``: a no is remembered); otherwise ignored widening settings
    are reported (the rest is reported as the session loads it)."""
    from tether.ai.paths import config_dir
    from tether.session.settings import load_settings, untrusted_note

    settings = load_settings(config_dir(), cwd)
    if interactive and sys.stdin.isatty():
        from tether.ai.paths import data_dir
        from tether.cli.trust_prompt import ask_grants, offered

        offers = offered(cwd, settings, config_dir(), data_dir())
        if offers and ask_grants(offers, config_dir(), sys.stderr, data_dir=data_dir()):
            settings = load_settings(config_dir(), cwd)
    note = untrusted_note(settings, config_dir())
    if note is not None:
        sys.stderr.write(f"note: {note}\n")
    return settings


async def _pick_session(cwd: Path) -> str | None:
    """``--resume`` without an id: the session picker ``/resume`` opens (search, sort, rename,
    delete), over this directory's sessions, before anything else starts."""
    import os

    from tether.cli.pickers import SessionActions, pick_session
    from tether.session import SessionManager
    from tether.session.stats import SessionRow

    sessions = SessionManager()
    try:

        def rows() -> list[SessionRow]:
            return [SessionRow.of(r) for r in sessions.list(cwd=str(cwd))]

        found = rows()
        if not found:
            sys.stderr.write(f"tether: no sessions in {cwd} to resume\n")
            return None
        if not sys.stdin.isatty() or not sys.stdout.isatty():
            for row in found[:20]:
                sys.stderr.write(f"  {row}\n")
            sys.stderr.write("tether: --resume without an id needs a terminal; pass the id\n")
            return None

        def rename(session_id: str, title: str) -> None:
            with sessions.open(session_id) as session:
                session.rename(title)

        actions = SessionActions(rows=rows, rename=rename, delete=sessions.delete)
        chosen = await pick_session(actions, current=None, color=not os.environ.get("NO_COLOR"))
    finally:
        sessions.close()
    if chosen is None:
        sys.stderr.write("tether: resume cancelled\n")
    return chosen
