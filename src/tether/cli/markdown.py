"""Answers' markdown as pi shows it, on top of rich's renderer.

Three differences from rich's defaults, each what a reader of a model's answer expects:

- A single line break stays a line break (rich, like a web page, joins the lines of a
  paragraph: 300 lines of command output in an answer became one wrapped paragraph).
- A fenced code block keeps its fence lines (with the language) around the highlighted code, so
  it can be seen where code starts and ends and copied as markdown.
- Headings are left-aligned (rich centres a level-1 heading) and keep their ``#`` marks, so
  their level shows without colour too.

And three safeguards:

- markdown-it stops parsing a block nested 20 levels deep (``maxNesting``), and what is below is
  dropped: the items of a list more than nine levels deep, the text of a quote twenty levels
  deep, vanished from the screen without a sign. Such an answer is shown as its source text.
- rich lays out a table at about 0.2 ms a cell, all of it before the first row is shown: a
  model's table of 20,000 rows froze the screen for 16 s when its answer ended. A table of more
  than ``TABLE_CELLS`` cells is shown as its source lines (every row still there, readable and
  copyable as markdown), with a note saying why; the rest of the answer stays markdown. Such a
  table standing alone is cut out before markdown-it parses it (``answer_markdown``): parsing
  it cost more than laying the rest out.
- An answer too long to lay out (``MARKDOWN_CHARS``, ``MARKDOWN_LINES``) is shown as written,
  with a line saying why: one of 100,000 short lines froze the screen 31 s when it ended.
"""

from __future__ import annotations

import re
from typing import ClassVar

from markdown_it.token import Token
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.markdown import CodeBlock, Heading, Markdown, MarkdownElement
from rich.segment import Segment
from rich.syntax import Syntax
from rich.text import Text


class _LeftHeading(Heading):
    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        text = Text("#" * int(self.tag[1:]) + " ", style=self.style_name) + self.text
        text.justify = "left"
        yield text


class _FencedCode(CodeBlock):
    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        language = "" if self.lexer_name == "text" else self.lexer_name
        yield Text(f"```{language}", style="muted")
        yield Syntax(str(self.text).rstrip("\n"), self.lexer_name, theme=self.theme, word_wrap=True)
        yield Text("```", style="muted")


class _TableSource(MarkdownElement):
    """A table too big to lay out, as the lines it was written in."""

    def __init__(self, source: str, rows: int) -> None:
        self.source = source
        self.rows = rows

    @classmethod
    def create(cls, markdown: Markdown, token: Token) -> _TableSource:
        return cls(token.content, int(token.info))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from _as_written(self.source, options.max_width)
        yield Text(f"(a table of {self.rows:,} rows, shown as written)", style="muted")


class _LongSource:
    """Markdown too long to lay out (``MARKDOWN_CHARS``, ``MARKDOWN_LINES``), as it was written."""

    def __init__(self, source: str) -> None:
        self.source = source

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from _as_written(self.source, options.max_width)
        lines, size = self.source.count("\n") + 1, len(self.source)
        yield Text(
            f"({lines:,} lines, {size:,} characters: too long to lay out, shown as written)", style="muted"
        )


def _as_written(source: str, width: int) -> RenderResult:
    """``source``'s lines, each that fits as it is (no tab to expand, no wrapping) sent as it is:
    as one ``Text``, the source was word-wrapped line by line and then cut into lines again
    from one string (each cut copying the rest), 1.3 s for 20,000 rows of a table. An ASCII
    line's cells are its characters (``render.safe_text`` has escaped the control ones)."""
    for line in source.split("\n"):
        if "\t" in line or (len(line) > width if line.isascii() else cell_len(line) > width):
            yield Text(line)
        else:
            yield Segment(line)
            yield Segment.line()


def answer_markdown(markup: str, code_theme: str) -> RenderableType:
    """``markup`` for rich: ``AnswerMarkdown``, but a big table standing alone (``_cut_tables``)
    cut out before markdown-it sees it. Parsing a table costs as laying it out would not: 280,000
    tokens for 20,000 rows, 2.3 s (on an idle machine) when the answer ended, to be shown as
    its source anyway."""
    pieces = _cut_tables(markup)
    if pieces == [markup]:
        return _laid_out(markup, code_theme)
    shown: list[RenderableType] = []
    for piece in pieces:
        if shown:
            shown.append(Text(""))  # the blank line markdown puts between blocks
        if isinstance(piece, str):
            shown.append(_laid_out(piece, code_theme))
        else:
            shown.append(_TableSource(*piece))
    return Group(*shown)


def _laid_out(markup: str, code_theme: str) -> RenderableType:
    """``markup`` as markdown, or as it was written when too long to lay out (``MARKDOWN_CHARS``)."""
    if len(markup) > MARKDOWN_CHARS or markup.count("\n") >= MARKDOWN_LINES:
        return _LongSource(markup)
    return AnswerMarkdown(markup, code_theme)


MARKDOWN_CHARS = 50_000
"""The longest markdown laid out (beyond a big table, cut out before): rich's cost grows with the
length and faster with the lines (markdown-it and rich cut a paragraph's lines one by one, each
cut copying the rest), all of it on the event loop before a line shows, Esc waiting. An answer
of 690 KB in 100,000 short lines held the screen 31 s of CPU when it ended, one of 540 KB 8 s.
At this bound (about 12,000 tokens, longer than most answers) the slowest kind measured, code,
takes 0.65 s; prose 0.15 s. Longer, the answer is shown as written, with a line saying why."""
MARKDOWN_LINES = 5_000
"""The most lines of markdown laid out (``MARKDOWN_CHARS``): 5,000 list items take 0.7 s, 10,000
1.4 s, 25,000 one-letter lines 2.4 s, all under ``MARKDOWN_CHARS``."""


def _cut_tables(markup: str) -> list[str | tuple[str, int]]:
    """``markup`` as markdown pieces and, between them, each table of more than ``TABLE_CELLS``
    cells markdown-it would surely see as one at the top level: its lines and number of rows.
    Surely: its header at the start of a line after a blank one (or none), outside a fenced
    block; its delimiter row as markdown-it reads one, with as many columns; every row starting
    with ``|`` and no ``\\|`` in it; a blank line (or nothing) after it. Any other table is
    parsed, and shown as its source after that (``_big_tables_as_source``). An answer with a
    link reference definition is not cut (one piece would lose the other's references)."""
    if "|" not in markup or _REFERENCE.search(markup):
        return [markup]
    lines = markup.split("\n")
    pieces: list[str | tuple[str, int]] = []
    done = 0  # the first line not in a piece yet
    fence: tuple[str, int] | None = None
    at = 0
    while at < len(lines):
        line = lines[at]
        opened = _FENCE.match(line)
        if opened is not None:
            marks, rest = opened.group(1), opened.group(2)
            if fence is None:
                fence = (marks[0], len(marks))
            elif marks[0] == fence[0] and len(marks) >= fence[1] and not rest.strip():
                fence = None
        elif fence is None and (end := _table_end(lines, at)) is not None:
            columns = _columns(lines[at + 1])
            if columns * (end - at - 1) > TABLE_CELLS:
                if (before := "\n".join(lines[done:at])).strip():
                    pieces.append(before)
                pieces.append(("\n".join(lines[at:end]), end - at - 2))
                done = at = end
                continue
        at += 1
    if not pieces:
        return [markup]
    if (after := "\n".join(lines[done:])).strip():
        pieces.append(after)
    return pieces


def _table_end(lines: list[str], at: int) -> int | None:
    """Where the table whose header is ``lines[at]`` ends, if it surely is one (``_cut_tables``)."""
    header = lines[at]
    if (
        at + 1 >= len(lines)
        or not header.startswith("|")
        or (at > 0 and lines[at - 1].strip())
        or "\\|" in header
        or _DELIMITER.match(lines[at + 1]) is None
        or _columns(lines[at + 1]) != header.strip().strip("|").count("|") + 1
    ):
        return None
    end = at + 2
    while end < len(lines) and lines[end].startswith("|"):
        if "\\|" in lines[end]:
            return None
        end += 1
    return end if end == len(lines) or not lines[end].strip() else None


def _columns(delimiter: str) -> int:
    return delimiter.strip().strip("|").count("|") + 1


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_DELIMITER = re.compile(r"^\|? *:?-+:? *(\| *:?-+:? *)*\|? *$")
"""A delimiter row as markdown-it reads one (a ``-`` first and a space after it is a list)."""
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:", re.MULTILINE)


class AnswerMarkdown(Markdown):
    elements: ClassVar[dict[str, type[MarkdownElement]]] = {
        **Markdown.elements,
        "heading_open": _LeftHeading,
        "fence": _FencedCode,
        "code_block": _FencedCode,
        "table_source": _TableSource,
    }

    def __init__(self, markup: str, code_theme: str = "ansi_dark") -> None:
        super().__init__(markup, code_theme=code_theme)
        self.too_deep = any(token.level >= _MAX_NESTING - 1 for token in self.parsed)
        _keep_line_breaks(self.parsed)
        self.parsed = _big_tables_as_source(self.parsed, self.markup)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.too_deep:
            yield Text(self.markup)
        else:
            yield from super().__rich_console__(console, options)


_MAX_NESTING = 20
"""markdown-it's ``maxNesting`` in the (commonmark) parser rich makes: a block reaching it may
have lost what was nested below."""


TABLE_CELLS = 1_000
"""The most cells of a table laid out as one (about 0.2 s): 200 rows of 5 columns."""


def _big_tables_as_source(tokens: list[Token], markup: str) -> list[Token]:
    """``tokens`` with each table of more than ``TABLE_CELLS`` cells replaced by one
    ``table_source`` token carrying its source lines (markdown-it's ``map``)."""
    kept: list[Token] = []
    lines: list[str] | None = None
    start = 0
    cells = rows = 0
    for at, token in enumerate(tokens):
        if token.type == "table_open":
            start, cells, rows = at, 0, 0
        elif token.type in ("th_open", "td_open"):
            cells += 1
        elif token.type == "tr_open":
            rows += 1
        elif token.type == "table_close" and cells > TABLE_CELLS:
            opened = tokens[start]
            first, end = opened.map or (0, 0)
            lines = markup.split("\n") if lines is None else lines
            source = "\n".join(lines[first:end])
            del kept[len(kept) - (at - start) :]
            kept.append(Token("table_source", "", 0, content=source, info=str(rows - 1), level=opened.level))
            continue
        kept.append(token)
    return kept


def _keep_line_breaks(tokens: list[Token]) -> None:
    for token in tokens:
        for child in token.children or ():
            if child.type == "softbreak":
                child.type = "hardbreak"
