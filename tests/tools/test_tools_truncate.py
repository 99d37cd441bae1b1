from __future__ import annotations

from tether.tools.truncate import OutputBuffer, strip_ansi


def test_utf8_split_across_reads_is_not_garbled() -> None:
    buffer = OutputBuffer()
    data = "héllo ✓\n".encode()
    pieces = [buffer.feed(data[i : i + 1]) for i in range(len(data))]
    buffer.finish()
    assert "".join(pieces) == "héllo ✓\n"
    assert buffer.text() == "héllo ✓\n"
    assert not buffer.truncated


def test_huge_output_keeps_head_and_tail_in_bounded_memory() -> None:
    buffer = OutputBuffer(max_bytes=1000, max_lines=100)
    lines = [f"line {i}" for i in range(100_000)]
    blob = ("\n".join(lines) + "\n").encode()
    for start in range(0, len(blob), 4096):
        buffer.feed(blob[start : start + 4096])
    buffer.finish()
    text = buffer.text()
    assert buffer.truncated
    assert buffer.total_bytes == len(blob)
    assert text.startswith("line 0\nline 1\n")
    assert text.endswith("line 99999\n")
    assert f"[… output truncated: {len(blob)} bytes in total" in text
    kept = [line for line in text.splitlines() if line.startswith("line ")]
    assert set(kept) <= set(lines)  # the partial line at the cut was dropped
    assert len(text) < 1200


def test_one_giant_chunk_is_cut_too() -> None:
    buffer = OutputBuffer(max_bytes=100, max_lines=10)
    buffer.feed(b"a" * 10_000 + b"\nend\n")
    buffer.finish()
    assert buffer.text().endswith("end\n")
    assert len(buffer.text()) < 250


def test_strip_ansi() -> None:
    assert strip_ansi("\x1b[1;31mbold red\x1b[0m \x1b]0;title\x07done") == "bold red done"
