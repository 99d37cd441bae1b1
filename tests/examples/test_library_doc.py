"""``docs/library.md`` quotes the example programs instead of carrying code of its own: every
```python block must be a run of whole lines of one file in ``examples/``, which
``test_examples.py`` runs. So an example changed without its quote (or the reverse) fails here,
and the guide's code is always code that ran."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "library.md"
EXAMPLES = ROOT / "examples"


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", GUIDE.read_text(encoding="utf-8"), re.S | re.M)


def quoted_from(block: str) -> list[str]:
    """The example files holding ``block`` as consecutive whole lines."""
    lines = block.rstrip("\n").split("\n")
    found: list[str] = []
    for path in sorted(EXAMPLES.glob("*.py")):
        source = path.read_text(encoding="utf-8").split("\n")
        if any(source[i : i + len(lines)] == lines for i in range(len(source) - len(lines) + 1)):
            found.append(path.name)
    return found


PYTHON_BLOCKS = blocks("python")


def test_the_guide_has_code() -> None:
    assert len(PYTHON_BLOCKS) >= 7


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[b.split("\n")[0].strip()[:40] for b in PYTHON_BLOCKS])
def test_each_python_block_is_quoted_from_an_example(block: str) -> None:
    assert quoted_from(block), f"not a run of lines of any examples/*.py:\n{block}"


def test_the_guide_names_every_example() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    assert [p.name for p in sorted(EXAMPLES.glob("*.py")) if f"examples/{p.name}" not in text] == []


def test_the_models_json_in_the_guide_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tether.ai.models import ModelRegistry

    [document] = blocks("json")
    config = tmp_path / "config"
    config.mkdir()
    (config / "models.json").write_text(document)
    monkeypatch.setenv("TETHER_HOME", str(tmp_path))
    model = ModelRegistry().find_model("workstation/qwen3-coder-30b")
    assert (model["baseUrl"], model["contextWindow"]) == ("http://192.168.1.20:8080/v1", 32768)
    assert json.loads(document)["providers"]["workstation"]["api"] == model["api"]
