"""Turning transcript pieces into terminal text (ANSI) for the interactive mode.

Everything here is a pure function of its inputs and a ``Painter`` (width + colour choice), so
the same code renders the live (still streaming) view and the final scrollback, and tests can
check it without a terminal. Rich does the markdown; colour is dropped entirely when the user
set ``NO_COLOR`` or the output is not a terminal.

Every text from elsewhere (the model's answer, thinking, tool names and arguments, a tool's
output, an error a server sent, a session's name) goes through ``safe_text`` before rich lays it
out: the scrollback is written raw, and rich keeps ESC, so ``\\x1b]52;c;...\\x07`` in a file read
set the clipboard and ``\\x1b]2;...\\x07`` in an answer the window title. ``Painter.styled`` and
``Painter.markdown`` do it for their text; the functions building ``Text`` here for theirs.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, cast

from rich.cells import cell_len, set_cell_size
from rich.console import Console, RenderableType
from rich.text import Text

from tether.cli.markdown import answer_markdown
from tether.cli.terminal_text import visible
from tether.cli.themes import DARK, Theme

FOLDED_LINES = 4
"""Lines of a tool result shown before it is folded."""
FOLDED_DIFF_LINES = 20
"""Lines of an edit's diff shown before it is folded: the diff is what a reader checks."""
FOLDED_LINE_ROWS = 3
"""Rows one line of a folded result or diff may take: a command's one line of 1 MB was 10,000
rows of scrollback (and a second of laying out) under a result "folded to 4 lines"."""
WORD_DIFF_LIMIT = 200 * 200
"""The most (words of a removed line) x (words of the added one) compared for their changed
words: the comparison is quadratic, and an edit of a 59,000-character line (minified code) took
121 s, the screen frozen; a longer pair is shown in its colour without the words marked."""


def safe_text(text: str) -> str:
    """``text`` as the terminal may get it: control characters escaped (``terminal_text``), a
    CRLF line end (Windows files, some commands' output) a plain one rather than a ``\\x0d``."""
    return visible(text.replace("\r\n", "\n") if "\r" in text else text)


@dataclass(frozen=True, slots=True)
class Painter:
    """Renders with ``theme``: styles here are its role names (``error``, ``tool.title`` …)."""

    width: int
    color: bool
    theme: Theme = DARK

    def render(self, renderable: RenderableType) -> str:
        buffer = io.StringIO()
        console = Console(
            file=buffer,
            width=self.width,
            force_terminal=self.color,
            no_color=not self.color,
            color_system=cast(Any, self.theme.color_system) if self.color else None,
            highlight=False,
            soft_wrap=False,
            theme=self.theme.rich,
        )
        console.print(renderable, end="")
        return buffer.getvalue()

    def markdown(self, text: str) -> str:
        return self.render(answer_markdown(safe_text(text), self.theme.code_theme))

    def styled(self, text: str, style: str) -> str:
        return self.render(Text(safe_text(text), style=style))


P = ParamSpec("P")
Item = Callable[[Painter], str]
"""Something printed above the interactive mode's live area, as its text for a ``Painter``: kept
so, it is drawn again at a new width (``scrollback``)."""


def item(function: Callable[Concatenate[Painter, P], str], *args: P.args, **kwargs: P.kwargs) -> Item:
    """``function(painter, *args, **kwargs)`` as an ``Item``, its arguments taken now (an
    exception's ``exc`` is gone once its ``except`` block ends)."""
    return lambda painter: function(painter, *args, **kwargs)


def note(text: str, style: str) -> Item:
    """``text`` in ``style`` (``Painter.styled``) as an ``Item``."""
    return item(Painter.styled, text, style)


def thinking_text(painter: Painter, thinking: str, *, expanded: bool, hint: str = "Ctrl-T to expand") -> str:
    """Thinking dimmed; folded to one line unless ``expanded`` (Ctrl-T toggles). ``hint`` says
    how to read the rest: Ctrl-T where the toggle redraws it, Ctrl-O in the scrollback."""
    thinking = thinking.strip()
    if not thinking:
        return ""
    if expanded:
        return painter.styled(thinking, "muted.italic")
    return _folded_thinking(painter, len(thinking.split()), thinking.splitlines()[0], hint)


def thinking_item(thinking: str, *, expanded: bool, hint: str) -> Item:
    """``thinking_text`` as the scrollback keeps it: folded, the word count and the first line's
    beginning (drawn again exactly up to ``KEPT_WIDTH`` columns), not the whole thinking."""
    thinking = thinking.strip()
    if expanded or not thinking:
        return item(thinking_text, thinking, expanded=expanded, hint=hint)
    return item(_folded_thinking, len(thinking.split()), thinking.splitlines()[0][:KEPT_WIDTH], hint)


def _folded_thinking(painter: Painter, words: int, first: str, hint: str) -> str:
    if len(first) > painter.width - 40:
        first = first[: max(10, painter.width - 43)] + "..."
    return painter.styled(f"▸ thinking ({words} words): {first}  [{hint}]", "muted.italic")


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
    return _header(painter, name, format_args(args), state)


def running_item(name: str, args: object) -> Item:
    """``tool_header`` of a call still running (or never answered) as the scrollback keeps it:
    its arguments' line, not the arguments (a ``write``'s whole content)."""
    return item(_header, name, format_args(args), "running")


def _header(painter: Painter, name: str, args: str, state: str) -> str:
    mark, style = {"running": ("…", "warning"), "ok": ("✓", "success"), "error": ("✗", "error")}[state]
    line = Text()
    line.append(f"{mark} ", style=style)
    line.append(safe_text(name), style="tool.title")
    line.append(" " + safe_text(args), style="tool.args")
    return painter.render(line)


def result_text(content: Sequence[Mapping[str, Any]]) -> str:
    parts: list[str] = []
    for block in content:
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "image":
            parts.append(f"[image {block.get('mimeType', '')}]")
    return "\n".join(parts).rstrip("\n")


KEPT_WIDTH = 500
"""The widest terminal a folded result kept in the scrollback is drawn again at exactly (a 4K
screen's width in a small font); wider, its long lines are cut where 500 columns cut them."""


@dataclass(frozen=True, slots=True)
class Shown:
    """The lines of a result or diff as its view shows them: all of them (expanded), or ``folded``:
    the first few, each to be cut to ``FOLDED_LINE_ROWS`` rows of the width, and the count of the
    rest. A folded one keeps of each line no more than ``KEPT_WIDTH`` columns can show: it is what
    the scrollback keeps to draw again at a new width, where a tool's whole result (50 KB, an
    image) was kept for each of up to 2,000 rows (``FinishedTool``)."""

    lines: tuple[str, ...]
    hidden: int = 0
    folded: bool = False


def _shown_lines(lines: Sequence[str], count: int, *, expanded: bool) -> Shown:
    """``lines`` all (``expanded``), else the first ``count``, each cut a character beyond what
    ``_folded_line`` reads at ``KEPT_WIDTH`` (so cut there too, ``…`` and all)."""
    if expanded:
        return Shown(tuple(lines))
    keep = 4 * FOLDED_LINE_ROWS * (KEPT_WIDTH - 4) + 1
    return Shown(tuple(line[:keep] for line in lines[:count]), max(0, len(lines) - count), folded=True)


def result_lines(text: str, *, expanded: bool) -> Shown:
    """A tool's result or a command's output as shown: folded to ``FOLDED_LINES`` lines unless
    ``expanded``."""
    return _shown_lines(safe_text(text).splitlines() or ["(no output)"], FOLDED_LINES, expanded=expanded)


def tool_result(painter: Painter, result: Shown, *, is_error: bool) -> str:
    """``result``'s lines (``result_lines``) indented, what is folded away counted."""
    shown = _drawn(painter, result)
    style = "error" if is_error else "muted"
    body = Text()
    for line in shown:
        body.append("  │ " + line + "\n", style=style)
    if result.hidden:
        body.append(f"  └ … {result.hidden} more lines  [Ctrl-O to expand]\n", style="muted.italic")
    elif list(shown) != list(result.lines):
        body.append("  └ … long lines cut  [Ctrl-O to expand]\n", style="muted.italic")
    return painter.render(body).rstrip("\n")


def _drawn(painter: Painter, shown: Shown) -> Sequence[str]:
    """``shown``'s lines as drawn: a folded one's cut to its rows of the terminal's width, at most
    ``KEPT_WIDTH`` (beyond it a kept line would end where it was kept, without its ``…``)."""
    if not shown.folded:
        return shown.lines
    width = min(painter.width, KEPT_WIDTH)
    return [_folded_line(line, width) for line in shown.lines]


def _folded_line(line: str, width: int) -> str:
    """``line`` cut to ``FOLDED_LINE_ROWS`` rows of the indented result, ending in ``…`` when cut."""
    cells = FOLDED_LINE_ROWS * max(width - 4, 1)
    head = line[: 4 * cells]  # enough characters to fill the rows (combining marks take none)
    if len(head) == len(line) and cell_len(head) <= cells:
        return line
    return set_cell_size(head, cells - 1).rstrip() + "…"


@dataclass(frozen=True, slots=True)
class FinishedTool:
    """A finished tool call as shown: its line (name, arguments, ok or error), then its result,
    or an edit's summary line and coloured diff. Only what is shown is kept (``Shown``): the
    scrollback keeps it as an ``Item`` to draw again, not the tool's result."""

    name: str
    args: str
    is_error: bool
    summary: str | None
    """An edit's first result line, shown above its diff; ``None``: ``body`` is the result."""
    body: Shown

    @classmethod
    def of(cls, name: str, args: object, result: Mapping[str, Any], *, expanded: bool) -> FinishedTool:
        is_error = bool(result.get("isError"))
        details = result.get("details")
        diff = cast(Mapping[str, Any], details).get("diff") if isinstance(details, Mapping) else None
        text = result_text(cast(list[dict[str, Any]], result.get("content") or []))
        if isinstance(diff, str) and diff and not is_error:
            summary, body = text.split("\n", 1)[0], diff_lines(diff, expanded=expanded)
        else:
            summary, body = None, result_lines(text, expanded=expanded)
        return cls(name, format_args(args), is_error, summary, body)

    def __call__(self, painter: Painter) -> str:
        header = _header(painter, self.name, self.args, "error" if self.is_error else "ok")
        if self.summary is None:
            return header + "\n" + tool_result(painter, self.body, is_error=self.is_error)
        summary = painter.styled("  │ " + self.summary, "muted") if self.summary else ""
        return "\n".join(p for p in (header, summary, diff_text(painter, self.body)) if p)


def finished_tool(
    painter: Painter, name: str, args: object, result: Mapping[str, Any], *, expanded: bool
) -> str:
    """A finished tool call: its header, then its result; an edit's diff coloured (``diff_text``)."""
    return FinishedTool.of(name, args, result, expanded=expanded)(painter)


def diff_lines(diff: str, *, expanded: bool) -> Shown:
    """A unified diff's lines as shown, the file header dropped (the tool line names the file);
    folded after ``FOLDED_DIFF_LINES`` lines unless ``expanded``."""
    lines = [line for line in safe_text(diff).splitlines() if not line.startswith(("--- ", "+++ "))]
    return _shown_lines(lines, FOLDED_DIFF_LINES, expanded=expanded)


def diff_text(painter: Painter, diff: Shown) -> str:
    """A diff (``diff_lines``) as pi shows an edit: removed lines red, added lines green, the
    words that changed between a removed line and the added line replacing it in reverse video;
    what is folded away counted."""
    shown = _drawn(painter, diff)
    body = Text()
    index = 0
    while index < len(shown):
        line = shown[index]
        if line.startswith("-"):
            removed = _run_of(shown, index, "-")
            added = _run_of(shown, index + len(removed), "+")
            pairs = min(len(removed), len(added))
            for n, old in enumerate(removed):
                _diff_line(body, "-", old[1:], added[n][1:] if n < pairs else None, "diff.removed")
            for n, new in enumerate(added):
                _diff_line(body, "+", new[1:], removed[n][1:] if n < pairs else None, "diff.added")
            index += len(removed) + len(added)
            continue
        if line.startswith("+"):
            body.append(f"  {line}\n", style="diff.added")
        elif line.startswith("@@"):
            body.append(f"  {line}\n", style="diff.hunk")
        else:
            body.append(f"  {line}\n", style="diff.context")
        index += 1
    if diff.hidden:
        body.append(f"  └ … {diff.hidden} more lines  [Ctrl-O to expand]\n", style="muted.italic")
    return painter.render(body).rstrip("\n")


def _run_of(lines: Sequence[str], start: int, mark: str) -> list[str]:
    end = start
    while end < len(lines) and lines[end].startswith(mark):
        end += 1
    return list(lines[start:end])


def _diff_line(body: Text, mark: str, text: str, other: str | None, style: str) -> None:
    """One removed or added line; with ``other`` (the line it pairs with), the words that differ
    from it marked."""
    import difflib

    body.append(f"  {mark}", style=style)
    if other is None:
        body.append(text + "\n", style=style)
        return
    mine, theirs = re.findall(r"\w+|\W", text), re.findall(r"\w+|\W", other)
    if len(mine) * len(theirs) > WORD_DIFF_LIMIT:
        body.append(text + "\n", style=style)
        return
    matcher = difflib.SequenceMatcher(None, mine, theirs, autojunk=False)
    for tag, start, end, _, _ in matcher.get_opcodes():
        piece = "".join(mine[start:end])
        body.append(piece, style=style)
        if tag != "equal":  # the changed words: reversed on top of the line's colour
            body.stylize("bold reverse", len(body) - len(piece), len(body))
    body.append("\n")


def shell_run(painter: Painter, message: Mapping[str, Any], *, expanded: bool) -> str:
    """A ``!command`` / ``$code`` run: the source line (red when it failed) and its output."""
    return _shell_run(painter, message, result_lines(str(message.get("output", "")), expanded=expanded))


def shell_item(message: Mapping[str, Any], *, expanded: bool) -> Item:
    """``shell_run`` as the scrollback keeps it: the source line's fields and the output's lines
    shown (``result_lines``), not the whole output."""
    output = result_lines(str(message.get("output", "")), expanded=expanded)
    run = _only(message, "role", "command", "code", "exitCode", "cancelled", "excludeFromContext")
    return lambda painter: _shell_run(painter, run, output)


def _shell_run(painter: Painter, message: Mapping[str, Any], output: Shown) -> str:
    shell = message.get("role") == "bashExecution"
    source = str(message.get("command") if shell else message.get("code"))
    exit_code = message.get("exitCode")
    failed = exit_code not in (0, None) or bool(message.get("cancelled"))
    status = f"  (exit {exit_code})" if exit_code not in (0, None) else ""
    kept_out = "  [not sent to the model]" if message.get("excludeFromContext") else ""
    mark = "!" if shell else "$"
    header = painter.styled(f"{mark} {source}{status}{kept_out}", "error.strong" if failed else "strong")
    return header + "\n" + tool_result(painter, output, is_error=failed)


def message_text(message: Mapping[str, Any]) -> str:
    """A user message's text on one line (images as ``[image]``)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    blocks = cast(list[Mapping[str, Any]], content or [])
    return " ".join(str(b.get("text", "[image]")) for b in blocks)


def error_text(painter: Painter, message: str, *, aborted: bool) -> str:
    if aborted:
        return painter.styled("⏹ Aborted", "warning.strong")
    return painter.styled(f"✗ Error: {message}", "error.strong")


USER_LINES = 40
USER_CHARS = 4_000
"""The most lines, and characters, of a user message shown; the rest is counted in a note. pi
shows a large paste as its marker; a message stored with one is whole, and a resumed session
(or Ctrl-O) drew a 5 MB paste in full: 50,000 rows of scrollback, and seconds of laying out."""


def user_text(painter: Painter, text: str) -> str:
    """A user message after its mark, its beginning only when it is long (``USER_LINES``)."""
    return _user_drawn(painter, *_user_shown(text))


def user_item(text: str) -> Item:
    """``user_text`` as the scrollback keeps it: what it shows, not the whole message (a 5 MB
    paste was kept whole, for each of up to 2,000 rows, to show 4,000 characters of it)."""
    return item(_user_drawn, *_user_shown(text))


def _user_shown(text: str) -> tuple[str, str | None]:
    """The beginning ``user_text`` shows, and what it says of the rest (``None``: nothing left)."""
    head = _head(text)
    rest = text[len(head) :].rstrip()
    if not rest:
        return head, None
    lines = rest.count("\n")
    if not lines:
        return head, _counted(len(rest), "more character")
    if rest.startswith("\n"):
        return head, _counted(lines, "more line")
    return head, f"the rest of this line and {_counted(lines, 'more line')}"  # cut at USER_CHARS


def _user_drawn(painter: Painter, head: str, more: str | None) -> str:
    line = Text()
    line.append("› ", style="user.mark")
    line.append(safe_text(head), style="user.text")
    if more is not None:
        line.append(f"\n[… {more} not shown]", style="muted")
    return painter.render(line)


def _counted(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def _head(text: str) -> str:
    """The first ``USER_LINES`` lines of ``text``, of them no more than ``USER_CHARS`` characters."""
    cut = min(len(text), USER_CHARS)
    at = -1
    for _ in range(USER_LINES):
        at = text.find("\n", at + 1, cut)
        if at < 0:
            return text[:cut]
    return text[:at]


CustomRenderer = Callable[[Mapping[str, Any], bool], str | None]
"""The extensions' renderer of ``custom`` messages (``ExtensionHost.render_message``): given the
message and whether it is shown expanded, its text, or ``None`` for the default."""


def custom_message(
    painter: Painter, message: Mapping[str, Any], *, expanded: bool, custom: CustomRenderer | None
) -> str | None:
    """A message an extension sent (``api.send_message``), when it asked for it to be shown
    (``display``): its type as a header, then what its renderer made of it, else its text as
    markdown (pi's default). ``None``: not to be shown."""
    if not message.get("display", True):
        return None
    rendered = custom(message, expanded) if custom is not None else None
    header = painter.styled(f"[{message.get('customType', 'custom')}]", "muted")
    return header + "\n" + (rendered if rendered is not None else painter.markdown(message_text(message)))


def ended_message(
    painter: Painter, message: Mapping[str, Any], *, show_thinking: bool, custom: CustomRenderer | None = None
) -> list[str]:
    """What the scrollback gets when a message ends: an answer's thinking (folded unless shown)
    and text, and why it stopped if it failed; a shell run; the files an ``@`` attached; an
    extension's message (``custom`` renders it). Tool calls and user prompts are shown by their
    own events."""
    role = message.get("role")
    out: list[str] = []
    if role == "assistant":
        for block in cast(list[Mapping[str, Any]], message.get("content") or []):
            if block.get("type") == "thinking" and str(block.get("thinking", "")).strip():
                thinking = str(block["thinking"])
                out.append(thinking_text(painter, thinking, expanded=show_thinking, hint="Ctrl-O to read"))
            elif block.get("type") == "text" and str(block.get("text", "")).strip():
                out.append(painter.markdown(str(block["text"])))
        if message.get("stopReason") in ("error", "aborted"):
            aborted = message.get("stopReason") == "aborted"
            out.append(error_text(painter, str(message.get("errorMessage", "")), aborted=aborted))
    elif role in ("bashExecution", "pythonExecution"):
        out.append(shell_run(painter, message, expanded=False))
    elif role == "fileMention":
        for item in cast(list[Mapping[str, Any]], message.get("files") or []):
            note = f" (skipped: {item['skippedReason']})" if item.get("skippedReason") else ""
            out.append(painter.styled(f"@ attached {item.get('path', '?')}{note}", "muted"))
    elif role == "custom" and (shown := custom_message(painter, message, expanded=False, custom=custom)):
        out.append(shown)
    return out


def ended_item(message: Mapping[str, Any], *, show_thinking: bool, custom: CustomRenderer | None) -> Item:
    """``ended_message`` as an ``Item`` keeping only the parts of ``message`` it shows: an answer's
    text and thinking, not its tool calls' arguments; a shell run's folded output; the names of
    the files an ``@`` attached, not their contents. An extension's message is kept whole (its
    renderer may read any of it)."""
    role = message.get("role")
    if role in ("bashExecution", "pythonExecution"):
        return shell_item(message, expanded=False)
    if role == "assistant":
        blocks = cast(list[Mapping[str, Any]], message.get("content") or [])
        content = [_only(block, "type", "thinking", "text") for block in blocks]
        message = {**_only(message, "role", "stopReason", "errorMessage"), "content": content}
    elif role == "fileMention":
        files = cast(list[Mapping[str, Any]], message.get("files") or [])
        message = {"role": role, "files": [_only(file, "path", "skippedReason") for file in files]}
    elif role != "custom":
        return lambda painter: ""  # shown by its own event (a prompt, a tool's result)
    return lambda painter: "\n".join(
        ended_message(painter, message, show_thinking=show_thinking, custom=custom)
    )


def _only(record: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {key: record[key] for key in keys if key in record}


def compaction_report(painter: Painter, event: Mapping[str, Any]) -> str:
    """A ``compaction_end`` event as the scrollback shows it: what it saved and the summary folded
    to its first line (Ctrl-O reads it whole), or why nothing was compacted. The event carries
    ``result`` only when a compaction happened (pi's shape)."""
    result = cast(Mapping[str, Any] | None, event.get("result"))
    if result is None:
        if event.get("aborted"):
            return painter.styled("compaction stopped; nothing changed", "warning")
        return painter.styled(f"compaction: {event.get('errorMessage') or 'nothing to compact'}", "warning")
    before, after = result.get("tokensBefore"), result.get("tokensAfter")
    sizes = f" ({_tokens(before)} → {_tokens(after)} tokens)" if isinstance(after, int) else ""
    if isinstance(before, int) and not sizes:
        sizes = f" (from {_tokens(before)} tokens)"
    header = painter.styled(f"✓ compacted the conversation{sizes}", "success")
    summary = str(result.get("summary") or "").strip()
    if not summary:
        return header
    first = summary.splitlines()[0].lstrip("# ")
    if len(first) > painter.width - 30:
        first = first[: max(10, painter.width - 33)] + "..."
    words = len(summary.split())
    folded = painter.styled(f"▸ summary ({words} words): {first}  [Ctrl-O to read]", "muted.italic")
    return header + "\n" + folded


def _tokens(count: object) -> str:
    if not isinstance(count, int):
        return "?"
    return f"{count / 1000:.1f}k" if count >= 1000 else str(count)


def tail_lines(text: str, limit: int) -> str:
    """The last ``limit`` lines: the live view must fit the screen."""
    lines = text.split("\n")
    return text if len(lines) <= limit else "\n".join(lines[-limit:])


def live_area(
    painter: Painter,
    live: Mapping[str, Any] | None,
    tools: Iterable[tuple[str, object]],
    question: str | None,
    busy: bool,
    show_thinking: bool,
    rows: int,
) -> str:
    """The interactive mode's live area, its last ``rows`` lines: the answer streaming now
    (``live``), the tools running (name, arguments), a pending approval ``question``, or while
    ``busy`` with nothing to show, a line saying the agent works. Of a long answer (or expanded
    thinking) only the end that can be on screen is rendered (``live_source``)."""
    parts: list[str] = []
    for block in cast(list[dict[str, Any]], (live or {}).get("content", [])):
        kind = block.get("type")
        if kind == "thinking":
            thinking = block["thinking"]
            if show_thinking:
                thinking = live_source(thinking, rows, painter.width, markdown=False)
            parts.append(thinking_text(painter, thinking, expanded=show_thinking))
        elif kind == "text" and block["text"].strip():
            parts.append(painter.markdown(live_source(block["text"], rows, painter.width)))
        elif kind == "toolCall":
            parts.append(tool_header(painter, block["name"], block.get("arguments", {}), "running"))
    parts += [tool_header(painter, name, args, "running") for name, args in tools]
    if question is not None:
        parts.append(painter.styled(f"? {question}\n  allow? [y]es / [n]o / [a]lways", "warning.strong"))
    elif busy and not parts:
        parts.append(painter.styled("working… (Esc to abort)", "muted"))
    return tail_lines("\n".join(p for p in parts if p), rows)


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$", re.MULTILINE)


def live_source(text: str, rows: int, width: int, *, markdown: bool = True) -> str:
    """The end of a streaming ``text`` that fills at least ``rows`` lines ``width`` wide: its last
    ``2 * rows`` lines (twice: blank lines between blocks may merge), and of those no more than
    ``2 * rows * width`` characters.

    The live area is redrawn as the answer grows (up to 33 times a second); rendering all of it
    every time made each frame cost the answer's length (1.9 s a frame at 200,000 characters,
    the stream and Esc waiting behind it; 60 ms now, at any length). A code block open where the cut falls is opened again
    (``markdown``), so its end still shows as code; what else starts before the cut (a table's
    header) is missed until the answer ends and is rendered whole."""
    lowest = len(text) - 2 * rows * max(width, 1)
    if lowest <= 0:
        return text
    start = len(text)
    for _ in range(2 * rows):
        start = text.rfind("\n", lowest, start)
        if start < 0:
            start = lowest - 1
            break
    start += 1
    tail = text[start:]
    if not markdown:
        return tail
    fence: tuple[str, int, str] | None = None  # (mark, length, info) of the block open at start
    for match in _FENCE.finditer(text, 0, start):
        marks, rest = match.group(1), match.group(2)
        if fence is None:
            fence = (marks[0], len(marks), rest.strip())
        elif marks[0] == fence[0] and len(marks) >= fence[1] and not rest.strip():
            fence = None
    return tail if fence is None else f"{fence[0] * fence[1]}{fence[2]}\n{tail}"


def tool_end(name: str, args: object, event: Mapping[str, Any]) -> Item:
    """A ``tool_execution_end`` event as printed: the tool's line and its (folded) result, kept as
    shown (``FinishedTool``), not the event."""
    result = event.get("result")
    if not isinstance(result, Mapping):  # an AgentToolResult
        result = {"content": getattr(result, "content", None), "details": getattr(result, "details", None)}
    shown = {**cast(Mapping[str, Any], result), "isError": bool(event.get("isError"))}
    return FinishedTool.of(name, args, shown, expanded=False)
