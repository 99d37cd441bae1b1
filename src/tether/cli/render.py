"""Turning transcript pieces into terminal text (ANSI) for the interactive mode.

Everything here is a pure function of its inputs and a ``Painter`` (width + colour choice), so
the same code renders the live (still streaming) view and the final scrollback, and tests can
check it without a terminal. Rich does the markdown; colour is dropped entirely when the user
set ``NO_COLOR`` or the output is not a terminal.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from rich.console import Console, RenderableType
from rich.markdown import Markdown
from rich.text import Text

FOLDED_LINES = 4
"""Lines of a tool result shown before it is folded."""


@dataclass(frozen=True, slots=True)
class Painter:
    width: int
    color: bool

    def render(self, renderable: RenderableType) -> str:
        buffer = io.StringIO()
        console = Console(
            file=buffer,
            width=self.width,
            force_terminal=self.color,
            no_color=not self.color,
            color_system="standard" if self.color else None,
            highlight=False,
            soft_wrap=False,
        )
        console.print(renderable, end="")
        return buffer.getvalue()

    def markdown(self, text: str) -> str:
        return self.render(Markdown(text, code_theme="ansi_dark"))

    def styled(self, text: str, style: str) -> str:
        return self.render(Text(text, style=style))


def thinking_text(painter: Painter, thinking: str, *, expanded: bool, hint: str = "Ctrl-T to expand") -> str:
    """Thinking dimmed; folded to one line unless ``expanded`` (Ctrl-T toggles). ``hint`` says
    how to read the rest: Ctrl-T where the toggle redraws it, Ctrl-O in the scrollback."""
    thinking = thinking.strip()
    if not thinking:
        return ""
    if expanded:
        return painter.styled(thinking, "dim italic")
    words = len(thinking.split())
    first = thinking.splitlines()[0]
    if len(first) > painter.width - 40:
        first = first[: max(10, painter.width - 43)] + "..."
    return painter.styled(f"▸ thinking ({words} words): {first}  [{hint}]", "dim italic")


def format_args(args: object, limit: int = 200) -> str:
    """Tool arguments as a compact ``key=value`` line (long values cut)."""
    if isinstance(args, Mapping):
        parts: list[str] = []
        for key, value in cast(Mapping[str, Any], args).items():
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
            shown = shown.replace("\n", "⏎")
            if len(shown) > 80:
                shown = shown[:77] + "..."
            parts.append(f"{key}={shown}")
        text = " ".join(parts)
    else:
        text = json.dumps(args, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def tool_header(painter: Painter, name: str, args: object, state: str) -> str:
    """``⚙ name key=value`` with a state mark: running, ok or error."""
    mark, style = {"running": ("…", "yellow"), "ok": ("✓", "green"), "error": ("✗", "red")}[state]
    line = Text()
    line.append(f"{mark} ", style=style)
    line.append(name, style="bold cyan")
    line.append(" " + format_args(args), style="cyan")
    return painter.render(line)


def result_text(content: Sequence[Mapping[str, Any]]) -> str:
    parts: list[str] = []
    for block in content:
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "image":
            parts.append(f"[image {block.get('mimeType', '')}]")
    return "\n".join(parts).rstrip("\n")


def tool_result(painter: Painter, text: str, *, is_error: bool, expanded: bool) -> str:
    """A tool's result, indented; folded to ``FOLDED_LINES`` lines unless ``expanded``."""
    lines = text.splitlines() or ["(no output)"]
    hidden = 0 if expanded else max(0, len(lines) - FOLDED_LINES)
    shown = lines if hidden == 0 else lines[:FOLDED_LINES]
    style = "red" if is_error else "dim"
    body = Text()
    for line in shown:
        body.append("  │ " + line + "\n", style=style)
    if hidden:
        body.append(f"  └ … {hidden} more lines  [Ctrl-O to expand]\n", style="dim italic")
    return painter.render(body).rstrip("\n")


def shell_run(painter: Painter, message: Mapping[str, Any], *, expanded: bool) -> str:
    """A ``!command`` / ``$code`` run: the source line (red when it failed) and its output."""
    shell = message.get("role") == "bashExecution"
    source = str(message.get("command") if shell else message.get("code"))
    exit_code = message.get("exitCode")
    failed = exit_code not in (0, None) or bool(message.get("cancelled"))
    status = f"  (exit {exit_code})" if exit_code not in (0, None) else ""
    kept_out = "  [not sent to the model]" if message.get("excludeFromContext") else ""
    mark = "!" if shell else "$"
    header = painter.styled(f"{mark} {source}{status}{kept_out}", "bold red" if failed else "bold")
    output = str(message.get("output", ""))
    return header + "\n" + tool_result(painter, output, is_error=failed, expanded=expanded)


def message_text(message: Mapping[str, Any]) -> str:
    """A user message's text on one line (images as ``[image]``)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    blocks = cast(list[Mapping[str, Any]], content or [])
    return " ".join(str(b.get("text", "[image]")) for b in blocks)


def error_text(painter: Painter, message: str, *, aborted: bool) -> str:
    if aborted:
        return painter.styled("⏹ Aborted", "bold yellow")
    return painter.styled(f"✗ Error: {message}", "bold red")


def user_text(painter: Painter, text: str) -> str:
    line = Text()
    line.append("› ", style="bold magenta")
    line.append(text, style="bold")
    return painter.render(line)


def tail_lines(text: str, limit: int) -> str:
    """The last ``limit`` lines: the live view must fit the screen."""
    lines = text.split("\n")
    return text if len(lines) <= limit else "\n".join(lines[-limit:])
