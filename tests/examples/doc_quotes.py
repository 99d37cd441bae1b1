"""What the docs-quote-examples tests share: a guide's code blocks, and where each is quoted from."""

from __future__ import annotations

import re
from pathlib import Path


def code_blocks(guide: Path, language: str) -> list[str]:
    """The fenced ```LANGUAGE blocks of ``guide``, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```$", guide.read_text(encoding="utf-8"), re.S | re.M)


def quoted_from(block: str, examples: Path) -> list[str]:
    """The ``*.py`` files of ``examples`` holding ``block`` as consecutive whole lines."""
    lines = block.rstrip("\n").split("\n")
    found: list[str] = []
    for path in sorted(examples.glob("*.py")):
        source = path.read_text(encoding="utf-8").split("\n")
        if any(source[i : i + len(lines)] == lines for i in range(len(source) - len(lines) + 1)):
            found.append(path.name)
    return found
