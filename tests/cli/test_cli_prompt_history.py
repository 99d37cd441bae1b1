"""The interactive prompt's history file (``tether.cli.prompt_history``): read from its end."""

from __future__ import annotations

from pathlib import Path

import pytest
from prompt_toolkit.history import FileHistory

from tether.cli.prompt_history import prompt_history


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path))


def _entry(text: str) -> str:
    return "\n# 2026-01-01 00:00:00\n" + "".join(f"+{line}\n" for line in text.split("\n"))


def test_a_huge_history_is_read_from_its_last_megabyte(tmp_path: Path) -> None:
    """prompt_toolkit's FileHistory read the file whole, at every start: a history grown for
    years (or 1 GB put there) took that memory and time. The entry cut at the limit is left out."""
    count = 3 * (1 << 20) // 40  # 3 MB
    (tmp_path / "data").mkdir()
    path = tmp_path / "data" / "prompt-history"
    path.write_text("".join(_entry(f"prompt {i}\nits second line") for i in range(count)))
    history, warning = prompt_history()
    strings = list(history.load_history_strings())
    assert warning is None and 0 < len(strings) < count / 2
    newest = count - 1
    assert strings == [f"prompt {i}\nits second line" for i in range(newest, newest - len(strings), -1)]


def test_a_small_history_is_read_as_prompt_toolkit_reads_it(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    path = tmp_path / "data" / "prompt-history"
    path.write_text(_entry("one") + _entry("two\r\nlines\x0c") + _entry("é") + "junk\n" + _entry(""))
    history, _ = prompt_history()
    assert list(history.load_history_strings()) == list(FileHistory(str(path)).load_history_strings())
    assert list(history.load_history_strings()) == ["", "é", "two\r\nlines\x0c", "one"]
