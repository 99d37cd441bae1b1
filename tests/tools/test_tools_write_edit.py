from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from tools_support import call, details_of, text_of

from tether.errors import ToolError
from tether.tools import PathOutsideWorkspace, Workspace, create_edit_tool, create_write_tool

SOURCE = "def f():\n    return 1\n\n\ndef g():\n    return 1\n"


async def test_write_creates_missing_parents(workspace: Workspace, root: Path) -> None:
    result = await call(create_write_tool(workspace), path="a/b/c.txt", content="hi\nthere\n")
    assert (root / "a/b/c.txt").read_text() == "hi\nthere\n"
    assert text_of(result) == "Created a/b/c.txt (9 bytes, 2 lines)."
    assert result.details == {"path": "a/b/c.txt", "bytes": 9, "created": True}


async def test_write_never_creates_parents_through_a_link_made_after_the_check(
    workspace: Workspace, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a bash call in the same batch turns the missing folder ``a`` into a link out of the
    # workspace between the path's check and the write: mkdir(parents=True) followed it
    outside = root.parent / "outside"
    outside.mkdir()
    checked = Workspace.resolve

    def resolve_then_race(self: Workspace, path: str, *, reading: bool = False) -> Path:
        real = checked(self, path, reading=reading)
        (root / "a").symlink_to(outside)
        return real

    monkeypatch.setattr(Workspace, "resolve", resolve_then_race)
    with pytest.raises(ToolError, match="changed into a link"):
        await call(create_write_tool(workspace), path="a/b/c.txt", content="x")
    assert list(outside.iterdir()) == []


async def test_write_overwrites(workspace: Workspace, root: Path) -> None:
    (root / "x").write_text("old")
    result = await call(create_write_tool(workspace), path="x", content="new")
    assert (root / "x").read_text() == "new"
    assert text_of(result).startswith("Overwrote x")


async def test_write_outside_the_workspace_is_refused(workspace: Workspace, root: Path) -> None:
    with pytest.raises(PathOutsideWorkspace, match="outside the workspace"):
        await call(create_write_tool(workspace), path="../escape.txt", content="x")
    assert not (root.parent / "escape.txt").exists()


async def test_write_to_a_directory_is_an_error(workspace: Workspace, root: Path) -> None:
    (root / "d").mkdir()
    with pytest.raises(ToolError, match="d is a directory"):
        await call(create_write_tool(workspace), path="d", content="x")


async def test_edit_replaces_once_and_returns_a_unified_diff(workspace: Workspace, root: Path) -> None:
    (root / "m.py").write_text(SOURCE)
    result = await call(
        create_edit_tool(workspace),
        path="m.py",
        old_string="def g():\n    return 1",
        new_string="def g():\n    return 2",
    )
    assert (root / "m.py").read_text() == SOURCE.replace("return 1\n", "return 2\n").replace(
        "return 2\n\n\n", "return 1\n\n\n"
    )
    diff = details_of(result)["diff"]
    assert diff.startswith("--- a/m.py\n+++ b/m.py\n@@ ")
    assert "-    return 1\n+    return 2\n" in diff
    assert details_of(result)["firstChangedLine"] == 5
    assert details_of(result)["replacements"] == 1
    assert diff in text_of(result)


async def test_ambiguous_edit_is_refused_and_names_the_lines(workspace: Workspace, root: Path) -> None:
    (root / "m.py").write_text(SOURCE)
    with pytest.raises(ToolError, match=r"occurs 2 times in m.py \(starting on lines 2, 6\)"):
        await call(create_edit_tool(workspace), path="m.py", old_string="return 1", new_string="return 2")
    assert (root / "m.py").read_text() == SOURCE  # untouched


async def test_replace_all(workspace: Workspace, root: Path) -> None:
    (root / "m.py").write_text(SOURCE)
    result = await call(
        create_edit_tool(workspace),
        path="m.py",
        old_string="return 1",
        new_string="return 2",
        replace_all=True,
    )
    assert (root / "m.py").read_text() == SOURCE.replace("return 1", "return 2")
    assert details_of(result)["replacements"] == 2


async def test_missing_passage_gets_a_whitespace_hint(workspace: Workspace, root: Path) -> None:
    (root / "m.py").write_text(SOURCE)
    with pytest.raises(ToolError, match="differs only in whitespace or indentation starts on line 5"):
        await call(
            create_edit_tool(workspace), path="m.py", old_string="def g():\n  return 1", new_string="x"
        )


async def test_missing_passage_gets_a_line_number_hint(workspace: Workspace, root: Path) -> None:
    (root / "m.py").write_text(SOURCE)
    with pytest.raises(ToolError, match="line-number prefixes"):
        await call(
            create_edit_tool(workspace),
            path="m.py",
            old_string="5\tdef g():\n6\t    return 1",
            new_string="x",
        )


async def test_plainly_missing_passage(workspace: Workspace, root: Path) -> None:
    (root / "m.py").write_text(SOURCE)
    with pytest.raises(ToolError, match=re.escape("old_string was not found in m.py. Read the file again")):
        await call(create_edit_tool(workspace), path="m.py", old_string="nothing like this", new_string="x")


async def test_crlf_and_bom_are_preserved(workspace: Workspace, root: Path) -> None:
    (root / "w.txt").write_bytes("\ufeffone\r\ntwo\r\nthree\r\n".encode())
    await call(create_edit_tool(workspace), path="w.txt", old_string="one\ntwo", new_string="one\n2")
    assert (root / "w.txt").read_bytes() == "\ufeffone\r\n2\r\nthree\r\n".encode()


async def test_edit_bad_input(workspace: Workspace, root: Path) -> None:
    tool = create_edit_tool(workspace)
    (root / "f").write_text("abc")
    (root / "bin").write_bytes(b"\x00\x01abc")
    with pytest.raises(ToolError, match=re.escape("File not found: nope. To create a file, use write")):
        await call(tool, path="nope", old_string="a", new_string="b")
    with pytest.raises(ToolError, match="old_string is empty"):
        await call(tool, path="f", old_string="", new_string="b")
    with pytest.raises(ToolError, match="identical"):
        await call(tool, path="f", old_string="a", new_string="a")
    with pytest.raises(ToolError, match="bin is a binary file"):
        await call(tool, path="bin", old_string="abc", new_string="x")


async def test_edit_diff_marks_a_missing_final_newline(workspace: Workspace, root: Path) -> None:
    (root / "f").write_text("a\nb")
    result = await call(create_edit_tool(workspace), path="f", old_string="b", new_string="c")
    assert details_of(result)["diff"].endswith(
        "-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
    )


async def test_fifos_are_refused_instead_of_blocking(workspace: Workspace, root: Path) -> None:
    os.mkfifo(root / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        await call(create_write_tool(workspace), path="pipe", content="x")
    with pytest.raises(ToolError, match="not a regular file"):
        await call(create_edit_tool(workspace), path="pipe", old_string="a", new_string="b")
