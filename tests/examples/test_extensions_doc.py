"""``docs/extensions.md`` quotes the example extensions instead of carrying code of its own: every
```python block must be a run of whole lines of one file in ``examples/extensions/``, which the
CLI, RPC and ACP tests load. So an example changed without its quote (or the reverse) fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "extensions.md"
EXAMPLES = ROOT / "examples" / "extensions"
BLOCKS = re.findall(r"^```python\n(.*?)^```$", GUIDE.read_text(encoding="utf-8"), re.S | re.M)


def quoted_from(block: str) -> list[str]:
    lines = block.rstrip("\n").split("\n")
    found: list[str] = []
    for path in sorted(EXAMPLES.glob("*.py")):
        source = path.read_text(encoding="utf-8").split("\n")
        if any(source[i : i + len(lines)] == lines for i in range(len(source) - len(lines) + 1)):
            found.append(path.name)
    return found


def test_the_guide_has_code() -> None:
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("block", BLOCKS, ids=[b.split("\n")[0].strip()[:40] for b in BLOCKS])
def test_each_python_block_is_quoted_from_an_example(block: str) -> None:
    assert quoted_from(block), f"not a run of lines of any examples/extensions/*.py:\n{block}"


def test_the_guide_names_every_example() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    missing = [p.name for p in sorted(EXAMPLES.glob("*.py")) if f"examples/extensions/{p.name}" not in text]
    assert missing == []
