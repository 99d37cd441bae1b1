"""Answers' markdown as pi shows it, on top of rich's renderer.

Three differences from rich's defaults, each what a reader of a model's answer expects:

- A single line break stays a line break (rich, like a web page, joins the lines of a
  paragraph: 300 lines of command output in an answer became one wrapped paragraph).
- A fenced code block keeps its fence lines (with the language) around the highlighted code, so
  it can be seen where code starts and ends and copied as markdown.
- Headings are left-aligned (rich centres a level-1 heading) and keep their ``#`` marks, so
  their level shows without colour too.

And one safeguard: markdown-it stops parsing a block nested 20 levels deep (``maxNesting``), and
what is below is dropped: the items of a list more than nine levels deep, the text of a quote
twenty levels deep, vanished from the screen without a sign. Such an answer is shown as its
source text instead.
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


class AnswerMarkdown(Markdown):
    elements: ClassVar[dict[str, type[MarkdownElement]]] = {
        **Markdown.elements,
        "heading_open": _LeftHeading,
        "fence": _FencedCode,
        "code_block": _FencedCode,
    }

    def __init__(self, markup: str, code_theme: str = "ansi_dark") -> None:
        super().__init__(markup, code_theme=code_theme)
        self.too_deep = any(token.level >= _MAX_NESTING - 1 for token in self.parsed)
        _keep_line_breaks(self.parsed)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.too_deep:
            yield Text(self.markup)
        else:
            yield from super().__rich_console__(console, options)


_MAX_NESTING = 20
"""markdown-it's ``maxNesting`` in the (commonmark) parser rich makes: a block reaching it may
have lost what was nested below."""


def _keep_line_breaks(tokens: list[Token]) -> None:
    for token in tokens:
        for child in token.children or ():
            if child.type == "softbreak":
                child.type = "hardbreak"
