"""``@`` and ``/`` completion: the file index (git's listing or a walk, ``.gitignore``
respected, fuzzy ranking) and the command menu, without a terminal."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from tether.cli.completers import CommandCompleter, FileCompleter, rank
from tether.cli.file_index import FileIndex


def tree(root: Path, files: list[str]) -> None:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")


FILES = [
    "src/utils/helpers_config.py",
    "src/utils/other.py",
    "src/main.py",
    "docs/helping.md",
    "build/helpers_copy.py",
    "logs/helpers.log",
    "README.md",
]


@pytest.mark.parametrize("git", [True, False])
def test_index_respects_gitignore_and_ranks_names_then_paths_then_fuzzy(tmp_path: Path, git: bool) -> None:
    if git and shutil.which("git") is None:
        pytest.skip("git is not installed")
    tree(tmp_path, FILES)
    (tmp_path / ".gitignore").write_text("logs/\n*.log\n")
    if git:
        subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    index = FileIndex(tmp_path)
    index.start()
    assert index.wait(30)
    found = index.search("helpers")
    assert "src/utils/helpers_config.py" in found[:2]
    assert "logs/helpers.log" not in found  # ignored
    assert (
        "build/helpers_copy.py" in found if git else "build/helpers_copy.py" not in found
    )  # walk skips build/
    utils = index.search("utils/")
    assert utils[0] == "src/utils/" and set(utils[1:3]) == {
        "src/utils/helpers_config.py",
        "src/utils/other.py",
    }
    assert index.search("shcfg") == ["src/utils/helpers_config.py"]  # letters in order
    assert "docs/helping.md" in index.search("help")
    assert index.search("config")[0] == "src/utils/helpers_config.py"  # inside the name


def test_file_completer_replaces_the_whole_mention(tmp_path: Path) -> None:
    tree(tmp_path, FILES)
    index = FileIndex(tmp_path)
    index.start()
    assert index.wait(30)
    completer = FileCompleter(index)
    text = "look at @helpers_c"
    (first, *_) = list(completer.get_completions(Document(text, len(text)), CompleteEvent()))
    assert first.text == "src/utils/helpers_config.py" and first.start_position == -len("helpers_c")
    assert list(completer.get_completions(Document("no mention", 10), CompleteEvent())) == []


def test_commands_match_prefix_then_inside_then_letters_in_order() -> None:
    assert rank("co", ["compact", "copy", "scoped-models", "clone", "model"]) == [
        "compact",
        "copy",
        "scoped-models",
        "clone",
    ]
    completer = CommandCompleter([("compact", "summarise"), ("copy", "copy the answer")])
    shown = list(completer.get_completions(Document("/", 1), CompleteEvent()))
    assert [c.text for c in shown] == ["compact", "copy"] and shown[0].display_meta_text == "summarise"
    assert list(completer.get_completions(Document("/compact now", 12), CompleteEvent())) == []


@pytest.mark.subprocess
def test_a_100000_file_tree_is_listed_once_and_searched(tmp_path: Path) -> None:
    """The size the issue names; nothing here is timed (bench/tui_views.py times it)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    for group in range(100):
        folder = tmp_path / "pkg" / f"group{group}"
        folder.mkdir(parents=True)
        for n in range(1000):
            (folder / f"module_{n}.py").touch()
    tree(tmp_path, ["src/utils/helpers_config.py"])
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    index = FileIndex(tmp_path)
    index.start()
    assert index.wait(120)
    assert index.search("helpers")[0] == "src/utils/helpers_config.py"
    assert len(index.search("module_99", limit=500)) == 500
