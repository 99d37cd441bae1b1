"""The interactive mode in a real terminal: tmux runs ``tether``, we type and read the screen.

One scripted conversation walks through what a person does: a prompt and its streamed answer, a
command the user declines (``n``), one approved once (``y``) whose long output is folded (then
expanded with Ctrl-O), "always" (``a``), steering (Enter) and a follow-up (Alt-Enter) typed while
a tool runs (shown as pending chips, then delivered in order), ``/session`` while a command runs, Esc aborting it, ``/name`` and ``/session`` again, and Ctrl-D
to exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import sys
import threading
import time
from collections.abc import Generator

import pytest
from cli_support import CliEnv, alive, text_reply, tool_reply
from tmux_support import NAP, Terminal, input_line, started, take_a_nap

from tether.testing.loopback import LoopbackServer, Reply

"""A command that runs until the test lets it end (no race with the typing)."""

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None, reason="tmux is not installed (apt install tmux)"
)


def colours(screen: str) -> set[str]:
    """The SGR parameters that set a foreground or background colour (not resets like 39/49)."""
    params = {p for seq in re.findall(r"\x1b\[([0-9;]*)m", screen) for p in seq.split(";")}
    return {
        p for p in params if p.isdigit() and (30 <= int(p) <= 37 or 40 <= int(p) <= 47 or int(p) in (38, 48))
    }


def footer_lines(screen: str) -> tuple[int, int, int]:
    """The transcript view's ``lines FIRST-LAST of COUNT`` (zeros while it is not drawn)."""
    found = re.search(r"lines (\d+)-(\d+) of (\d+)", screen)
    if found is None:
        return 0, 0, 0
    first, last, count = (int(g) for g in found.groups())
    return first, last, count


@pytest.mark.subprocess
def test_interactive_session_in_tmux(cli: CliEnv) -> None:
    script = cli.script(
        "chat",
        [
            text_reply("Hello from the ", "**scripted** model."),
            tool_reply("bash", {"command": "echo should-not-run"}, "call_no"),
            text_reply("Understood, not running it."),
            tool_reply("bash", {"command": "seq 1 20"}, "call_seq"),
            text_reply("Counted to twenty."),
            tool_reply("bash", {"command": NAP}, "call_nap"),
            text_reply("Heard you: steering arrived."),
            text_reply("Following up as asked."),
            tool_reply("bash", {"command": "sleep 60"}, "call_long"),
            text_reply("this answer is never reached"),
        ],
    )
    env = cli.env(TETHER_SCRIPTED=str(script), TERM="xterm-256color")
    # Unconfined, so bash asks before it runs (the approvals are what this test walks through).
    terminal = Terminal([sys.executable, "-m", "tether.cli", "--sandbox", "off"], str(cli.project), env)
    try:
        terminal.wait_for("/help for commands")

        terminal.type("hello there")
        terminal.send("Enter")
        screen = terminal.wait_for("Hello from the scripted model.")
        assert "› hello there" in screen
        assert "**scripted**" not in screen  # markdown was rendered
        assert not colours(terminal.screen(escapes=True))  # NO_COLOR: no colour at all

        terminal.type("try something")
        terminal.send("Enter")
        terminal.wait_for("Run command: echo should-not-run")
        terminal.send("n")
        screen = terminal.wait_for("Understood, not running it.")
        assert "✗ bash command=echo should-not-run" in screen
        assert "declined" in screen
        assert "\n  │ should-not-run" not in screen

        terminal.type("count please")
        terminal.send("Enter")
        terminal.wait_for("Run command: seq 1 20")
        terminal.send("y")
        screen = terminal.wait_for("Counted to twenty.")
        assert "bash command=seq 1 20" in screen
        assert "more lines" in screen and "Ctrl-O" in screen  # long output folded
        folded = screen.split("bash command=seq 1 20")[1]
        assert "\n  │ 20" not in folded
        terminal.type("half-typed draft")
        terminal.send("C-o")  # the transcript view: the same result, nothing folded
        screen = terminal.wait_for("q/Esc close")  # the footer: drawn last
        assert "  │ 20" in screen and "more lines" not in screen
        assert "Ctrl-T thinking (folded)" in screen
        first = footer_lines(screen)
        assert first[0] > 3 and first[1] == first[2]  # it opens at the end
        terminal.type("\x1b[<64;10;5M")  # the mouse wheel, up (SGR mouse report)
        terminal.wait_for(lambda s: footer_lines(s)[0] == first[0] - 3)
        terminal.send("C-t")  # thinking toggles here and stays toggled after
        terminal.wait_for("Ctrl-T thinking (shown)")
        terminal.send("q")
        screen = terminal.wait_for(  # the draft as it was, and the status line drawn under it
            lambda s: (
                input_line(s) == "› half-typed draft" and " · thinking " in s.split("half-typed draft")[-1]
            )
        )
        assert "Transcript" not in screen and "Counted to twenty." in screen
        assert "thinking off (shown)" in screen  # the status line
        terminal.send("C-c")  # idle: clears the input
        terminal.wait_for(lambda s: input_line(s) == "›")

        terminal.type("take a nap")
        terminal.send("Enter")
        terminal.wait_for(f"Run command: {NAP}")
        terminal.send("a")  # always: no more questions in this session
        terminal.type("wake up gently")
        terminal.send("Enter")
        terminal.wait_for("steer: wake up gently")  # a pending chip while the tool runs
        terminal.type("and then this")
        terminal.send("Escape", "Enter")  # Alt-Enter: a follow-up for when the agent is done
        screen = terminal.wait_for("follow-up: and then this")
        assert "steer: wake up gently" in screen
        (cli.project / "wake").touch()  # the tool ends only now
        screen = terminal.wait_for("Following up as asked.")
        after_steer = screen.split("› wake up gently")[1]
        assert "Heard you: steering arrived." in after_steer
        assert after_steer.index("Heard you") < after_steer.index("› and then this")
        last = screen.split("Following up as asked.")[-1]
        assert "steer:" not in last and "follow-up:" not in last  # chips gone once delivered

        terminal.type("run forever")
        terminal.send("Enter")
        screen = terminal.wait_for("command=sleep 60")
        assert "Run command: sleep 60" not in screen
        terminal.type("/session")  # a command while the agent works runs beside it
        terminal.send("Enter")
        # The output is printed above the input box, which is then drawn again below it: wait for
        # the status line under the output, not the output alone (a capture can fall in between).
        screen = terminal.wait_for(
            lambda s: "tool calls" in s and " · thinking " in s.split("tool calls")[-1]
        )
        assert "● working" in screen.split("tool calls")[-1]  # the status line: still running
        terminal.send("Escape")
        screen = terminal.wait_for("Aborted", timeout=10)
        assert "this answer is never reached" not in screen

        terminal.type("/name tmux test")
        terminal.send("Enter")
        terminal.type("/session")
        terminal.send("Enter")
        screen = terminal.wait_for(
            lambda s: "title     tmux test" in s and " · thinking " in s.split("title     tmux test")[-1]
        )
        assert "cost" in screen and "● working" not in screen.split("title     tmux test")[-1]

        terminal.send("C-d")
        deadline = time.monotonic() + 10
        while not terminal.dead() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert terminal.dead(), terminal.screen()
    finally:
        terminal.close()


@pytest.mark.subprocess
def test_colour_when_allowed(cli: CliEnv) -> None:
    script = cli.script("chat", [text_reply("**bold** answer")])
    env = cli.env(TETHER_SCRIPTED=str(script), TERM="xterm-256color")
    del env["NO_COLOR"]
    terminal = Terminal([sys.executable, "-m", "tether.cli"], str(cli.project), env)
    try:
        terminal.wait_for("/help for commands")
        terminal.type("hello")
        terminal.send("Enter")
        terminal.wait_for("bold answer")
        coloured = terminal.screen(escapes=True)
        assert "35" in colours(coloured)  # the prompt marker, magenta
    finally:
        terminal.close()


@pytest.mark.subprocess
def test_tree_navigator_in_tmux(cli: CliEnv) -> None:
    """``/tree``: Esc changes nothing; Enter on an earlier prompt goes back before it with the
    prompt in the input box, and "summarise" leaves a branch summary of what was left."""
    script = cli.script(
        "tree",
        [
            text_reply("First answer."),
            text_reply("Second answer."),
            text_reply("BRANCH SUMMARY: we asked a second question."),
        ],
    )
    env = cli.env(TETHER_SCRIPTED=str(script), TERM="xterm-256color")
    terminal = Terminal([sys.executable, "-m", "tether.cli"], str(cli.project), env)
    try:
        header = terminal.wait_for("/help for commands")
        match = re.search(r"session (\w+)", header)
        assert match is not None
        session_id = match.group(1)
        for prompt, answer in (("first question", "First answer."), ("second question", "Second answer.")):
            terminal.type(prompt)
            terminal.send("Enter")
            terminal.wait_for(answer)

        terminal.type("/tree")
        terminal.send("Enter")
        screen = terminal.wait_for("Esc cancel · entry")  # the footer: drawn last
        cursor = [line for line in screen.splitlines() if line.startswith("› ")]
        assert len(cursor) == 1 and "assistant: Second answer." in cursor[0] and "you are here" in cursor[0]
        terminal.type("second")  # typing searches the rows
        screen = terminal.wait_for("2/4 [default]")
        assert "first question" not in screen and "user: second question" in screen
        terminal.send("C-u")  # pi's filters: only your messages
        screen = terminal.wait_for("1/2 [user-only]")
        assert "Second answer." not in screen
        terminal.send("C-u")  # toggles back to the default view
        terminal.wait_for("2/4 [default]")
        terminal.send("Escape")  # clears the search first
        terminal.wait_for(lambda s: "4/4 [default]" in s and "user: first question" in s)
        terminal.send("C-a")  # everything, settings entries too
        screen = terminal.wait_for("7/7 [all]")
        assert "• [model: " in screen and "• [thinking: off]" in screen  # the session's settings
        terminal.send("C-t")  # no tool results
        terminal.wait_for("4/4 [no-tools]")
        terminal.send("C-o")  # cycles: no-tools → user-only
        screen = terminal.wait_for("2/2 [user-only]")
        assert "Second answer." not in screen
        terminal.send("C-l")  # only labelled entries: none yet
        terminal.wait_for("0/0 [labeled-only]")
        terminal.send("C-d")
        terminal.wait_for("4/4 [default]")
        terminal.send("Home")
        terminal.send("C-Left")  # folds the branch under the cursor (the root's)
        screen = terminal.wait_for("1/1 [default]")
        assert "⊞ user: first question" in screen and "Second answer." not in screen
        terminal.send("C-Right")  # unfolds it
        terminal.wait_for(lambda s: "4/4 [default]" in s and "Second answer." in s)
        terminal.send("Up", "Up")
        terminal.send("Escape")
        terminal.wait_for("tree: cancelled, nothing changed")
        terminal.type("/session")
        terminal.send("Enter")
        terminal.wait_for("messages  4 (user 2, assistant 2")

        terminal.type("/tree")
        terminal.send("Enter")
        terminal.wait_for("Esc cancel · entry")
        terminal.send("Up")
        screen = terminal.wait_for(
            lambda s: any(line.startswith("› • user: second question") for line in s.splitlines())
        )
        terminal.send("Enter")
        question = terminal.wait_for("Enter choose · Esc cancel")
        assert "Summarise the branch you are leaving?" in question and "2. Summarise the branch" in question
        terminal.send("2")  # summarise
        screen = terminal.wait_for("BRANCH SUMMARY: we asked a second question.")
        terminal.wait_for(lambda s: input_line(s) == "› second question")  # back for editing

        terminal.send("C-c")
        terminal.wait_for(lambda s: input_line(s) == "›")
        terminal.type("/session")
        terminal.send("Enter")
        terminal.wait_for("messages  3 (user 1, assistant 1")
        terminal.send("C-d")
        deadline = time.monotonic() + 10
        while not terminal.dead() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert terminal.dead(), terminal.screen()
    finally:
        terminal.close()

    from tether.session import SessionManager
    from tether.store import default_db_path

    with SessionManager.at(default_db_path({"TETHER_HOME": str(cli.home)})) as sessions:
        session = sessions.open(session_id, readonly=True)
        path = session.path()
        roles = [e["message"]["role"] for e in path if e["type"] == "message"]
        assert roles == ["user", "assistant"]
        assert path[-1]["type"] == "branch_summary"
        assert "second question" in path[-1]["summary"]
        left = [e for e in session.entries() if e["id"] not in {p["id"] for p in path}]
        assert [e["message"]["role"] for e in left if e["type"] == "message"] == ["user", "assistant"]


@contextlib.contextmanager
def loopback_in_thread(replies: list[Reply]) -> Generator[LoopbackServer, None, None]:
    """A ``LoopbackServer`` on its own event loop, so the test may block reading the terminal."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = LoopbackServer(replies)
    asyncio.run_coroutine_threadsafe(server.__aenter__(), loop).result(5)
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.__aexit__(None, None, None), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


@pytest.mark.subprocess
def test_the_status_line_counts_a_stalled_models_silence(cli: CliEnv) -> None:
    """Issue 14.8: headers, then nothing. The status line says how long the model has been silent."""
    head = b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Thinking"}}]}\n\n'
    with loopback_in_thread([Reply(head + b"data: [DONE]\n\n", stall_after=len(head))]) as server:
        config = cli.home / "config"
        config.mkdir(exist_ok=True)
        provider = {"baseUrl": server.url, "api": "openai-completions", "models": [{"id": "slow"}]}
        (config / "models.json").write_text(json.dumps({"providers": {"stall": provider}}))
        env = cli.env(TERM="xterm-256color")
        command = [sys.executable, "-m", "tether.cli", "--model", "stall/slow", "--no-session"]
        terminal = Terminal(command, str(cli.project), env)
        try:
            terminal.wait_for("/help for commands")
            terminal.type("hello")
            terminal.send("Enter")
            screen = terminal.wait_for(lambda s: re.search(r"waiting for the model… [4-9] s", s) is not None)
            assert "Thinking" in screen  # the part that arrived is shown
            terminal.send("Escape")
            terminal.wait_for("Aborted", timeout=10)
        finally:
            terminal.close()


@pytest.mark.subprocess
def test_interactive_start_on_a_damaged_database_is_one_line(cli: CliEnv) -> None:
    """Issue 14.9: at a terminal too, a database with garbage in its middle is one line, no traceback."""
    script = cli.script("s", [text_reply("noted")])
    assert cli.run(stdin="x" * 200_000, script=script).returncode == 0
    db = cli.home / "data" / "sessions.db"
    data = bytearray(db.read_bytes())
    data[4096:-4096] = bytes(len(data) - 8192)  # zeros over all but the first and last pages
    db.write_bytes(bytes(data))
    env = cli.env(TETHER_SCRIPTED=str(script), TERM="xterm-256color")
    terminal = Terminal([sys.executable, "-m", "tether.cli", "--continue"], str(cli.project), env)
    try:
        deadline = time.monotonic() + 20
        while not terminal.dead() and time.monotonic() < deadline:
            time.sleep(0.1)
        screen = terminal.screen()
        assert terminal.dead(), screen
        assert f"tether: {db}: the session database is damaged" in screen
        assert "Traceback" not in screen
    finally:
        terminal.close()


_RECORDER = """import subprocess, sys
child = subprocess.Popen(sys.argv[2:])
with open(sys.argv[1] + ".pid", "w") as out:
    out.write(str(child.pid))
status = child.wait()
with open(sys.argv[1], "w") as out:
    out.write(str(status))
"""
"""Runs the command given and writes its PID, then its exit status (minus the signal's number if
one ended it), to files: tmux's own record of the status is not to be relied on (a pane's
process has stayed unreaped for seconds under load, its status blank)."""


@pytest.mark.subprocess
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox's placeholders are Linux's")
@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP", "closed terminal"])
def test_a_stop_signal_mid_bash_ends_the_interactive_mode_cleanly(cli: CliEnv, how: str) -> None:
    """SIGTERM (``kill``) or SIGHUP (``kill -HUP``, or the terminal closed) during a ``bash``
    call ends the interactive mode as it ends ``-p``: the call stopped, the sandbox's read-only
    placeholders (``.git``, ``.mcp.json``, ...) taken out of the project, the exit status 128 +
    the signal's number. Their default action ended it where it stood, leaving the placeholders
    behind for the next start there to read as the project's own."""
    script = cli.script("nap", [tool_reply("bash", {"command": NAP}), text_reply("never reached")])
    env = cli.env(TETHER_SCRIPTED=str(script), TERM="xterm-256color")
    status = cli.home / "status"
    command = [sys.executable, "-c", _RECORDER, str(status), sys.executable, "-m", "tether.cli"]
    terminal = Terminal(command, str(cli.project), env)
    pid = 0
    try:
        terminal.wait_for(started)
        pid = int((cli.home / "status.pid").read_text())
        take_a_nap(terminal)
        assert os.listdir(cli.project), "no placeholders while bash runs: is the sandbox off?"
        if how == "closed terminal":
            terminal.close()  # tmux hangs up: SIGHUP, and the terminal is gone
        else:
            os.kill(pid, signal.Signals[how])
        deadline = time.monotonic() + 20
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(pid), terminal.screen()
        if how != "closed terminal":  # (there the recorder is hung up on too)
            terminal.wait_until_dead()
            assert status.read_text() == str(128 + signal.Signals[how]), terminal.screen()
            assert "Traceback" not in terminal.screen()
    finally:
        terminal.close()
        if pid and alive(pid):
            os.kill(pid, signal.SIGKILL)
    assert sorted(os.listdir(cli.project)) == []
