"""Text to safe HTML: markdown, highlighted code and coloured diffs, for pages that show a session
(``export_html``'s page now, a ``tether serve`` web page later).

Everything a conversation holds is untrusted: a model can be asked to write ``<script>``. So the
markdown renderer runs with raw HTML off (tags come out as text), images off (a page must open
offline and fetch nothing: a remote image would also tell its server who read the page) and
markdown-it's own link check (no ``javascript:`` links); code goes through Pygments, which escapes
what it highlights. Both libraries come with rich, which the CLI already needs.
"""

from __future__ import annotations

import html
from collections.abc import Generator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

CODE_CLASS = "hl"
"""The CSS class of highlighted code; ``code_css`` styles it."""

HIGHLIGHT_MAX_CHARS = 100_000
"""Longer code is shown as plain text: Pygments colours about 100 kB a second, so a written
1 MB file took ten seconds of a page (``tether export``, and every render of ``tether serve``'s
page of that session); a file that long is not read for its colours."""

HIGHLIGHT_PAGE_CHARS = 5 * HIGHLIGHT_MAX_CHARS
"""Code a page colours in all (``highlight_budget``), about five seconds of Pygments: the cap
per block left a page of many blocks unbounded (fifty written files of 90 kB each were fifty
blocks under it, 4.5 MB coloured on every render). Blocks are coloured in page order while the
page's budget holds each whole; a block that would overrun it, and every later one it cannot
hold, is plain text (as a block over ``HIGHLIGHT_MAX_CHARS`` is), so what a page costs is
bounded, and it costs it in its first blocks."""

_budget: ContextVar[list[int] | None] = ContextVar("tether_highlight_budget", default=None)
"""The characters the page being made may still colour (``highlight_budget``); ``None``: code
outside a page, bounded per block only."""


@contextmanager
def highlight_budget(chars: int | None = None) -> Generator[None]:
    """Within it, code blocks colour ``chars`` characters in all (default
    ``HIGHLIGHT_PAGE_CHARS``, read when entered); past them, code is plain text. A context
    variable, as markdown-it's highlight callback takes only the code: one page's blocks share
    one budget, pages made at once in other threads have their own."""
    token = _budget.set([HIGHLIGHT_PAGE_CHARS if chars is None else chars])
    try:
        yield
    finally:
        _budget.reset(token)


@cache
def _markdown() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable("table").enable("strikethrough").disable("image")
    md.options["highlight"] = _highlight_fence
    return md


def _highlight_fence(code: str, language: str, _attrs: object) -> str:
    return code_block(code, language or None)


def markdown(text: str) -> str:
    """``text`` rendered as markdown (see the module docstring for what is left out)."""
    return _markdown().render(text)


def _pygments(module: str = "") -> Any:
    """Pygments or one of its modules, loaded when a page is made (its stubs leave options
    untyped, so it is used untyped)."""
    import importlib

    return importlib.import_module(f"pygments.{module}" if module else "pygments")


def _lexer(language: str | None, filename: str | None, code: str) -> Any:
    lexers = _pygments("lexers")
    try:
        if language:
            return lexers.get_lexer_by_name(language)
        if filename:
            return lexers.get_lexer_for_filename(filename, code)
    except _pygments("util").ClassNotFound:
        return None
    return None


def code_block(code: str, language: str | None = None, *, filename: str | None = None) -> str:
    """``code`` highlighted for ``language`` (or by ``filename``) in ``<pre class="hl"><code>``
    (markdown-it keeps a highlighted fence that comes wrapped); plain escaped text when neither
    names a known lexer, or the code is longer than ``HIGHLIGHT_MAX_CHARS`` or what is left of
    the page's ``highlight_budget`` (a diff fence is marked line by line, at no Pygments cost,
    past them too)."""
    left = _budget.get()
    diff = language in _DIFF_LANGUAGES  # marked whatever the budget left: no Pygments to spend on
    affordable = not diff and len(code) <= HIGHLIGHT_MAX_CHARS and (left is None or len(code) <= left[0])
    lexer = _lexer(language, filename, code) if affordable else None
    inner: str
    if diff or (lexer is not None and lexer.name == "Diff"):
        inner = diff_lines(code)
    elif lexer is not None:
        if left is not None:
            left[0] -= len(code)
        formatter = _pygments("formatters").HtmlFormatter(nowrap=True)
        inner = str(_pygments().highlight(code, lexer, formatter))
    else:
        inner = html.escape(code)
    return f'<pre class="{CODE_CLASS}"><code>{inner}</code></pre>'


_DIFF_LANGUAGES = frozenset(("diff", "udiff", "patch"))
"""A fence's languages marked as a diff whatever the page's highlight budget left."""


def diff_lines(diff: str) -> str:
    """A unified diff, each line escaped and marked: added green, removed red, hunks blue."""
    out: list[str] = []
    for line in diff.splitlines(keepends=True):
        css = ""
        if line.startswith(("+++", "---")):
            css = "diff-file"
        elif line.startswith("+"):
            css = "diff-add"
        elif line.startswith("-"):
            css = "diff-del"
        elif line.startswith("@@"):
            css = "diff-hunk"
        text = html.escape(line)
        out.append(f'<span class="{css}">{text}</span>' if css else text)
    return "".join(out)


def looks_like_diff(text: str) -> bool:
    """Whether a tool's text output is a unified diff (what the edit tool returns)."""
    lines = text.splitlines()
    return any(line.startswith("@@ ") for line in lines) and any(
        line.startswith(("+", "-")) for line in lines
    )


def code_css(*, dark: bool = False) -> str:
    """The styles of highlighted code and diffs (Pygments' default theme, or its ``native`` one
    for a dark page, scoped); the diff's colours are the page's ``--diff-add``/``--diff-del``."""
    formatter = _pygments("formatters").HtmlFormatter(style="native" if dark else "default")
    return str(formatter.get_style_defs(f".{CODE_CLASS}")) + (
        "\n.diff-add { color: var(--diff-add, #116329); background: var(--diff-add-bg, #dafbe1); }"
        "\n.diff-del { color: var(--diff-del, #82071e); background: var(--diff-del-bg, #ffebe9); }"
        "\n.diff-hunk { color: var(--accent, #0550ae); } .diff-file { font-weight: bold; }"
    )
