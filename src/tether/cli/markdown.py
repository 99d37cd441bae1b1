"""Answers' markdown as pi shows it, on top of rich's renderer.

Three differences from rich's defaults, each what a reader of a model's answer expects:

- A single line break stays a line break (rich, like a web page, joins the lines of a
  paragraph: 300 lines of command output in an answer became one wrapped paragraph).
- A fenced code block keeps its fence lines (with the language) around the highlighted code, so
  it can be seen where code starts and ends and copied as markdown.
- Headings are left-aligned (rich centres a level-1 heading) and keep their ``#`` marks, so
  their level shows without colour too.

And two safeguards:

- markdown-it stops parsing a block nested 20 levels deep (``maxNesting``), and what is below is
  dropped: the items of a list more than nine levels deep, the text of a quote twenty levels
  deep, vanished from the screen without a sign. Such an answer is shown as its source text.
- rich lays out a table at about 0.2 ms a cell, all of it before the first row is shown: a
  model's table of 20,000 rows froze the screen for 16 s when its answer ended. A table of more
  than ``TABLE_CELLS`` cells is shown as its source lines (every row still there, readable and
  copyable as markdown), with a note saying why; the rest of the answer stays markdown.
"""

from __future__ import annotations

from typing import ClassVar

from markdown_it.token import Token
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import CodeBlock, Heading, Markdown, MarkdownElement
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
        yield Text(self.source)
        yield Text(f"(a table of {self.rows:,} rows, shown as written)", style="muted")


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
