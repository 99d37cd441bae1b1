from __future__ import annotations

import base64
import os
import re
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from tools_support import call, details_of, text_of

from tether.errors import ToolError
from tether.tools import Workspace, create_read_tool
from tether.tools.read import MAX_IMAGE_BYTES
from tether.tools.truncate import MAX_BYTES, MAX_LINES


def png_bytes(width: int = 2, height: int = 2) -> bytes:
    """A real (tiny, all-red) PNG built from its spec: signature, IHDR, IDAT, IEND."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


async def test_lines_are_numbered(workspace: Workspace, root: Path) -> None:
    (root / "a.txt").write_text("alpha\nbeta\r\ngamma")
    result = await call(create_read_tool(workspace), path="a.txt")
    assert text_of(result) == "1\talpha\n2\tbeta\n3\tgamma"
    assert result.details == {
        "path": "a.txt",
        "startLine": 1,
        "endLine": 3,
        "totalLines": 3,
        "truncated": False,
    }


async def test_offset_and_limit_select_a_window_and_say_how_to_continue(
    workspace: Workspace, root: Path
) -> None:
    (root / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    result = await call(create_read_tool(workspace), path="n.txt", offset=10, limit=5)
    text = text_of(result)
    assert text.splitlines()[:5] == [f"{i}\tline {i}" for i in range(10, 15)]
    assert "[Showing lines 10-14 of 100. Use offset=15 to continue.]" in text


async def test_long_file_is_cut_at_the_line_budget(workspace: Workspace, root: Path) -> None:
    (root / "big.txt").write_text("x\n" * (MAX_LINES + 500))
    text = text_of(await call(create_read_tool(workspace), path="big.txt"))
    assert (
        f"[Showing lines 1-{MAX_LINES} of {MAX_LINES + 500}. Use offset={MAX_LINES + 1} to continue.]" in text
    )


async def test_wide_file_is_cut_at_the_byte_budget(workspace: Workspace, root: Path) -> None:
    line = "y" * 1000
    (root / "wide.txt").write_text(f"{line}\n" * 200)
    result = await call(create_read_tool(workspace), path="wide.txt")
    text = text_of(result)
    shown = details_of(result)["endLine"]
    assert shown < 200
    assert len(text.encode()) <= MAX_BYTES + 200
    assert f"output limit was reached). Use offset={shown + 1} to continue.]" in text


async def test_very_long_lines_are_shortened(workspace: Workspace, root: Path) -> None:
    (root / "min.js").write_text("z" * 10_000)
    text = text_of(await call(create_read_tool(workspace), path="min.js"))
    assert "[8000 more characters]" in text


async def test_offset_past_end_is_an_error(workspace: Workspace, root: Path) -> None:
    (root / "short.txt").write_text("one\ntwo\n")
    with pytest.raises(
        ToolError, match=re.escape("offset 5 is past the end of short.txt, which has 2 lines")
    ):
        await call(create_read_tool(workspace), path="short.txt", offset=5)


async def test_empty_file(workspace: Workspace, root: Path) -> None:
    (root / "empty").write_text("")
    assert text_of(await call(create_read_tool(workspace), path="empty")) == "empty is empty."


async def test_missing_file_and_directory_are_clear_errors(workspace: Workspace, root: Path) -> None:
    (root / "sub").mkdir()
    tool = create_read_tool(workspace)
    with pytest.raises(ToolError, match=re.escape("File not found: nope.txt")):
        await call(tool, path="nope.txt")
    with pytest.raises(ToolError, match="sub is a directory"):
        await call(tool, path="sub")


async def test_binary_file_is_refused_with_a_hint(workspace: Workspace, root: Path) -> None:
    (root / "blob.bin").write_bytes(b"ELF\x00\x01\x02" * 100)
    with pytest.raises(ToolError, match=r"blob.bin is a binary file \(600 bytes\)"):
        await call(create_read_tool(workspace), path="blob.bin")


async def test_image_comes_back_as_image_content(workspace: Workspace, root: Path) -> None:
    data = png_bytes()
    (root / "red.dat").write_bytes(data)  # sniffed from content, not from the name
    result = await call(create_read_tool(workspace), path="red.dat")
    note, image = result.content
    assert note["type"] == "text" and "image/png" in note["text"]
    assert image == {"type": "image", "data": base64.b64encode(data).decode(), "mimeType": "image/png"}


async def test_oversized_image_is_refused_with_the_limit(workspace: Workspace, root: Path) -> None:
    (root / "huge.png").write_bytes(png_bytes() + b"\x00" * MAX_IMAGE_BYTES)
    with pytest.raises(ToolError, match=f"over the {MAX_IMAGE_BYTES} byte limit"):
        await call(create_read_tool(workspace), path="huge.png")


async def test_invalid_arguments_are_rejected_by_the_schema(workspace: Workspace) -> None:
    from tether.agent.validation import ToolArgumentsError

    with pytest.raises(ToolArgumentsError, match="offset: must be >= 1"):
        await call(create_read_tool(workspace), path="a", offset=0)
    with pytest.raises(
        ToolArgumentsError, match="lines: schema is false\n  - root: must not have additional properties"
    ):
        await call(create_read_tool(workspace), path="a", lines=3)


async def test_a_fifo_is_refused_instead_of_blocking(workspace: Workspace, root: Path) -> None:
    os.mkfifo(root / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        await call(create_read_tool(workspace), path="pipe")


@pytest.mark.subprocess
def test_a_huge_single_line_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """Issue 14, class 6 (memory): a one-line 200 MB file costs what is shown, not 200 MB.

    A fresh interpreter reads it; its peak RSS (``ru_maxrss``) may grow by far less than the line."""
    line_bytes = 200 * 1024 * 1024
    path = tmp_path / "one-line.txt"
    with path.open("wb") as out:
        block = b"x" * (1 << 20)
        for _ in range(line_bytes // len(block)):
            out.write(block)
        out.write(b"\nsecond line\n")
    probe = (
        "import resource, sys\n"
        "from pathlib import Path\n"
        "from tether.tools import Workspace\n"
        "from tether.tools.read import read_file\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "result = read_file(Workspace(Path(sys.argv[1]).parent), {'path': sys.argv[1]})\n"
        "after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(after - before, len(result.content[0]['text']))\n"
        "print(result.content[0]['text'][-120:])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    grown_kb, shown_chars = (int(v) for v in done.stdout.split("\n", 1)[0].split())
    assert shown_chars < 10_000
    assert f"[{line_bytes - 2000} more characters]" in done.stdout and "2\tsecond line" in done.stdout
    assert grown_kb < 20 * 1024, f"peak memory grew by {grown_kb} KB to read a {line_bytes} byte line"
