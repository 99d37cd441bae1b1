"""Extensions in the interactive mode, in a real terminal (tmux): the rm guard's question is asked
like a tool approval (declined with ``n``, then allowed with ``y``), an extension command's answer
is printed, and ``/help`` lists the user's templates and skills."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from cli_support import CliEnv, text_reply, tool_reply
from test_cli_interactive_tmux import Terminal
from tmux_support import NAP, input_line, started, status_line

pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt install tmux)"),
]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "extensions"


def test_extension_dialogs_and_commands_in_the_terminal(cli: CliEnv) -> None:
    (cli.project / "build").mkdir()
    (cli.project / "app.py").write_text("x = 1  # FIXME: rename x\n")
    prompts = cli.home / "config" / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "review.md").write_text("---\ndescription: Review a file carefully\n---\nReview $1")
    script = cli.script(
        "chat",
        [
            tool_reply("bash", {"command": "rm -rf build"}, "call_1"),
            text_reply("Kept the build folder."),
            tool_reply("bash", {"command": "rm -rf build"}, "call_2"),
            text_reply("Removed the build folder."),
        ],
    )
    env = cli.env(TETHER_SCRIPTED=str(script), TERM="xterm-256color")
    command = [sys.executable, "-m", "tether.cli", "-y", "--no-session"]
    command += ["-e", str(EXAMPLES / "rm_guard.py"), "-e", str(EXAMPLES / "todo_command.py")]
    terminal = Terminal(command, str(cli.project), env)
    try:
        terminal.wait_for("/help for commands")
        terminal.type("clean up")
        terminal.send("Enter")
        terminal.wait_for("Allow dangerous command? rm -rf build")
        terminal.send("n")
        screen = terminal.wait_for("Kept the build folder.")
        assert "The user did not allow" in screen and (cli.project / "build").is_dir()

        terminal.type("clean up, really")
        terminal.send("Enter")
        terminal.wait_for(
            lambda s: "Allow dangerous command? rm -rf build" in s.split("clean up, really")[-1]
        )
        terminal.send("y")
        terminal.wait_for("Removed the build folder.")
        assert not (cli.project / "build").exists()

        terminal.type("/todos")
        terminal.send("Enter")
        terminal.wait_for("app.py:1: x = 1  # FIXME: rename x")

        terminal.type("/help")
        terminal.send("Enter")
        screen = terminal.wait_for("From your prompts, skills and extensions:")
        assert "/review" in screen and "Review a file carefully" in screen and "/todos" in screen
        terminal.send("C-d")
    finally:
        terminal.close()


def test_always_answers_that_extension_question_and_nothing_else(cli: CliEnv) -> None:
    """ "a" to the rm guard's question skips that same question later in the session; the tool
    approvals are still asked (it is not "approve every call")."""
    (cli.project / "build").mkdir()
    script = cli.script(
        "chat",
        [
            tool_reply("bash", {"command": "rm -rf build"}, "call_1"),
            text_reply("First done."),
            tool_reply("bash", {"command": "rm -rf build"}, "call_2"),
            text_reply("Second done."),
        ],
    )
    env = cli.env(TETHER_SCRIPTED=str(script), TERM="xterm-256color")
    # --sandbox off: a confined command needs no approval, and this is about the approvals
    command = [sys.executable, "-m", "tether.cli", "--no-session", "--sandbox", "off"]
    command += ["-e", str(EXAMPLES / "rm_guard.py")]
    terminal = Terminal(command, str(cli.project), env)
    try:
        terminal.wait_for("/help for commands")
        terminal.type("clean up")
        terminal.send("Enter")
        terminal.wait_for("Allow dangerous command? rm -rf build")
        terminal.send("a")
        terminal.wait_for("Run command: rm -rf build")  # the tool approval is still asked
        terminal.send("y")
        terminal.wait_for("First done.")
        assert not (cli.project / "build").exists()

        (cli.project / "build").mkdir()
        terminal.type("again")
        terminal.send("Enter")
        screen = terminal.wait_for(lambda s: "Run command: rm -rf build" in s.split("again")[-1])
        assert "Allow dangerous command?" not in screen.split("again")[-1]  # remembered
        terminal.send("y")
        terminal.wait_for("Second done.")
        assert not (cli.project / "build").exists()
        terminal.send("C-d")
    finally:
        terminal.close()


def test_status_widget_editor_and_shortcut_in_the_terminal(cli: CliEnv) -> None:
    """The notes example in a real terminal: its ``alt+n`` shortcut fills the input box
    (``set_editor_text``), ``/note`` opens the multi-line editor, the note shows as a widget
    until the next prompt, and the status line says which tool runs."""
    script = cli.script(
        "chat",
        [tool_reply("bash", {"command": "sleep 3"}, "call_1"), text_reply("Slept on it.")],
    )
    env = cli.env(TETHER_SCRIPTED=str(script), TERM="xterm-256color")
    command = [sys.executable, "-m", "tether.cli", "-y", "--no-session", "-e", str(EXAMPLES / "notes.py")]
    terminal = Terminal(command, str(cli.project), env)
    try:
        terminal.wait_for("/help for commands")
        terminal.send("M-n")
        terminal.wait_for("› /note")
        terminal.type("check the tests")
        terminal.send("Enter")
        terminal.wait_for("Ctrl-S accept")
        terminal.send("End")
        terminal.send("Enter")
        terminal.type("and the docs")
        terminal.send("C-s")
        screen = terminal.wait_for("note: and the docs")
        assert "note: check the tests" in screen and "the note goes with your next prompt" in screen
        terminal.type("go")
        terminal.send("Enter")
        screen = terminal.wait_for("running bash")
        assert "note: check the tests" not in screen.split("go")[-1]
        screen = terminal.wait_for("Slept on it.")
        terminal.wait_for(lambda s: "running bash" not in s)
        terminal.send("C-d")
    finally:
        terminal.close()


RENDERER = """
def setup(api):
    @api.command("remind")
    def remind(args, ctx):
        api.send_message(args, custom_type="remind.note", trigger_turn=True)

    @api.command("plain")
    def plain(args, ctx):
        api.send_message(args, custom_type="plain.note", trigger_turn=True)

    api.register_message_renderer("remind.note", lambda message, expanded: ["reminder:", "  " + message["content"]])
"""


def shown_before(screen: str, first: str, then: str) -> bool:
    """``first`` is on ``screen`` and ``then`` is below it."""
    return first in screen and then in screen.split(first, 1)[1]


def test_extension_messages_are_shown_and_a_switch_can_be_cancelled(cli: CliEnv) -> None:
    """An extension's message (``send_message``) is shown under its type, through the extension's
    renderer when it has one; ``/new`` asks ``confirm_changes``'s question and a no keeps the
    conversation."""
    extension = cli.home / "renders.py"
    extension.write_text(RENDERER)
    script = cli.script("chat", [text_reply("Noted the reminder."), text_reply("Noted the plain one.")])
    env = cli.env(TETHER_SCRIPTED=str(script), TERM="xterm-256color")
    command = [sys.executable, "-m", "tether.cli", "-e", str(extension)]
    command += ["-e", str(EXAMPLES / "confirm_changes.py")]
    terminal = Terminal(command, str(cli.project), env)
    try:
        terminal.wait_for("/help for commands")
        # Each note is printed through patch_stdout's writer thread, not with the frame that draws
        # the run: wait until the note and, below it, its reply are both shown, rather than read the
        # screen once at the reply's first sight; a failure prints the whole screen (an assert's
        # repr cuts it to 240 characters).
        terminal.type("/remind water the plants")
        terminal.send("Enter")
        terminal.wait_for(
            lambda s: shown_before(s, "[remind.note]\nreminder:\n  water the plants", "Noted the reminder.")
        )
        terminal.type("/plain buy bread")
        terminal.send("Enter")
        terminal.wait_for(lambda s: shown_before(s, "[plain.note]\nbuy bread", "Noted the plain one."))

        terminal.type("/new")
        terminal.send("Enter")
        terminal.wait_for("Leave this conversation? for a new session")
        terminal.send("n")
        screen = terminal.wait_for("cancelled by extension confirm_changes: kept the conversation")
        assert "new session" not in screen.split("Leave this conversation?")[-1].replace(
            "for a new session", ""
        )
        terminal.send("C-d")
    finally:
        terminal.close()


NAPPER = """
def setup(api):
    @api.command("nap")
    def nap(args, ctx):
        api.send_user_message("take a nap")
"""


def test_a_run_an_extension_started_is_shown_working_steered_and_aborted(cli: CliEnv) -> None:
    """The screen followed only the runs it started itself: an extension's (``send_user_message``
    from its command, which starts once the command ended) went on with no "● working", Enter
    started another prompt instead of steering it, and Esc did not abort it."""
    extension = cli.home / "napper.py"
    extension.write_text(NAPPER)
    script = cli.script(
        "chat", [tool_reply("bash", {"command": NAP}), text_reply("this answer is never reached")]
    )
    env = cli.env(TETHER_SCRIPTED=str(script), TERM="xterm-256color")
    command = [sys.executable, "-m", "tether.cli", "-y", "--no-session", "-e", str(extension)]
    terminal = Terminal(command, str(cli.project), env)
    try:
        terminal.wait_for(started)
        terminal.type("/nap")
        terminal.send("Enter")
        terminal.wait_for(lambda s: "● working" in status_line(s) and f"bash command={NAP}" in s)
        terminal.type("hurry up")
        terminal.send("Enter")
        terminal.wait_for("steer: hurry up")
        terminal.send("Escape")
        screen = terminal.wait_for(lambda s: "Aborted" in s and input_line(s) == "› hurry up")
        assert "this answer is never reached" not in screen
        terminal.wait_for(lambda s: status_line(s) != "" and "● working" not in status_line(s))
        terminal.send("C-d")
    finally:
        terminal.close()
