"""Hostile text in the interactive mode: what the model, a tool, a file or a server sends is
shown, never obeyed by the terminal.

The scrollback is written raw (``patch_stdout(raw=True)``), so a model's answer or a command's
output carrying ``\\x1b]52;c;...\\x07`` set the clipboard, ``\\x1b]2;...\\x07`` the window title,
``\\x1b[2J`` cleared the screen, a C1 CSI (U+009B) started a sequence, U+202E showed the rest of
the line reversed (a terminal with bidi support). Each piece is shown escaped now
(``terminal_text.visible``), in the live area and the transcript view too.
"""

from __future__ import annotations

import difflib
import re
import shutil
import sys
import time
from pathlib import Path

import pytest
from cli_support import CliEnv, text_reply, tool_reply
from tmux_support import Terminal

from tether.cli import render
from tether.cli.markdown import TABLE_CELLS
from tether.cli.transcript import render_transcript

PLAIN = render.Painter(width=80, color=False)
COLOUR = render.Painter(width=80, color=True)
PLAIN_100 = render.Painter(width=100, color=False)
HOSTILE = "a\x1b]52;c;cHduZWQ=\x07b\x1b]2;TITLE\x07c\x1b[2Jd\x9b31me\u202ef\rg\x08h"
SHOWN = "a\\x1b]52;c;cHduZWQ=\\x07b\\x1b]2;TITLE\\x07c\\x1b[2Jd\\x9b31me\\u202ef\\x0dg\\x08h"


def harmless(text: str) -> bool:
    """No control character but tab and newline, no bidi override: the painter's own colour
    (SGR) sequences aside."""
    bare = re.sub(r"\x1b\[[0-9;]*m", "", text)
    return re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", bare) is None


@pytest.mark.parametrize("painter", [PLAIN, COLOUR], ids=["plain", "colour"])
def test_every_piece_from_elsewhere_is_shown_escaped(painter: render.Painter) -> None:
    tool_result = {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": HOSTILE,
        "isError": True,
        "content": [{"type": "text", "text": HOSTILE}],
    }
    answer = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": HOSTILE},
            {"type": "text", "text": HOSTILE},
            {"type": "toolCall", "id": "c1", "name": HOSTILE, "arguments": {HOSTILE: HOSTILE}},
        ],
        "stopReason": "error",
        "errorMessage": HOSTILE,
    }
    pieces = [
        painter.markdown(HOSTILE),
        painter.styled(HOSTILE, "muted"),
        render.user_text(painter, HOSTILE),
        render.thinking_text(painter, HOSTILE, expanded=True),
        render.thinking_text(painter, HOSTILE, expanded=False),
        render.tool_header(painter, HOSTILE, {HOSTILE: HOSTILE}, "running"),
        render.tool_result(painter, render.result_lines(HOSTILE, expanded=True), is_error=False),
        render.diff_text(painter, render.diff_lines(f"-{HOSTILE}\n+{HOSTILE}x\n {HOSTILE}", expanded=True)),
        render.error_text(painter, HOSTILE, aborted=False),
        render.shell_run(
            painter, {"role": "bashExecution", "command": HOSTILE, "output": HOSTILE}, expanded=True
        ),
        render.live_area(painter, answer, [(HOSTILE, {"a": HOSTILE})], HOSTILE, True, True, 24),
        *render.ended_message(painter, answer, show_thinking=True),
        render_transcript(
            painter, [{"role": "user", "content": HOSTILE}, answer, tool_result], show_thinking=True
        ),
    ]
    for piece in pieces:
        assert harmless(piece), repr(piece)
    plain = [piece for piece in pieces if not painter.color]
    assert all("\\x1b]52;c;cHduZWQ=\\x07" in piece for piece in plain), plain


def test_a_lone_surrogate_is_shown_as_its_escape() -> None:
    """A model's ``"\\ud800"`` in a bash command, in the approval question and the running tool's
    header: it has no UTF-8 form, and prompt-toolkit wrote ``?`` in its place (``echo ?``)."""
    command = "echo \ud800 \udcff é"
    frame = render.live_area(PLAIN, None, [("bash", {"command": command})], command, True, False, 24)
    assert frame.count("echo \\ud800 \\udcff é") == 2, frame
    frame.encode()


def test_escapes_are_shown_as_written_and_crlf_is_a_line_end() -> None:
    assert (
        render.tool_result(PLAIN, render.result_lines(HOSTILE, expanded=True), is_error=False)
        == "  │ " + SHOWN
    )
    assert (
        render.tool_result(PLAIN, render.result_lines("one\r\ntwo\r\n", expanded=True), is_error=False)
        == "  │ one\n  │ two"
    )


@pytest.mark.subprocess
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt install tmux)")
def test_escapes_from_the_model_a_command_and_a_file_do_not_reach_the_terminal(cli: CliEnv) -> None:
    """In tmux: the window title stays tether's, and each sequence is on screen as text."""
    (cli.project / "evil.txt").write_text("file \x1b]2;FILE-TITLE\x07 end\n")
    script = cli.script(
        "hostile",
        [
            text_reply("model \x1b]2;MODEL-TITLE\x07 says", " hi"),
            tool_reply(
                "bash", {"command": "printf 'run \\033]2;BASH-TITLE\\007 \\302\\2332J over\\rdone\\n'"}, "c1"
            ),
            tool_reply("read", {"path": "evil.txt"}, "c2"),
            text_reply("all read"),
        ],
    )
    env = cli.env(TETHER_SCRIPTED=str(script), TERM="xterm-256color")
    command = [sys.executable, "-m", "tether.cli", "--sandbox", "off", "--no-session"]
    terminal = Terminal(command, str(cli.project), env)
    try:
        terminal.wait_for("/help for commands")
        title = terminal.tmux("display-message", "-p", "-t", "t", "#{pane_title}")
        terminal.type("hello")
        terminal.send("Enter")
        terminal.wait_for("says hi")
        terminal.type("go on")
        terminal.send("Enter")
        screen = terminal.wait_for(lambda s: "Run command" in s)
        terminal.send("a")
        screen = terminal.wait_for("all read")
        time.sleep(0.3)  # the last frame written
        assert terminal.tmux("display-message", "-p", "-t", "t", "#{pane_title}") == title
        for shown in (
            "model \\x1b]2;MODEL-TITLE\\x07 says hi",
            "run  \\x9b2J over\\x0ddone",  # (the bash tool drops ESC sequences itself)
            "file \\x1b]2;FILE-TITLE\\x07 end",
        ):
            assert shown in screen, screen
    finally:
        terminal.close()


class CountingPainter(render.Painter):
    """Counts the characters it is given to render: the work a frame costs."""

    given: list[int]

    def markdown(self, text: str) -> str:
        self.given.append(len(text))
        return super().markdown(text)

    def styled(self, text: str, style: str) -> str:
        self.given.append(len(text))
        return super().styled(text, style)


def counting(width: int) -> CountingPainter:
    painter = CountingPainter(width=width, color=False)
    object.__setattr__(painter, "given", [])
    return painter


def streaming(text: str, kind: str = "text") -> dict[str, object]:
    return {"role": "assistant", "content": [{"type": kind, kind: text}]}


def as_markdown(answer: str) -> str:
    """``answer`` as markdown, however long."""
    from tether.cli.markdown import AnswerMarkdown

    return PLAIN_100.render(AnswerMarkdown(answer))


def test_a_frame_of_a_long_streaming_answer_renders_what_can_be_on_screen() -> None:
    """A frame rendered the whole answer: each cost its length, 1.5 s at 200,000 characters, so
    the stream and Esc waited and the run slowed quadratically. Now a frame renders the end that
    fits the screen, and it looks as the end of the whole answer does (one line of 200,000
    characters: its end, wrapped from where the cut fell). (Once it has ended, an answer this
    long is shown as written: ``test_an_answer_too_long_to_lay_out_is_shown_as_written``.)"""
    paragraph = "Some words of a long answer, `code` and **bold** in them, going on.\n\n"
    answer = paragraph * 3000  # 210,000 characters
    for text in (answer, answer.replace("\n\n", " ") + "the end"):
        painter = counting(100)
        frame = render.live_area(painter, streaming(text), [], None, True, False, 24)
        assert sum(painter.given) <= 2 * 24 * 100 + 10, painter.given
        assert len(frame.split("\n")) == 24
        assert frame.rstrip().endswith("the end" if "the end" in text else "going on.")
    frame = render.live_area(PLAIN_100, streaming(answer), [], None, True, False, 24)
    assert frame == render.tail_lines(as_markdown(answer), 24)
    thinking = "a thought\n" * 50_000
    painter = counting(100)
    frame = render.live_area(painter, streaming(thinking, "thinking"), [], None, True, True, 24)
    assert sum(painter.given) <= 2 * 24 * 100 + 10
    assert frame.splitlines() == ["a thought"] * 24


def test_a_long_code_block_streaming_stays_code_at_its_end() -> None:
    code = "```python\n" + "".join(f"value_{n} = {n}  # a line of code\n" for n in range(5000))
    painter = counting(100)
    frame = render.live_area(painter, streaming(code), [], None, True, False, 24)
    assert sum(painter.given) <= 2 * 24 * 100 + 20
    assert frame == render.tail_lines(as_markdown(code), 24)
    closed = code + "```\n\n" + "after the code\n" * 10
    frame = render.live_area(counting(100), streaming(closed), [], None, True, False, 24)
    assert frame == render.tail_lines(as_markdown(closed), 24)
    assert "after the code" in frame and "```" in frame


def test_an_edit_of_a_very_long_line_compares_no_more_words_than_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The changed words of an edited line were found by a quadratic comparison: a 59,000
    character line (minified code) took 121 s, the screen frozen. A longer pair is shown in its
    colour, its words unmarked; short lines keep their marks."""
    compared: list[int] = []
    original = difflib.SequenceMatcher

    def counting_matcher(
        junk: object, a: list[str], b: list[str], autojunk: bool
    ) -> difflib.SequenceMatcher[str]:
        compared.append(len(a) * len(b))
        return original(None, a, b, autojunk=autojunk)

    monkeypatch.setattr(difflib, "SequenceMatcher", counting_matcher)
    old = " ".join(f"w{n}" for n in range(10_000))
    new = old.replace("w5 ", "changed ", 1)
    shown = render.diff_text(
        COLOUR, render.diff_lines(f"@@ -1 +1 @@\n-{old}\n+{new}\n-short line\n+short lane\n", expanded=True)
    )
    assert max(compared) <= render.WORD_DIFF_LIMIT and len(compared) == 2, compared
    assert "\x1b[1;7;32mlane" in shown and "\x1b[1;7;32mchanged" not in shown


def test_a_folded_result_or_diff_takes_a_few_rows_however_long_its_lines() -> None:
    """A command's one line of 1 MB was 10,000 rows of scrollback under a result "folded to 4
    lines" (a second of laying out, too). Each line of a folded result or diff now takes at most
    ``FOLDED_LINE_ROWS`` rows, ending in ``…`` when cut; Ctrl-O still shows it whole."""
    rows = render.FOLDED_LINE_ROWS + 1  # (rich starts a word too long for the first row below it)
    for text in ("y" * 1_000_000, "界" * 300_000 + "\nsecond", "e\u0301" * 200_000):
        folded = render.tool_result(
            PLAIN_100, render.result_lines(text, expanded=False), is_error=False
        ).splitlines()
        assert len(folded) <= rows * (1 + text.count("\n")) + 1, len(folded)
        assert folded[-1] == "  └ … long lines cut  [Ctrl-O to expand]"
        assert any(line.endswith("…") for line in folded[:rows])
    diff = render.diff_text(
        PLAIN_100, render.diff_lines(f"@@ -1 +1 @@\n-{'a' * 100_000}\n+{'b' * 100_000}\n", expanded=False)
    )
    assert len(diff.splitlines()) <= 1 + 2 * rows
    short = "a line that fits\nanother"
    assert (
        render.tool_result(PLAIN_100, render.result_lines(short, expanded=False), is_error=False)
        == "  │ a line that fits\n  │ another"
    )
    whole = render.tool_result(PLAIN_100, render.result_lines("y" * 10_000, expanded=True), is_error=False)
    assert whole.count("y") == 10_000


def test_text_nested_deeper_than_the_markdown_parser_goes_is_still_shown() -> None:
    """markdown-it stops parsing a block 20 levels deep and drops what is below: the items of a
    list ten levels deep, the text of a quote twenty deep vanished without a sign. Such an answer
    is shown as its source; one nested a few levels stays markdown."""
    listed = "".join("  " * depth + f"- item{depth}\n" for depth in range(12))
    shown = PLAIN_100.markdown(listed)
    assert all(f"item{depth}" in shown for depth in range(12)), shown
    for deep in ("> " * 20 + "the end", "> " * 10_000 + "the end", "- " * 10_000 + "the end"):
        assert "the end" in PLAIN_100.markdown("before\n\n" + deep)
    shallow = PLAIN_100.markdown("- one\n  - two\n    > three")
    assert "•" in shallow and "- one" not in shallow


def test_file_and_command_names_in_the_menus_are_shown_escaped(tmp_path: Path) -> None:
    """prompt-toolkit shows C0 and C1 controls as ``^[`` and ``<9b>`` but passes the bidi
    overrides: a file named ``a\\u202eb`` in the ``@`` menu (and a session name in ``/resume``,
    a message in ``/tree``) showed the rest of its line reversed. Inserted, the name stays whole."""
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    from tether.cli.completers import CommandCompleter, FileCompleter
    from tether.cli.file_index import FileIndex

    name = "evil\u202etxt.exe\x1b]2;x\x07"
    (tmp_path / name).write_text("x")
    index = FileIndex(tmp_path)
    for ready in (False, True):  # the folder-by-folder fallback, then the index
        if ready:
            index.start()
            assert index.wait(30)
        text = "look at @evil"
        (found,) = FileCompleter(index).get_completions(Document(text, len(text)), CompleteEvent())
        assert harmless(found.display_text) and "\\u202e" in found.display_text, found.display_text
        assert name in text[: len(text) + found.start_position] + found.text
    (command,) = CommandCompleter([(name, f"runs {name}")]).get_completions(
        Document("/evil", 5), CompleteEvent()
    )
    assert harmless(command.display_text) and harmless(command.display_meta_text)


def _table(rows: int, columns: int = 3) -> str:
    head = "| " + " | ".join(f"h{c}" for c in range(columns)) + " |\n" + "|---" * columns + "|\n"
    body = "".join("| " + " | ".join(f"r{r}c{c}" for c in range(columns)) + " |\n" for r in range(rows))
    return head + body


def test_a_table_too_big_to_lay_out_is_shown_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """rich lays out a table at about 0.2 ms a cell before showing any of it: a model's table of
    20,000 rows froze the screen 16 s when its answer ended. A table of more than TABLE_CELLS
    cells is shown as its source lines, none of its rows laid out; the rest of the answer stays
    markdown, and a smaller table stays a table."""
    import rich.console
    import rich.table

    laid_out: list[int] = []
    add_row = rich.table.Table.add_row

    def counted(table: rich.table.Table, *cells: rich.console.RenderableType) -> None:
        laid_out.append(len(cells))
        add_row(table, *cells)

    monkeypatch.setattr(rich.table.Table, "add_row", counted)
    big = _table(5_000)
    shown = PLAIN_100.markdown("**before**\n\n" + big + "\n> after")
    assert laid_out == []
    assert big.rstrip("\n") in shown
    assert "a table of 5,000 rows" in shown
    assert "before" in shown and "**before**" not in shown and "> after" not in shown

    small = _table(TABLE_CELLS // 3 - 1)  # with its header row: at most TABLE_CELLS cells
    shown = PLAIN_100.markdown(small)
    assert len(laid_out) == TABLE_CELLS // 3 - 1
    assert "| r0c0 |" not in shown and "r0c0" in shown


def test_a_huge_user_message_is_drawn_as_its_beginning_on_resume_and_in_the_transcript() -> None:
    """The live echo showed a 5 MB paste as its marker; a resumed session and Ctrl-O drew the
    stored message whole: 50,000 rows of scrollback, 11 s of laying out (the message stays
    whole; only its drawing stops)."""
    pasted = "".join(f"pasted line {n}\n" for n in range(50_000))
    message = {"role": "user", "content": f"see {pasted} and that"}
    for folded in (True, False):  # the resumed history's and Ctrl-O's
        shown = render_transcript(PLAIN_100, [message], show_thinking=False, folded=folded).splitlines()
        assert shown[0] == "› see pasted line 0" and shown[render.USER_LINES - 1] == "pasted line 39"
        assert shown[render.USER_LINES :] == ["[… 49,961 more lines not shown]"]
    one_line = render.user_text(PLAIN, "x" * 5_000_000).splitlines()
    assert one_line[-1] == f"[… {5_000_000 - render.USER_CHARS:,} more characters not shown]"
    assert "".join(one_line[:-1]) == "› " + "x" * render.USER_CHARS
    typed = "\n".join(f"line {n}" for n in range(render.USER_LINES)) + "\n\n"
    assert render.user_text(PLAIN, typed).rstrip().splitlines()[-1] == f"line {render.USER_LINES - 1}"


def test_what_a_long_user_message_leaves_out_is_counted_right() -> None:
    # "1 more lines"; and a cut within a line at USER_CHARS left the rest of that line uncounted
    lines = [f"line {n}" for n in range(render.USER_LINES + 1)]
    assert render.user_text(PLAIN, "\n".join(lines)).splitlines()[-1] == "[… 1 more line not shown]"
    cut_within = "x" * (render.USER_CHARS + 10) + "\nsecond\nthird"
    assert (
        render.user_text(PLAIN, cut_within).splitlines()[-1]
        == "[… the rest of this line and 2 more lines not shown]"
    )
    one_more = "x" * (render.USER_CHARS + 1)
    assert render.user_text(PLAIN, one_more).splitlines()[-1] == "[… 1 more character not shown]"


def parsed_sources(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts markdown-it parses from now on, in order."""
    from markdown_it import MarkdownIt

    parsed: list[str] = []
    parse = MarkdownIt.parse

    def recorded(parser: MarkdownIt, src: str, env: object = None) -> object:
        parsed.append(src)
        return parse(parser, src, env)  # pyright: ignore[reportArgumentType]

    monkeypatch.setattr(MarkdownIt, "parse", recorded)
    return parsed


def test_a_big_table_standing_alone_is_not_parsed_and_looks_as_it_did(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A big table was shown as its source, but markdown-it parsed it first: 280,000 tokens for
    20,000 rows, 2.3 s when the answer ended. One markdown-it surely reads as a table at the top
    level is cut out before parsing now; the answer looks as it did (the parsed path, which
    still takes every other table, draws it the same)."""
    from tether.cli.markdown import AnswerMarkdown

    big = _table(400).replace(" |\n", " **b** |\n")
    answers = {
        "alone": big,
        "between": "# Title\n\nSome *text*.\n\n" + big + "\nAfter `code`.\n\n1. one\n2. two\n",
        "two": "intro\n\n" + big + "\n" + big + "\n\nend\n",
        "no line end": big.rstrip("\n"),
        "in a fence": "```\n" + big + "```\n\nafter\n",
        "in a list": "- item\n\n  " + big.replace("\n", "\n  "),
        "after a paragraph": "text right before\n" + big,
        "a quote right after": "\n" + big + "> quote\n",
        "a reference": "[a]: http://x\n\n" + big,
    }
    parsed = parsed_sources(monkeypatch)
    for name, text in answers.items():
        for painter in (PLAIN_100, COLOUR):
            parsed.clear()
            shown = painter.markdown(text)
            cut = "r399c0" not in "".join(parsed)
            assert cut == (name in ("alone", "between", "two", "no line end")), name
            assert shown == painter.render(AnswerMarkdown(render.safe_text(text))), name
            assert ("a table of 400 rows, shown as written" in shown) == (name != "in a fence"), name


def test_a_big_tables_lines_that_fit_are_not_wrapped_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A big table's source went out as one ``Text``: every line word-wrapped, then the whole
    cut into lines again (each cut copying the rest), 1.8 s for 20,000 rows. A line that fits
    goes out as it is now; one too wide, or with a tab, is wrapped as before."""
    import rich.text

    wrapped: list[str] = []
    divide_line = rich.text.divide_line  # pyright: ignore[reportPrivateImportUsage]

    def counted(text: str, width: int, fold: bool = True) -> list[int]:
        wrapped.append(text)
        return divide_line(text, width, fold)

    monkeypatch.setattr(rich.text, "divide_line", counted)
    wide = "| " + "w " * 60 + "|"
    tabbed = "| a\tb | c | d |"
    big = _table(2_000) + wide + "\n" + tabbed + "\n"
    shown = PLAIN_100.markdown(big).splitlines()
    assert not any(line.startswith("| r") for line in wrapped)
    assert [line for line in wrapped if line.startswith("| ")] == [wide, tabbed.expandtabs()]
    assert shown[:3] == ["| h0 | h1 | h2 |", "|---|---|---|", "| r0c0 | r0c1 | r0c2 |"]
    assert (shown[-4] + " " + shown[-3]).split() == wide.split() and len(shown[-4]) <= 100
    assert shown[-2] == "| a     b | c | d |"


def test_an_answer_too_long_to_lay_out_is_shown_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """rich's markdown costs more than the length, and all of it on the event loop when the
    answer ends: one of 690 KB in 100,000 short lines held the screen (Esc too) 31 s of CPU.
    An answer over MARKDOWN_LINES lines or MARKDOWN_CHARS characters is shown as written, not
    parsed, its lines as they were, with a line saying why; one at the bounds stays markdown.
    A big table's rows are not counted (cut out before, ``test_a_table_too_big_...``)."""
    from tether.cli.markdown import MARKDOWN_CHARS, MARKDOWN_LINES

    parsed = parsed_sources(monkeypatch)
    many = "\n".join(f"*{n:04d}*" for n in range(MARKDOWN_LINES + 1))  # under MARKDOWN_CHARS
    wide = "# " + "word " * (MARKDOWN_CHARS // 5) + "\n\ttabbed **end**"
    for text, size in ((many, f"{MARKDOWN_LINES + 1:,} lines"), (wide, "2 lines")):
        answer = {"role": "assistant", "content": [{"type": "text", "text": text}], "stopReason": "stop"}
        for painter in (PLAIN_100, COLOUR):
            shown = render.ended_message(painter, answer, show_thinking=False)[0].splitlines()
            assert parsed == []
            dim = "\x1b[2m" if painter.color else ""
            assert (
                shown[-1].startswith(f"{dim}({size}, ")
                and "too long to lay out, shown as written)" in shown[-1]
            )
            if text is many:
                assert shown[:-1] == many.splitlines()
            else:
                assert " ".join(shown[:-2]).split() == wide.split("\n")[0].split()
                assert all(len(line) <= 100 for line in shown[:-1]) and shown[-2] == "        tabbed **end**"
    at_bounds = ("\n".join(f"*{n:04d}*" for n in range(MARKDOWN_LINES)), "word " * (MARKDOWN_CHARS // 5))
    for text in at_bounds:
        shown = PLAIN_100.markdown(text)
        assert len(parsed) == 1 and "*" not in shown and "too long" not in shown
        parsed.clear()
