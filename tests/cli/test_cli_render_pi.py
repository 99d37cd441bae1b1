"""Rendering as pi shows it: answers' markdown (line breaks, fences, headings), an edit's
coloured diff with the changed words marked, and the compaction report."""

from __future__ import annotations

import re
from typing import Any

from tether.cli.render import Painter, compaction_report, diff_lines, diff_text, finished_tool
from tether.tools.edit import unified_diff

PLAIN = Painter(60, False)
COLOUR = Painter(60, True)


def lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()]


def test_single_line_breaks_stay_and_fences_and_headings_show() -> None:
    text = "# Title\nline one\nline two\n\n```python\ndef f():\n    return 1\n```\n\n## Next"
    shown = lines(PLAIN.markdown(text))
    assert shown[0] == "# Title"  # left-aligned, its level visible without colour
    assert shown[2:4] == ["line one", "line two"]
    start = shown.index("```python")
    assert shown[start + 1 : start + 4] == ["def f():", "    return 1", "```"]
    assert "## Next" in shown
    coloured = COLOUR.markdown("```python\ndef f(): pass\n```")
    assert "\x1b[" in coloured.split("def")[0] + coloured.split("def")[1]  # highlighted


def test_an_edit_diff_is_red_and_green_with_the_changed_words_marked() -> None:
    before = "a = 1\nname = 'hello world'\nb = 2\n"
    after = "a = 1\nname = 'goodbye world'\nb = 2\nc = 3\n"
    diff = unified_diff(before, after, "x.py")
    plain = lines(diff_text(PLAIN, diff_lines(diff, expanded=True)))
    assert "  -name = 'hello world'" in plain and "  +name = 'goodbye world'" in plain
    assert "  +c = 3" in plain and not any(line.lstrip().startswith(("---", "+++")) for line in plain)
    coloured = diff_text(COLOUR, diff_lines(diff, expanded=True))
    removed = next(line for line in coloured.splitlines() if "hello" in line)
    added = next(line for line in coloured.splitlines() if "goodbye" in line)
    assert "\x1b[31m" in removed and "\x1b[32m" in added
    assert re.search(r"\x1b\[1;7;31mhello", removed) and re.search(r"\x1b\[1;7;32mgoodbye", added)
    assert "world" in removed and not re.search(r"7;31m[^\x1b]*world", removed)  # unchanged word plain


def test_a_long_diff_folds_and_the_tool_line_keeps_the_summary() -> None:
    before = "".join(f"line {n}\n" for n in range(60))
    after = "".join(f"LINE {n}\n" for n in range(60))
    diff = unified_diff(before, after, "big.txt")
    folded = lines(diff_text(PLAIN, diff_lines(diff, expanded=False)))
    assert len(folded) == 21 and "more lines  [Ctrl-O to expand]" in folded[-1]
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": f"Edited big.txt: replaced 1 occurrence.\n\n{diff}"}],
        "details": {"diff": diff},
        "isError": False,
    }
    shown = lines(finished_tool(PLAIN, "edit", {"path": "big.txt"}, result, expanded=True))
    assert (
        shown[0].startswith("✓ edit path=big.txt")
        and shown[1] == "  │ Edited big.txt: replaced 1 occurrence."
    )
    assert len(shown) == 2 + 1 + 120  # the hunk header and every removed and added line


def test_the_compaction_report() -> None:
    done = {
        "type": "compaction_end",
        "reason": "manual",
        "result": {
            "summary": "## Goal\nShip it.\nMore.",
            "firstKeptEntryId": "x",
            "tokensBefore": 45_200,
            "tokensAfter": 3_100,
        },
        "aborted": False,
        "willRetry": False,
    }
    assert lines(compaction_report(PLAIN, done)) == [
        "✓ compacted the conversation (45.2k → 3.1k tokens)",
        "▸ summary (5 words): Goal  [Ctrl-O to read]",
    ]
    nothing = {
        "type": "compaction_end",
        "reason": "manual",
        "aborted": False,
        "willRetry": False,
        "errorMessage": "nothing to compact: small",
    }
    assert lines(compaction_report(PLAIN, nothing)) == ["compaction: nothing to compact: small"]
    stopped = {**nothing, "aborted": True}
    assert lines(compaction_report(PLAIN, stopped)) == ["compaction stopped; nothing changed"]
