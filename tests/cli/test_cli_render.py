"""Terminal rendering helpers: folding, argument lines, thinking, colour on and off."""

from __future__ import annotations

from tether.cli.render import (
    FOLDED_LINES,
    Painter,
    format_args,
    result_lines,
    tail_lines,
    thinking_text,
    tool_header,
    tool_result,
)
from tether.session.stats import format_tokens

PLAIN = Painter(width=80, color=False)


def test_long_results_fold_and_expand() -> None:
    text = "\n".join(str(i) for i in range(1, 21))
    folded = tool_result(PLAIN, result_lines(text, expanded=False), is_error=False)
    assert folded.count("│") == FOLDED_LINES
    assert f"{20 - FOLDED_LINES} more lines" in folded and "Ctrl-O" in folded
    expanded = tool_result(PLAIN, result_lines(text, expanded=True), is_error=False)
    assert expanded.count("│") == 20 and "more lines" not in expanded
    assert "(no output)" in tool_result(PLAIN, result_lines("", expanded=False), is_error=False)


def test_arguments_on_one_line_with_long_values_cut() -> None:
    line = format_args({"command": "echo a\necho b", "path": "x" * 200, "n": 3})
    assert "command=echo a⏎echo b" in line
    assert "n=3" in line
    assert len(line) <= 200
    assert "\n" not in line


def test_thinking_folds_to_one_line_unless_expanded() -> None:
    thinking = "first line of thought\nsecond line\nthird"
    folded = thinking_text(PLAIN, thinking, expanded=False)
    assert "\n" not in folded and "first line of thought" in folded and "Ctrl-T" in folded
    assert thinking_text(PLAIN, thinking, expanded=True) == thinking
    assert thinking_text(PLAIN, "   ", expanded=False) == ""


def test_colour_only_when_asked() -> None:
    assert "\x1b[" not in tool_header(PLAIN, "bash", {"command": "ls"}, "ok")
    coloured = tool_header(Painter(width=80, color=True), "bash", {"command": "ls"}, "error")
    assert "\x1b[" in coloured and "bash" in coloured
    assert "\x1b[" not in PLAIN.markdown("**bold** and `code`")
    assert "**" not in PLAIN.markdown("**bold**")


def test_small_helpers() -> None:
    assert tail_lines("a\nb\nc\nd", 2) == "c\nd"
    assert tail_lines("a\nb", 5) == "a\nb"
    assert [format_tokens(n) for n in (999, 1500, 2_500_000)] == ["999", "1.5k", "2.5M"]
