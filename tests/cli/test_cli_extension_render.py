"""Extensions' messages in the terminal's transcript and scrollback: under their type, through the
extension's renderer (``api.register_message_renderer``) when it has one, expanded in the
transcript; a message sent with ``display=False`` is not shown; a renderer that fails (or calls
``exit()``) is reported once and the message is shown the default way."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from tether.cli import render
from tether.cli.transcript import render_transcript
from tether.session.extensions.loader import load_extensions

EXTENSION = """
import sys

def setup(api):
    api.register_message_renderer("todo.list", lambda m, expanded: (
        [f"todo ({len(m['details'])})", *(f"  - {item}" for item in m["details"])] if expanded else f"todo ({len(m['details'])})"
    ))
    api.register_message_renderer("todo.none", lambda m, expanded: None)
    api.register_message_renderer("todo.boom", lambda m, expanded: 1 / 0)
    api.register_message_renderer("todo.exit", lambda m, expanded: sys.exit(3))
"""


def custom(kind: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"role": "custom", "customType": kind, "content": text, "display": True, "timestamp": 0, **extra}


def test_renderers_in_the_transcript_and_the_scrollback(tmp_path: Path) -> None:
    path = tmp_path / "todo.py"
    path.write_text(textwrap.dedent(EXTENSION))
    host = load_extensions(tmp_path, [path])
    failures: list[tuple[str, str]] = []
    host.failed = lambda origin, where, error, line: failures.append((where, error))
    painter = render.Painter(80, False)
    messages = [
        custom("todo.list", "raw", details=["milk", "eggs"]),
        custom("todo.none", "shown as it is"),
        custom("todo.hidden", "never shown", display=False),
        custom("todo.boom", "after a failure"),
        custom("todo.exit", "after an exit"),
    ]
    text = render_transcript(painter, messages, show_thinking=False, custom=host.render_message)
    text = "\n".join(line.rstrip() for line in text.splitlines())  # markdown pads its lines
    assert text.split("\n\n") == [
        "[todo.list]\ntodo (2)\n  - milk\n  - eggs",
        "[todo.none]\nshown as it is",
        "[todo.boom]\nafter a failure",
        "[todo.exit]\nafter an exit",
    ]
    scrollback = render.ended_message(painter, messages[0], show_thinking=False, custom=host.render_message)
    assert scrollback == ["[todo.list]\ntodo (2)"]  # folded there
    assert render.ended_message(painter, messages[2], show_thinking=False, custom=host.render_message) == []
    assert failures == [
        ("rendering todo.boom", "ZeroDivisionError: division by zero"),
        ("rendering todo.exit", "SystemExit: 3"),
    ]
