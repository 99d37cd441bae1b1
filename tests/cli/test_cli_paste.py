"""A bracketed paste reaches the input box in time proportional to its length.

prompt-toolkit's parser appended each read of a paste to one string and searched all of it for
the end mark after every read: 73 s for a 5 MB paste read a kilobyte at a time, the screen
frozen. ``PasteParser`` searches each read alone (with the characters before it where the mark
may begin); these tests check it reads what prompt-toolkit's parser reads, however the terminal
cut the input. Then the paste reaches the input box as pi's editor puts it there: a large one as
a marker (``[paste #1 +50001 lines]``), the whole text sent.
"""

from __future__ import annotations

import random
import shutil
import sys
from pathlib import Path

import pytest
from cli_support import CliEnv, text_reply
from prompt_toolkit.input.vt100_parser import Vt100Parser
from prompt_toolkit.key_binding import KeyPress
from prompt_toolkit.keys import Keys
from tmux_support import Terminal, input_line

from tether.cli.interactive_paste import BURST, FOLD_CHARS, FOLD_LINES, BurstReader, PasteParser, Pastes


def keys(parser_class: type[Vt100Parser], reads: list[str]) -> list[tuple[object, str]]:
    got: list[KeyPress] = []
    parser = parser_class(got.append)
    for data in reads:
        parser.feed(data)
    parser.flush()
    return [(press.key, press.data) for press in got]


def typed_around_a_paste(
    terminal: Terminal, paste: Path, after: str, shown: str, *, bracketed: bool = True
) -> None:
    """Types ``see ``, pastes the file's text (bracketed, as tether asked: not when told so, the
    text typed as keys, its line ends carriage returns), types ``after``, and waits until the
    input box shows ``shown``."""
    terminal.wait_for("/help for commands")
    terminal.type("see ")
    terminal.wait_for(lambda s: input_line(s) == "› see")
    terminal.tmux("load-buffer", str(paste))
    terminal.tmux("paste-buffer", *(["-p"] if bracketed else []), "-t", "t")
    terminal.type(after)
    terminal.wait_for(lambda s: input_line(s) == shown)


def stored_user_messages(cli: CliEnv) -> list[object]:
    """The user messages of the one session the run stored, as stored."""
    from tether.session import SessionManager
    from tether.store import default_db_path

    with SessionManager.at(default_db_path({"TETHER_HOME": str(cli.home)})) as sessions:
        (record,) = sessions.list()
        messages = sessions.open(record.id, readonly=True).messages
        return [m["content"] for m in messages if m["role"] == "user"]


def test_pastes_read_in_pieces_are_the_keys_prompt_toolkit_reads() -> None:
    chooser = random.Random(7)
    for _ in range(500):
        text = "".join(
            chooser.choice(["a", "é", "\n", "\x1b", "[", "2", "0", "1", "~", "\x1b[A"]) for _ in range(30)
        )
        text = text.replace("\x1b[201~", "")
        stream = f"x\x1b[200~{text}\x1b[201~y\x1b[200~\x1b[201~\x1b[B\x1b[200~{text[::-1]}"
        cuts = sorted(chooser.sample(range(1, len(stream)), chooser.randint(0, 10)))
        reads = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
        assert keys(PasteParser, reads) == keys(Vt100Parser, [stream]), reads


def test_a_5_mb_paste_read_a_kilobyte_at_a_time_arrives_whole() -> None:
    pasted = ("word " * 20 + "\n") * 50_000
    stream = "\x1b[200~" + pasted + "\x1b[201~typed"
    reads = [stream[start : start + 1024] for start in range(0, len(stream), 1024)]
    got = keys(PasteParser, reads)
    assert got[0] == (Keys.BracketedPaste, pasted)
    assert "".join(data for _, data in got[1:]) == "typed"


def test_a_burst_of_text_in_one_read_is_a_paste() -> None:
    """A paste the terminal does not mark came as typed keys, each handled alone and the input
    box laid out again after each: 50 KB took 26 s and 1.2 GB, 1 MB went past 5 GB. A read of
    ``BURST`` characters of text (line ends and tabs in it) is one paste; the keys around it,
    a few characters of text among them, are what prompt-toolkit reads."""
    text = "".join(f"line {n}\tend\r" for n in range(100))
    few = "a" * (BURST - 1)
    stream = "x\x1b[A" + text + "\x1b[1;5A\x03" + few + "\x1b" + text + "\x7f" + text[:BURST]
    expected = [*keys(Vt100Parser, ["x\x1b[A"]), (Keys.BracketedPaste, text)]
    expected += keys(Vt100Parser, ["\x1b[1;5A\x03" + few + "\x1b" + text[0]])
    expected += [(Keys.BracketedPaste, text[1:]), *keys(Vt100Parser, ["\x7f"])]
    expected += [(Keys.BracketedPaste, text[:BURST])]
    assert keys(PasteParser, [stream]) == expected
    # a sequence begun in the read before ends before the paste; a bracketed paste stays one
    assert keys(PasteParser, ["\x1b[1;", "5A" + text]) == [
        (Keys.ControlUp, "\x1b[1;5A"),
        (Keys.BracketedPaste, text),
    ]
    inside = f"\x1b[200~{text}\x1b[201~{text}"
    assert keys(PasteParser, [inside]) == [(Keys.BracketedPaste, text)] * 2
    assert keys(PasteParser, [few]) == keys(Vt100Parser, [few])


def test_a_pastes_end_mark_outside_a_paste_is_no_key() -> None:
    """prompt-toolkit knows no ``ESC[201~`` of its own: outside a paste (one taken as a burst
    before its mark came, a terminal's stray one) it was read as Esc, which aborts a run, and
    ``[201~`` typed into the input box."""
    text = "t" * BURST
    assert keys(PasteParser, ["a\x1b[201~b"]) == [("a", "a"), ("b", "b")]
    assert keys(PasteParser, [text, "\x1b[201~"]) == [(Keys.BracketedPaste, text)]
    assert keys(PasteParser, [text + "\x1b[201~\x1b[200~x\x1b[201~"]) == [
        (Keys.BracketedPaste, text),
        (Keys.BracketedPaste, "x"),
    ]
    assert keys(PasteParser, ["\x1b[201~\x1b"]) == [(Keys.Escape, "\x1b")]  # a real Esc stays one


def test_the_reader_reads_a_burst_whole_and_a_key_as_it_comes() -> None:
    """A paste reached the parser a kilobyte at a time: each would have been a paste of its own."""
    import contextlib
    import os
    import select
    import threading

    reading, writing = os.pipe()
    pasted = "word " * 200_000

    def write(data: bytes) -> None:
        with contextlib.suppress(BrokenPipeError):  # the reader gone (the test failed)
            while data:
                data = data[os.write(writing, data) :]

    writer = threading.Thread(target=write, args=(pasted.encode(),))  # as the pipe takes it
    try:
        reader = BurstReader(reading)
        writer.start()
        select.select([reading], [], [])
        assert reader.read() == pasted
        writer.join()
        write(b"k")
        assert reader.read() == "k"
    finally:
        os.close(reading)
        writer.join()
        os.close(writing)


def test_the_interactive_mode_reads_its_terminal_with_it(tmp_path: Path) -> None:
    from prompt_toolkit.application.current import create_app_session
    from prompt_toolkit.history import InMemoryHistory
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from tether.agent import Agent
    from tether.cli.interactive import InteractiveApp
    from tether.cli.keybindings import DEFAULTS
    from tether.cli.screens import own_input
    from tether.session import AgentSession, SessionManager
    from tether.testing.scripted import ScriptedModel, reply

    stream = ScriptedModel([reply("ok")])
    with SessionManager.at(tmp_path / "s.db") as sessions, create_pipe_input() as pipe:
        core = AgentSession(
            Agent(model=stream.model, stream_fn=stream),
            sessions.create(str(tmp_path)),
            sessions=sessions,
            cwd=tmp_path,
        )
        with create_app_session(input=pipe, output=DummyOutput()):
            ui = InteractiveApp(cwd=tmp_path, bindings=DEFAULTS)
            app = ui.attach(core, history=InMemoryHistory())
            try:
                assert isinstance(getattr(app.input, "vt100_parser", None), PasteParser)
                assert isinstance(getattr(own_input(), "vt100_parser", None), PasteParser)  # the views'
            finally:
                ui.detach()


def test_a_paste_of_more_than_10_lines_or_1000_characters_is_a_marker_as_in_pi() -> None:
    pastes = Pastes()
    assert pastes.fold("a\r\nb\rc") == "a\nb\nc"  # small: the text, line ends as typed ones
    ten = "\n".join(["x" * 99] * FOLD_LINES)  # 10 lines, 999 characters
    assert pastes.fold(ten) == ten and pastes.fold("y" * FOLD_CHARS) == "y" * FOLD_CHARS
    lines = "line\n" * 50_000
    assert pastes.fold(lines) == "[paste #1 +50001 lines]"
    assert pastes.fold("z" * 1_500) == "[paste #2 1500 chars]"
    typed = "see [paste #1 +50001 lines] and [paste #2 1500 chars], not [paste #2 1501 chars]"
    sent = pastes.expand(typed)
    assert sent == f"see {lines} and {'z' * 1_500}, not [paste #2 1501 chars]"
    assert pastes.expand("[paste #3 +20 lines] typed by hand") == "[paste #3 +20 lines] typed by hand"
    # the echo of the message shows it as typed, once; another message as it is
    assert pastes.shown(sent) == typed and pastes.shown(sent) == sent


@pytest.mark.subprocess
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt install tmux)")
def test_a_large_paste_is_a_marker_in_the_input_box_and_sent_whole(cli: CliEnv, tmp_path: Path) -> None:
    """50,000 pasted lines filled the input box (and were laid out again on every key) and were
    printed to the scrollback as the user's message; pi's editor shows a marker, sends the whole."""
    pasted = "".join(f"pasted line {n}\n" for n in range(50_000))
    (tmp_path / "paste").write_text(pasted)
    environ = cli.env(TETHER_SCRIPTED=str(cli.script("paste", [text_reply("got it")])), TERM="xterm-256color")
    terminal = Terminal([sys.executable, "-m", "tether.cli"], str(cli.project), environ)
    try:
        typed_around_a_paste(
            terminal, tmp_path / "paste", " and that", "› see [paste #1 +50001 lines] and that"
        )
        terminal.send("Enter")
        screen = terminal.wait_for("got it")
        assert "› see [paste #1 +50001 lines] and that" in screen  # the message, folded
        assert "pasted line" not in screen
    finally:
        terminal.close()
    assert stored_user_messages(cli) == [f"see {pasted} and that"]


@pytest.mark.subprocess
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt install tmux)")
def test_a_paste_typed_as_keys_is_a_paste_too(cli: CliEnv, tmp_path: Path) -> None:
    """``tmux paste-buffer`` without ``-p`` (a terminal without bracketed paste) types the text:
    each line's end was an Enter, sending it, and each key was handled alone (1 MB: past 5 GB
    in 90 s). It is one paste now, a marker in the box, sent whole."""
    pasted = "".join(f"pasted line {n}\n" for n in range(100))
    (tmp_path / "paste").write_text(pasted)
    environ = cli.env(TETHER_SCRIPTED=str(cli.script("paste", [text_reply("got it")])), TERM="xterm-256color")
    terminal = Terminal([sys.executable, "-m", "tether.cli"], str(cli.project), environ)
    try:
        shown = "› see [paste #1 +101 lines]"
        typed_around_a_paste(terminal, tmp_path / "paste", "", shown, bracketed=False)
        terminal.type(" and that")  # not within SETTLE: it would be more of the paste
        terminal.wait_for(lambda s: input_line(s) == shown + " and that")
        terminal.send("Enter")
        terminal.wait_for("got it")
    finally:
        terminal.close()
    assert stored_user_messages(cli) == [f"see {pasted} and that"]


def test_the_cursor_steps_over_a_marker_and_never_rests_inside_one() -> None:
    from prompt_toolkit.buffer import Buffer

    from tether.cli.interactive_paste import step_over_markers

    pastes = Pastes()
    marker = pastes.fold("line\n" * 20)
    buffer = Buffer(multiline=True)
    step_over_markers(buffer, pastes)
    buffer.insert_text(f"ab {marker} cd [paste #9 +20 lines]")
    start = len("ab ")
    end = start + len(marker)
    assert pastes.spans(buffer.text) == [(start, end)]  # the hand-typed one is text
    buffer.cursor_position = end
    buffer.cursor_left()
    assert buffer.cursor_position == start  # Left from its end: before it
    buffer.cursor_right()
    assert buffer.cursor_position == end  # Right from its start: after it
    buffer.cursor_position = start + 4  # anywhere else (a click, Up): to its start
    assert buffer.cursor_position == start
    buffer.cursor_position = len(buffer.text) - 3  # inside a marker typed by hand: stays
    assert buffer.cursor_position == len(buffer.text) - 3
    assert pastes.marker_at(buffer.text, end, before=True) == (start, end)
    assert pastes.marker_at(buffer.text, start, before=False) == (start, end)
    assert pastes.marker_at(buffer.text, start, before=True) is None


@pytest.mark.subprocess
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt install tmux)")
def test_a_marker_is_one_unit_for_the_arrows_and_the_deleting_keys(cli: CliEnv, tmp_path: Path) -> None:
    """pi's editor moves over a paste's marker and deletes it as one character; tether's box
    moved into it and took it a character at a time (and the half left was sent as typed)."""
    pasted = "".join(f"pasted line {n}\n" for n in range(20))
    (tmp_path / "paste").write_text(pasted)
    environ = cli.env(TETHER_SCRIPTED=str(cli.script("paste", [text_reply("got it")])), TERM="xterm-256color")
    terminal = Terminal([sys.executable, "-m", "tether.cli"], str(cli.project), environ)
    try:
        typed_around_a_paste(terminal, tmp_path / "paste", " x", "› see [paste #1 +21 lines] x")
        terminal.send("Left", "Left", "Left")  # over " x", then over the marker
        terminal.type("A")
        terminal.send("Right")
        terminal.type("B")
        terminal.wait_for(lambda s: input_line(s) == "› see A[paste #1 +21 lines]B x")
        terminal.send("BSpace", "BSpace")  # B, then the whole marker
        terminal.wait_for(lambda s: input_line(s) == "› see A x")
        terminal.send("C-_")  # undo: the marker, and its paste, are back
        terminal.wait_for(lambda s: input_line(s) == "› see A[paste #1 +21 lines] x")
        terminal.send("Home", "Right", "Right", "Right", "Right", "Right", "Delete")
        terminal.wait_for(lambda s: input_line(s) == "› see A x")
        terminal.send("C-_")
        terminal.wait_for(lambda s: input_line(s) == "› see A[paste #1 +21 lines] x")
        terminal.send("End", "Left", "Left", "C-w")  # a word back: the marker
        terminal.wait_for(lambda s: input_line(s) == "› see A x")
        terminal.send("C-_")
        terminal.wait_for(lambda s: input_line(s) == "› see A[paste #1 +21 lines] x")
        terminal.send("Enter")
        terminal.wait_for("got it")
    finally:
        terminal.close()
    assert stored_user_messages(cli) == [f"see A{pasted} x"]


def test_the_external_editor_gets_the_pastes_and_unchanged_ones_fold_again() -> None:
    pastes = Pastes()
    first = "".join(f"first {n}\n" for n in range(20))
    second = "s" * 1_500
    typed = f"see {pastes.fold(first)} and {pastes.fold(second)}"
    assert typed == "see [paste #1 +21 lines] and [paste #2 1500 chars]"
    given = pastes.expanded(typed)
    assert given == f"see {first} and {second}"
    assert pastes.shown(given) == given  # not sent: no echo remembered
    edited = given.replace("see", "SEE").replace("first 3\n", "")
    changed = first.replace("first 3\n", "")  # changed in the editor: text; the other: its marker
    assert pastes.folded_again(edited, typed) == f"SEE {changed} and [paste #2 1500 chars]"


@pytest.mark.subprocess
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt install tmux)")
def test_ctrl_g_edits_the_pasted_text_not_its_marker(cli: CliEnv, tmp_path: Path) -> None:
    """The editor got ``[paste #1 +21 lines]``: the paste could not be read or changed there."""
    pasted = "".join(f"pasted line {n}\n" for n in range(20))
    (tmp_path / "paste").write_text(pasted)
    editor = tmp_path / "editor.sh"
    editor.write_text(f'#!/bin/sh\ncp "$1" {tmp_path / "seen"}\nsed -i \'s/see/SEE/\' "$1"\n')
    editor.chmod(0o755)
    environ = cli.env(
        TETHER_SCRIPTED=str(cli.script("paste", [text_reply("got it")])),
        TERM="xterm-256color",
        EDITOR=str(editor),
        VISUAL="",
    )
    terminal = Terminal([sys.executable, "-m", "tether.cli"], str(cli.project), environ)
    try:
        typed_around_a_paste(terminal, tmp_path / "paste", " x", "› see [paste #1 +21 lines] x")
        terminal.send("C-g")
        terminal.wait_for(lambda s: input_line(s) == "› SEE [paste #1 +21 lines] x")
        assert (tmp_path / "seen").read_text().rstrip("\n") == f"see {pasted} x"
        terminal.send("Enter")
        terminal.wait_for("got it")
    finally:
        terminal.close()
    assert stored_user_messages(cli) == [f"SEE {pasted} x"]
