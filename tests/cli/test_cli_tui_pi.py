"""What a pi user expects of the interactive mode, in a real terminal (tmux): the conversation
redrawn on resume (at 10,000 messages too), pi's keys (Ctrl-C clears and the run goes on, Esc
aborts, Shift+Enter adds a line, Ctrl+V attaches the clipboard's image), ``/compact``'s report
and an edit's coloured diff.

No assertion is about time: the 10,000-message resume checks what is drawn, the bench
(``bench/tui_views.py``) measures what it costs.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_support import CliEnv, text_reply, tool_reply
from tmux_support import NAP, Terminal, input_line, status_line, take_a_nap

pytestmark = [
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt install tmux)"),
    pytest.mark.subprocess,
]


def start(cli: CliEnv, script: Path, *args: str, colour: bool = False, **env: str) -> Terminal:
    extra = {"TETHER_SCRIPTED": str(script), "TERM": "xterm-256color", **env}
    environ = cli.env(**extra)
    if colour:
        environ.pop("NO_COLOR")
    terminal = Terminal([sys.executable, "-m", "tether.cli", *args], str(cli.project), environ)
    terminal.wait_for("/help for commands")
    return terminal


def stored_session(cli: CliEnv, turns: int) -> str:
    """A session of ``turns`` prompt / answer-with-a-tool-call / result turns (3 messages each)
    in this project, stored as a run would store it."""
    from tether.session import SessionManager
    from tether.store import default_db_path

    with SessionManager.at(default_db_path({"TETHER_HOME": str(cli.home)})) as sessions:
        session = sessions.create(cli.project)
        for turn in range(turns):
            session.append_message({"role": "user", "content": f"question number {turn}", "timestamp": 0})
            session.append_message(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": f"Answer **{turn}**:\nfirst line\nsecond line"},
                        {
                            "type": "toolCall",
                            "id": f"c{turn}",
                            "name": "read",
                            "arguments": {"path": f"{turn}.py"},
                        },
                    ],
                    "api": "x",
                    "provider": "x",
                    "model": "x",
                    "usage": {
                        "input": 10,
                        "output": 5,
                        "cacheRead": 0,
                        "cacheWrite": 0,
                        "totalTokens": 15,
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.001},
                    },
                    "stopReason": "toolUse",
                    "timestamp": 0,
                }
            )
            session.append_message(
                {
                    "role": "toolResult",
                    "toolCallId": f"c{turn}",
                    "toolName": "read",
                    "content": [
                        {"type": "text", "text": "\n".join(f"line {n} of {turn}.py" for n in range(12))}
                    ],
                    "isError": False,
                    "timestamp": 0,
                }
            )
        session_id = session.id
        session.close()
    return session_id


def test_continue_redraws_the_end_of_a_10000_message_conversation(cli: CliEnv) -> None:
    stored_session(cli, 3334)  # 10,002 messages
    terminal = start(cli, cli.script("none", [text_reply("unused")]), "-c")
    try:
        screen = terminal.wait_for(lambda s: "resumed: 10002 messages" in s and input_line(s) == "›")
        history = "\n".join(line.rstrip() for line in screen.split("/help for commands")[-1].splitlines())
        # The newest turns, as the scrollback showed them: prompt, answer (line breaks kept),
        # the tool call and its folded result; older ones are left to Ctrl-O.
        assert "› question number 3333" in history and "Answer 3333:" in history
        assert "Answer 3333:\nfirst line\nsecond line" in history
        assert "✓ read path=3333.py" in history and "more lines" in history
        assert "earlier messages above this point: Ctrl-O" in history
        assert "question number 3000" not in history  # not every message: a couple of screens
        order = [int(n) for n in re.findall(r"› question number (\d+)", history)]
        assert order == sorted(order) and order[-1] == 3333  # oldest first, as it happened
        terminal.send("C-o")  # and the transcript still reaches the rest, from the end
        terminal.wait_for("q/Esc close")
        terminal.send("q")
        terminal.wait_for(lambda s: input_line(s) == "›")
        terminal.send("C-d")
        terminal.wait_until_dead()
    finally:
        terminal.close()


def test_resume_redraws_a_short_conversation_whole(cli: CliEnv) -> None:
    session_id = stored_session(cli, 2)
    terminal = start(cli, cli.script("none", [text_reply("unused")]), "--resume", session_id)
    try:
        screen = terminal.wait_for(lambda s: "resumed: 6 messages" in s and input_line(s) == "›")
        history = screen.split("/help for commands")[-1]
        assert "› question number 0" in history and "› question number 1" in history
        assert "earlier messages" not in history
        terminal.send("C-d")
    finally:
        terminal.close()


def test_ctrl_c_clears_the_input_while_the_run_goes_on_and_esc_aborts(cli: CliEnv) -> None:
    script = cli.script("keys", [tool_reply("bash", {"command": NAP}, "call_nap"), text_reply("never")])
    terminal = start(cli, script)
    try:
        take_a_nap(terminal)
        terminal.type("half-typed steer")
        terminal.send("C-c")  # pi: clears the input, the run goes on
        screen = terminal.wait_for(lambda s: input_line(s) == "»")
        assert "● working" in status_line(screen) and "Aborted" not in screen
        terminal.send("C-c")  # on an empty input: the hint, still working
        terminal.wait_for(  # the hint printed, and the live area drawn again under it: still working
            lambda s: (
                "Esc aborts the run" in s and "● working" in status_line(s.split("Esc aborts the run")[-1])
            )
        )
        terminal.type("typed text")
        terminal.send("Escape")  # Esc aborts, whatever is typed; the text stays
        screen = terminal.wait_for(
            lambda s: "Aborted" in s and "● working" not in status_line(s) and input_line(s) == "› typed text"
        )
        assert "never" not in screen.split("take a nap")[-1]
        terminal.send("C-c")
        terminal.wait_for(lambda s: input_line(s) == "›")
        terminal.send("C-c")
        terminal.send("C-c")  # twice on an empty input: exit
        terminal.wait_until_dead()
    finally:
        terminal.close()


def test_ctrl_z_stops_like_a_shell_job_and_fg_brings_it_back(cli: CliEnv) -> None:
    """pi's Ctrl+Z (``app.suspend``), under an interactive shell (a stop signal only stops a
    process group with a shell to come back to): the shell reports the job stopped, and ``fg``
    brings the input box back with its text, working."""
    environ = cli.env(TETHER_SCRIPTED=str(cli.script("z", [text_reply("still here")])), TERM="xterm-256color")
    terminal = Terminal(
        ["bash", "--norc", "--noprofile", "-i"], str(cli.project), {**environ, "PS1": "shell$ "}
    )
    try:
        terminal.wait_for("shell$")
        terminal.type(f"{sys.executable} -m tether.cli")
        terminal.send("Enter")
        terminal.wait_for("/help for commands")
        terminal.type("half typed")
        terminal.wait_for(lambda s: input_line(s) == "› half typed")
        terminal.send("C-z")
        terminal.wait_for(lambda s: "Stopped" in s and s.rstrip().endswith("shell$"))
        terminal.type("fg")
        terminal.send("Enter")
        terminal.wait_for(lambda s: input_line(s) == "› half typed")
        terminal.send("Enter")
        terminal.wait_for("still here")
        terminal.send("C-d")
        terminal.wait_for(lambda s: s.rstrip().endswith("shell$"))
    finally:
        terminal.close()


def test_shift_enter_adds_a_line_in_its_terminal_forms_and_under_tmux(cli: CliEnv) -> None:
    script = cli.script("lines", [text_reply("got three lines")])
    terminal = start(cli, script)
    try:
        terminal.tmux("set-option", "-s", "extended-keys", "on")  # as pi's docs/tmux.md asks
        terminal.type("one")
        # echoed: the loop is past the start, where tether asks the terminal for extended keys
        # (tmux types a Shift+Enter as the text "S-Enter" to a program that has not asked)
        terminal.wait_for(lambda s: input_line(s) == "› one")
        terminal.send("S-Enter")  # tmux forwards it as CSI 13;2u once tether asked for it
        terminal.type("two")
        terminal.type("\x1b[27;2;13~")  # xterm's modifyOtherKeys form
        terminal.type("three")
        terminal.wait_for(lambda s: "three" in s and input_line(s) == "› one")
        terminal.send("Enter")
        screen = terminal.wait_for("got three lines")
        assert "S-Enter" not in screen and "27;2;13" not in screen
    finally:
        terminal.close()
    from tether.session import SessionManager
    from tether.store import default_db_path

    with SessionManager.at(default_db_path({"TETHER_HOME": str(cli.home)})) as sessions:
        (record,) = sessions.list()
        messages = sessions.open(record.id, readonly=True).messages
        assert [m["content"] for m in messages if m["role"] == "user"] == ["one\ntwo\nthree"]


def test_ctrl_v_attaches_the_clipboards_image(cli: CliEnv) -> None:
    """The clipboard program is a script serving a real PNG (no display in a test), then only
    text, which Ctrl+V types into the input box as pi does; without one reachable, Ctrl+V says so
    in one line."""
    png = bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201e221bc330000000049454e44ae426082"
    )
    bin_dir = cli.home / "bin"
    bin_dir.mkdir()
    (cli.home / "image.png").write_bytes(png)
    fake = bin_dir / "wl-paste"
    fake.write_text(
        f'#!/bin/sh\nif [ "$1" = --list-types ]; then echo image/png; echo text/plain; '
        f"else cat {cli.home / 'image.png'}; fi\n"
    )
    fake.chmod(0o755)
    script = cli.script("image", [text_reply("a one-pixel image")])
    terminal = start(cli, script, PATH=f"{bin_dir}:/usr/bin:/bin", WAYLAND_DISPLAY="wayland-test")
    try:
        terminal.send("C-v")
        terminal.wait_for("image 1: image/png")
        terminal.type("what is this")
        terminal.send("Enter")
        terminal.wait_for("a one-pixel image")
    finally:
        terminal.close()
    from tether.session import SessionManager
    from tether.store import default_db_path

    with SessionManager.at(default_db_path({"TETHER_HOME": str(cli.home)})) as sessions:
        (record,) = sessions.list()
        (user,) = [m for m in sessions.open(record.id, readonly=True).messages if m["role"] == "user"]
        content = user["content"]
        assert isinstance(content, list) and content[0] == {"type": "text", "text": "what is this"}
        assert content[1]["type"] == "image" and content[1]["mimeType"] == "image/png"

    # text only: typed into the input box, as pi pastes it (a terminal's own paste may be another key)
    fake.write_text(
        '#!/bin/sh\nif [ "$1" = --list-types ]; then echo "text/plain;charset=utf-8"; echo text/plain; '
        "else printf 'pasted words'; fi\n"
    )
    terminal = start(cli, script, PATH=f"{bin_dir}:/usr/bin:/bin", WAYLAND_DISPLAY="wayland-test")
    try:
        terminal.type("see ")
        terminal.send("C-v")
        screen = terminal.wait_for(lambda s: input_line(s) == "› see pasted words")
        assert "image 1" not in screen and "paste:" not in screen
    finally:
        terminal.close()

    fake.unlink()
    terminal = start(cli, script, PATH=f"{bin_dir}:/usr/bin:/bin", WAYLAND_DISPLAY="", DISPLAY="")
    try:
        terminal.send("C-v")
        screen = terminal.wait_for("paste: no clipboard reachable")
        assert "image 1" not in screen and "Traceback" not in screen
    finally:
        terminal.close()


def test_compact_reports_once_and_folds_the_summary(cli: CliEnv) -> None:
    (cli.project / ".tether").mkdir()
    (cli.project / ".tether" / "settings.json").write_text(
        json.dumps({"compaction": {"keepRecentTokens": 1}})
    )
    script = cli.script(
        "compact",
        [
            text_reply("first answer " * 40),
            text_reply("second answer " * 40),
            text_reply("## Goal\nThe user asked two questions.\n\nMore detail here."),
        ],
    )
    terminal = start(cli, script)
    try:
        for prompt in ("first question", "second question"):
            terminal.type(prompt)
            terminal.send("Enter")
            terminal.wait_for(
                lambda s, p=prompt: f"› {p}" in s and input_line(s) == "›" and "working" not in status_line(s)
            )
        terminal.type("/compact")
        terminal.send("Enter")
        screen = terminal.wait_for(lambda s: "✓ compacted the conversation" in s and input_line(s) == "›")
        report = screen.split("› /compact")[-1]
        assert "nothing to compact" not in report
        assert "▸ summary (" in report and "Goal" in report and "[Ctrl-O to read]" in report
        assert "More detail here." not in report  # folded: the transcript has it
        terminal.send("C-d")
    finally:
        terminal.close()


def test_an_edit_shows_its_diff_in_colour_with_the_changed_words_marked(cli: CliEnv) -> None:
    (cli.project / "app.py").write_text("def greet():\n    return 'hello world'\n\nprint(greet())\n")
    edit = {"path": "app.py", "old_string": "return 'hello world'", "new_string": "return 'goodbye world'"}
    script = cli.script("edit", [tool_reply("edit", edit, "call_edit"), text_reply("Edited.")])
    terminal = start(cli, script, colour=True)
    try:
        terminal.type("change the greeting")
        terminal.send("Enter")
        screen = terminal.wait_for(lambda s: "Edited." in s or "allow?" in s)
        if "allow?" in screen:
            terminal.send("y")
            terminal.wait_for("Edited.")
        screen = terminal.screen()
        assert "-    return 'hello world'" in screen and "+    return 'goodbye world'" in screen
        assert "--- a/app.py" not in screen  # the tool line names the file
        coloured = terminal.screen(escapes=True)
        removed = (
            coloured[coloured.index("-\x1b") - 40 : coloured.index("hello") + 20]
            if "-\x1b" in coloured
            else ""
        )
        assert re.search(r"\x1b\[[0-9;]*31m", coloured) and re.search(r"\x1b\[[0-9;]*32m", coloured)
        assert re.search(r"\x1b\[[0-9;]*7[;m][^\x1b]*(hello|goodbye)", coloured), removed  # reverse video
        terminal.send("C-d")
    finally:
        terminal.close()


def visible(terminal: Terminal, check: Callable[[str], bool]) -> str:
    """Wait until the visible screen (not the scrollback) passes ``check``."""
    deadline = time.monotonic() + 10
    screen = ""
    while time.monotonic() < deadline:
        screen = terminal.tmux("capture-pane", "-p", "-t", "t")
        if check(screen):
            return screen
        time.sleep(0.1)
    raise AssertionError(f"timed out; screen:\n{screen}")


def test_resize_mid_stream_leaves_one_copy_and_80_columns_keep_ctx_and_working(cli: CliEnv) -> None:
    """A partial answer of long lines, then the model stalls; the terminal narrows (tmux reflows
    what it shows) and widens again: one copy of the answer on screen, and the status line keeps
    the context's fill and the working indicator at 80 columns. (What tmux's reflow pushed into
    the scrollback is the terminal's: only the screen is checked.)"""
    from test_cli_interactive_tmux import loopback_in_thread

    from tether.testing.loopback import Reply

    text = " ".join(f"word{n}" for n in range(60)) + "\\n\\nMARKER-END"
    head = (
        'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"' + text + '"}}]}\n\n'
    ).encode()
    with loopback_in_thread([Reply(head + b"data: [DONE]\n\n", stall_after=len(head))]) as server:
        config = cli.home / "config"
        config.mkdir(exist_ok=True)
        provider = {
            "baseUrl": server.url,
            "api": "openai-completions",
            "models": [{"id": "a-rather-long-model-name"}],
        }
        (config / "models.json").write_text(json.dumps({"providers": {"stall": provider}}))
        command = [
            sys.executable,
            "-m",
            "tether.cli",
            "--model",
            "stall/a-rather-long-model-name",
            "--no-session",
        ]
        terminal = Terminal(command, str(cli.project), cli.env(TERM="xterm-256color"))
        try:
            terminal.wait_for("/help for commands")
            terminal.type("hello")
            terminal.send("Enter")
            terminal.wait_for(lambda s: "MARKER-END" in s and "● working" in status_line(s))
            for width in ("80", "60", "100"):
                terminal.tmux("resize-window", "-t", "t", "-x", width)
                visible(
                    terminal,
                    lambda s: s.count("word0 ") == 1 and "ctx 0% · ● " in s.rstrip().splitlines()[-1],
                )
            terminal.tmux("resize-window", "-t", "t", "-x", "80")
            screen = terminal.wait_for(
                lambda s: re.search(r"waiting for the model… \d+ s", status_line(s)) is not None
            )
            status = status_line(screen)
            assert "ctx " in status and len(status) <= 80
            visible(terminal, lambda s: s.count("word0 ") == 1)
            terminal.send("Escape")
            terminal.wait_for("Aborted", timeout=10)
        finally:
            terminal.close()


def everything(terminal: Terminal) -> list[str]:
    """The scrollback and the screen as the terminal holds them: rows not joined (``-J`` would
    join back what the terminal itself wrapped), trailing blanks dropped."""
    text = terminal.tmux("capture-pane", "-p", "-S", "-", "-t", "t")
    return [line.rstrip() for line in text.rstrip().splitlines()]


def test_a_width_change_draws_again_what_was_printed_with_one_input_box(cli: CliEnv) -> None:
    """tmux rewraps every row on a narrower terminal but keeps the blank rows at the bottom: the
    top of the input box went up into the scrollback, where no cursor reaches, and stale copies
    stayed there. pi clears the screen and the scrollback on a width change and draws again what
    it printed; so does tether. After narrowing and after widening: one input box and one status
    line in the whole scrollback, each thing printed once, and the answer wrapped at words at
    the new width (a terminal's rewrap cuts words)."""
    words = [f"word{n}" for n in range(60)]
    more = "\n\n".join(f"paragraph {n}" for n in range(20))  # the screen full: the rest scrolled up
    terminal = start(cli, cli.script("wide", [text_reply(" ".join(words) + "\n\n" + more)]))
    try:
        terminal.type("first question")
        terminal.send("Enter")
        terminal.wait_for(
            lambda s: "paragraph 19" in s and input_line(s) == "›" and "working" not in status_line(s)
        )
        for first, width in ((95, 50), (90, 40), (45, 100)):  # dragged, 5 columns at a time
            for step in range(first, width, 5 if width > first else -5):
                terminal.tmux("resize-window", "-t", "t", "-x", str(step))
            terminal.tmux("resize-window", "-t", "t", "-x", str(width))
            deadline = time.monotonic() + 10
            while True:  # drawn again: wrapped at words, nothing cut or lost; the box as wide
                rows = everything(terminal)
                answer = " ".join(row for row in rows if row.startswith("word")).split()
                if (answer == words and "─" * width in rows) or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert answer == words, rows
            assert all(len(row) <= width for row in rows)
            assert sum(" · thinking " in row for row in rows) == 1, rows  # one status line
            assert sum(row == "─" * width for row in rows) == 1, rows  # one input box (its rule)
            assert sum(row.startswith("tether · scripted/wide") for row in rows) == 1, rows
            assert sum(row == "› first question" for row in rows) == 1, rows
            assert input_line("\n".join(rows)) == "›"
        terminal.send("C-d")
        terminal.wait_until_dead()
    finally:
        terminal.close()


def test_completion_menus_open_as_you_type_above_the_status_line(cli: CliEnv) -> None:
    for name in ("src/utils/helpers_config.py", "src/main.py", "logs/helpers.log"):
        (cli.project / name).parent.mkdir(parents=True, exist_ok=True)
        (cli.project / name).write_text("x = 1\n")
    (cli.project / ".gitignore").write_text("logs/\n")
    subprocess.run(["git", "init", "-q"], cwd=cli.project, check=True)
    terminal = start(cli, cli.script("none", [text_reply("seen")]))
    try:
        terminal.type("/co")  # no Tab: the menu opens as you type
        screen = terminal.wait_for(lambda s: "/compact" in s and "/copy" in s)
        assert (
            status_line(screen) == screen.rstrip().splitlines()[-1].strip()
        )  # the status line is still last
        assert input_line(screen) == "› /co"
        terminal.send("Escape")  # closes the menu, keeps the text
        terminal.wait_for(lambda s: "/compact" not in s and input_line(s) == "› /co")
        terminal.send("C-c")
        terminal.type("look at @helpers")
        screen = terminal.wait_for("src/utils/helpers_config.py")
        assert "logs/helpers.log" not in screen  # .gitignore
        terminal.send("Down", "Enter")  # pick it
        terminal.wait_for(lambda s: input_line(s) == "› look at @src/utils/helpers_config.py")
        terminal.send("C-d")
    finally:
        terminal.close()


def sessions_here(cli: CliEnv) -> list[tuple[str, list[str]]]:
    """Each stored session's id and user prompts, oldest session first."""
    from tether.session import SessionManager
    from tether.store import default_db_path

    with SessionManager.at(default_db_path({"TETHER_HOME": str(cli.home)})) as sessions:
        out: list[tuple[str, list[str]]] = []
        for record in sorted(sessions.list(), key=lambda r: r.id):
            messages = sessions.open(record.id, readonly=True).messages
            out.append((record.id, [str(m["content"]) for m in messages if m["role"] == "user"]))
        return out


def test_resume_picker_fork_picker_clone_share_and_trust(cli: CliEnv) -> None:
    for prompt in ("alpha project notes", "beta release plan"):
        cli.run("-p", prompt, script=cli.script(prompt.split()[0], [text_reply(f"answer to {prompt}")]))
    script = cli.script("more", [text_reply("second answer"), text_reply("unused")])
    terminal = Terminal(
        [sys.executable, "-m", "tether.cli", "-r"],
        str(cli.project),
        cli.env(TETHER_SCRIPTED=str(script), TERM="xterm-256color"),
    )
    try:
        terminal.wait_for("Resume a session · type to search")  # -r: the searchable picker
        terminal.type("alpha")
        terminal.wait_for(lambda s: "1 of 2" in s)
        terminal.send("Enter")
        screen = terminal.wait_for(lambda s: "resumed: 2 messages" in s and input_line(s) == "›")
        assert "› alpha project notes" in screen and "answer to alpha project notes" in screen
        terminal.type("second question")
        terminal.send("Enter")
        terminal.wait_for("second answer")

        terminal.type("/fork")  # pi's /fork: pick one of your messages
        terminal.send("Enter")
        terminal.wait_for("Fork from which message?")
        terminal.send("Up", "Enter")  # the cursor starts on the newest: up to the first
        terminal.wait_for(
            lambda s: "forked into new session" in s and input_line(s) == "› alpha project notes"
        )
        terminal.send("C-c")
        terminal.type("/clone")
        terminal.send("Enter")
        terminal.wait_for(lambda s: "cloned into new session" in s and input_line(s) == "›")

        terminal.type("/share")
        terminal.send("Enter")
        screen = terminal.wait_for(
            lambda s: "shared as file://" in " ".join(s.split()) and input_line(s) == "›"
        )
        address = re.search(r"shared as (file://\S+) \(a local file", "".join(screen.split("\n")))
        assert address is not None
        page = Path(address.group(1).removeprefix("file://"))
        assert page.read_text().startswith("<!doctype html>")

        prompts = cli.project / ".tether" / "prompts"  # brought by the project meanwhile
        prompts.mkdir(parents=True)
        (prompts / "ship.md").write_text("ship it")
        terminal.type("/trust")
        terminal.send("Enter")
        screen = terminal.wait_for("Trust all of the above")
        assert "prompt templates, slash commands from" in screen and "/ship" in screen
        terminal.send("y")
        terminal.wait_for(
            lambda s: "it applies from the next start" in " ".join(s.split()) and input_line(s) == "›"
        )
        terminal.send("C-d")
        terminal.wait_until_dead()
    finally:
        terminal.close()
    trusted = json.loads((cli.home / "config" / "trusted-folders.json").read_text())
    assert trusted == [{"path": str(cli.project.resolve()), "grants": ["prompts"]}]
    stored = sessions_here(cli)
    prompts = [users for _, users in stored if users]
    # Resumed and continued; the fork before the first message and the clone of it hold nothing
    # (the message went back to the input box).
    assert sorted(prompts) == [["alpha project notes", "second question"], ["beta release plan"]]
