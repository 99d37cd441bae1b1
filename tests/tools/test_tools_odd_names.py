"""File names that are not UTF-8 (POSIX names are bytes: ``b"\\xff.txt"``).

Python hands such a name over with lone surrogates, which the request builder strips (the model
saw ``.txt``, a file that does not exist) and JSON output cannot encode. The tools write the odd
bytes ``\\xff`` (``tether.wire.file_names``), the same text each time, and take that text back as
the name, so the model can read the file it was shown."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tools_support import call, text_of

from tether.errors import ToolError
from tether.tools import (
    Workspace,
    create_edit_tool,
    create_find_tool,
    create_grep_tool,
    create_ls_tool,
    create_read_tool,
    create_write_tool,
)

ODD = b"\xff.txt"
SHOWN = "\\xff.txt"
"""How the tools write ``ODD``: its byte that is not UTF-8 as a ``\\xff`` escape."""


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    with open(os.path.join(os.fsencode(tmp_path), ODD), "wb") as f:
        f.write(b"hello odd\n")
    os.mkdir(os.path.join(os.fsencode(tmp_path), b"d\xfe"))
    return Workspace(tmp_path)


async def test_ls_find_and_grep_show_the_odd_bytes_as_escapes(workspace: Workspace) -> None:
    listed = text_of(await call(create_ls_tool(workspace)))
    found = text_of(await call(create_find_tool(workspace), pattern="*.txt"))
    grepped = text_of(await call(create_grep_tool(workspace), pattern="odd"))
    assert listed.splitlines() == [SHOWN, "d\\xfe/"]
    assert found == SHOWN
    assert grepped == f"{SHOWN}:1:hello odd"


async def test_the_shown_name_reads_edits_and_writes_that_file(workspace: Workspace) -> None:
    odd = Path(os.fsdecode(os.path.join(os.fsencode(workspace.root), ODD)))
    assert text_of(await call(create_read_tool(workspace), path=SHOWN)).startswith("1\thello odd")
    await call(create_edit_tool(workspace), path=SHOWN, old_string="hello", new_string="bye")
    assert odd.read_bytes() == b"bye odd\n"
    await call(create_write_tool(workspace), path=SHOWN, content="new\n")
    assert odd.read_bytes() == b"new\n"
    assert sorted(os.listdir(os.fsencode(workspace.root))) == [b"d\xfe", ODD]  # nothing else made


async def test_a_name_spelled_with_a_real_backslash_is_taken_as_it_is(workspace: Workspace) -> None:
    (workspace.root / SHOWN).write_text("the literal one\n")
    assert "the literal one" in text_of(await call(create_read_tool(workspace), path=SHOWN))


async def test_errors_name_the_odd_path_as_it_is_shown(workspace: Workspace) -> None:
    with pytest.raises(ToolError) as read_dir:
        await call(create_read_tool(workspace), path="d\\xfe")
    assert str(read_dir.value).startswith("d\\xfe is a directory")
    with pytest.raises(ToolError) as missing:
        await call(create_read_tool(workspace), path="d\\xfe/gone")
    assert str(missing.value) == "File not found: d\\xfe/gone"
    with pytest.raises(ToolError) as not_dir:
        await call(create_ls_tool(workspace), path=SHOWN)
    assert str(not_dir.value).startswith(f"{SHOWN} is a file")


async def test_a_new_file_goes_into_the_folder_that_exists_either_way(workspace: Workspace) -> None:
    # the escape reading won for every name that did not exist: a new file meant for a folder
    # really named ``notes\x80`` (backslash and all, as ls shows it) made a second folder
    root = os.fsencode(workspace.root)
    (workspace.root / "notes\\x80").mkdir()
    await call(create_write_tool(workspace), path="notes\\x80/new.txt", content="literal\n")
    await call(create_write_tool(workspace), path="d\\xfe/new.txt", content="odd\n")
    assert (workspace.root / "notes\\x80" / "new.txt").read_text() == "literal\n"
    with open(os.path.join(root, b"d\xfe", b"new.txt"), "rb") as made:
        assert made.read() == b"odd\n"
    assert sorted(os.listdir(root)) == [b"d\xfe", b"notes\\x80", ODD]


async def test_escapes_of_utf8_bytes_are_not_read_back(workspace: Workspace) -> None:
    # ``\xc3\xa9`` is the UTF-8 of é, which the tools write as é: such text names no odd file
    (workspace.root / "é.txt").write_text("accent\n")
    with pytest.raises(ToolError, match="not found"):
        await call(create_read_tool(workspace), path="\\xc3\\xa9.txt")


@pytest.mark.parametrize(
    ("path", "looks"),
    [
        ("plain.txt", 0),  # no escape: one reading
        ("\\x41.txt", 0),  # no escape of a byte that is not UTF-8: one reading
        ("\\xc3\\xa9.txt", 0),  # é's bytes: ``display`` writes é, so one reading
        (SHOWN, 2),  # the text names nothing, its bytes name a file
        ("new\\xfd.txt", 2),  # a new file: both readings have the same folder
        ("d\\xfe/new.txt", 4),  # a new file in a folder named by one of the readings
    ],
)
def test_a_name_is_looked_up_no_more_than_its_readings_need(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch, path: str, looks: int
) -> None:
    """Each ``\\x`` in an argument cost four looks at the disk, whatever the name: a second
    reading that was the same text, the same folder asked about twice."""
    looked: list[str | os.PathLike[str]] = []
    lexists = os.path.lexists

    def counted(name: str | os.PathLike[str]) -> bool:
        looked.append(name)
        return lexists(name)

    monkeypatch.setattr(os.path, "lexists", counted)
    workspace.resolve(path)
    assert len(looked) == looks, looked
