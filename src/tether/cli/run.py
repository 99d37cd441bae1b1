"""From parsed options to a running mode: settings, session choice, runtime, then the front end.

User mistakes (a bad settings file, an unknown model, a missing session) end here as one line on
stderr and exit status 1 — never a traceback.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from tether.cli.options import RunOptions


def run(options: RunOptions) -> int:
    try:
        return asyncio.run(_run(options))
    except KeyboardInterrupt:
        return 130
    except _user_errors() as exc:
        sys.stderr.write(f"tether: {exc}\n")
        return 1


def run_demo(question: str, model: str | None) -> int:
    """``tether demo``: the same as ``tether -p QUESTION --no-session``, streaming the answer."""
    sys.stderr.write(f"Question: {question}\n")
    options = RunOptions(prompt=question, mode="print", model=model, no_session=True, tools=())
    return run(options)


async def _run(options: RunOptions) -> int:
    from tether.ai.paths import config_dir
    from tether.cli.runtime import Runtime, SessionChoice
    from tether.cli.settings import load_settings

    cwd = options.cwd or Path.cwd()
    mode = options.mode
    prompt = options.prompt
    if mode == "interactive" and not sys.stdin.isatty():
        mode = "print"
    if mode != "interactive" and prompt is None:
        if sys.stdin.isatty():
            sys.stderr.write("tether: no prompt: pass it as an argument or on stdin\n")
            return 2
        prompt = sys.stdin.read().strip()
        if not prompt:
            sys.stderr.write("tether: empty prompt on stdin\n")
            return 2
    settings = load_settings(config_dir(), cwd)
    session_id = options.session_id
    if options.resume == "":
        session_id = _pick_session(cwd)
        if session_id is None:
            return 1
    elif options.resume:
        session_id = options.resume
    choice = SessionChoice(
        persist=not options.no_session,
        continue_latest=options.continue_,
        session_id=session_id,
        create_if_missing=options.session_id is not None,
    )
    ask = None
    interactive_app = None
    if mode == "interactive":
        from tether.cli.interactive import InteractiveApp

        interactive_app = InteractiveApp(cwd=cwd)
        ask = interactive_app.ask_approval
    runtime = await Runtime.start(
        cwd=cwd,
        settings=settings,
        model_spec=options.model,
        thinking=options.thinking,
        tool_names=options.tools,
        system_prompt=options.system_prompt,
        approval="yes" if options.yes else None,
        ask=ask,
        session=choice,
    )
    try:
        if interactive_app is not None:
            return await interactive_app.run(runtime, prompt)
        if runtime.notice:
            sys.stderr.write(f"note: {runtime.notice}\n")
        assert prompt is not None
        from tether.cli.headless import run_json, run_print

        if mode == "json":
            return await run_json(runtime, prompt, sys.stdout, sys.stderr)
        return await run_print(runtime, prompt, sys.stdout, sys.stderr, stream=sys.stdout.isatty())
    finally:
        await runtime.close()


def _pick_session(cwd: Path) -> str | None:
    """``--resume`` without an id: list this directory's sessions and read a number."""
    from tether.cli.listing import session_rows

    rows = session_rows(cwd=cwd, limit=20)
    if not rows:
        sys.stderr.write(f"tether: no sessions in {cwd} to resume\n")
        return None
    for index, row in enumerate(rows, 1):
        sys.stderr.write(f"{index:>3}  {row}\n")
    if not sys.stdin.isatty():
        sys.stderr.write("tether: --resume without an id needs a terminal; pass the id\n")
        return None
    answer = input("Resume which session? [1] ").strip() or "1"
    if not answer.isdigit() or not 1 <= int(answer) <= len(rows):
        sys.stderr.write(f"tether: no session number {answer!r}\n")
        return None
    return rows[int(answer) - 1].id


def _user_errors() -> tuple[type[BaseException], ...]:
    from tether.cli.model_choice import ModelError
    from tether.cli.settings import SettingsError

    errors: list[type[BaseException]] = [ModelError, SettingsError]
    try:
        from tether.session import SessionError

        errors.append(SessionError)
    except ImportError:  # pragma: no cover - the session package is always present once merged
        pass
    return tuple(errors)


def color_enabled(stream: object) -> bool:
    """Colour only on a terminal, and never when ``NO_COLOR`` is set (https://no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())
