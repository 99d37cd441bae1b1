"""``docs/extensions.md`` quotes the example extensions instead of carrying code of its own: every
```python block must be a run of whole lines of one file in ``examples/extensions/``, which the
CLI, RPC and ACP tests load. So an example changed without its quote (or the reverse) fails here."""

from __future__ import annotations

from pathlib import Path

import pytest
from doc_quotes import code_blocks, quoted_from

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "extensions.md"
EXAMPLES = ROOT / "examples" / "extensions"
BLOCKS = code_blocks(GUIDE, "python")


def test_the_guide_has_code() -> None:
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("block", BLOCKS, ids=[b.split("\n")[0].strip()[:40] for b in BLOCKS])
def test_each_python_block_is_quoted_from_an_example(block: str) -> None:
    assert quoted_from(block, EXAMPLES), f"not a run of lines of any examples/extensions/*.py:\n{block}"


def test_the_guide_names_every_example() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    missing = [p.name for p in sorted(EXAMPLES.glob("*.py")) if f"examples/extensions/{p.name}" not in text]
    assert missing == []
