"""``docs/library.md`` quotes the example programs instead of carrying code of its own: every
```python block must be a run of whole lines of one file in ``examples/``, which
``test_examples.py`` runs. So an example changed without its quote (or the reverse) fails here,
and the guide's code is always code that ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from doc_quotes import code_blocks, quoted_from

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "library.md"
EXAMPLES = ROOT / "examples"


PYTHON_BLOCKS = code_blocks(GUIDE, "python")


def test_the_guide_has_code() -> None:
    assert len(PYTHON_BLOCKS) >= 7


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[b.split("\n")[0].strip()[:40] for b in PYTHON_BLOCKS])
def test_each_python_block_is_quoted_from_an_example(block: str) -> None:
    assert quoted_from(block, EXAMPLES), f"not a run of lines of any examples/*.py:\n{block}"


def test_the_guide_names_every_example() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    assert [p.name for p in sorted(EXAMPLES.glob("*.py")) if f"examples/{p.name}" not in text] == []


def test_the_models_json_in_the_guide_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tether.ai.models import ModelRegistry

    [document] = code_blocks(GUIDE, "json")
    config = tmp_path / "config"
    config.mkdir()
    (config / "models.json").write_text(document)
    monkeypatch.setenv("TETHER_HOME", str(tmp_path))
    model = ModelRegistry().find_model("workstation/qwen3-coder-30b")
    assert (model["baseUrl"], model["contextWindow"]) == ("http://192.168.1.20:8080/v1", 32768)
    assert json.loads(document)["providers"]["workstation"]["api"] == model["api"]
