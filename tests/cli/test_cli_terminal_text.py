"""What reaches the terminal from elsewhere carries no terminal control sequence: a file name
(a skill folder of a cloned repository), a tool name or an error the model or the provider
chose. ``\\x1b]52;c;...`` sets the clipboard, ``\\x1b]0;...`` the window title, ``\\x1b[2J``
clears the screen, ``\\r`` overwrites a line: they were written as they were. Now they are shown
escaped (``\\x1b``, ``\\x0d``) on stderr, and in the answer when stdout is a terminal; a pipe still gets
the answer's exact text, which is the script's data.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest
from cli_support import CliEnv, text_reply, tool_reply

pytestmark = pytest.mark.subprocess

CLIPBOARD = "\x1b]52;c;ZWNobyBwd25lZA==\x07"


def test_a_skill_folder_named_with_escapes_is_shown_escaped(cli: CliEnv) -> None:
    skill = cli.project / ".pi" / "skills" / f"evil{CLIPBOARD}\x1b[2J" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: x\n  bad\n---\nbody\n")
    done = cli.run("-p", "hi", "--no-session", script=cli.script("s", [text_reply("fine")]))
    assert (done.returncode, done.stdout) == (0, "fine\n"), done.stderr
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr
    assert "evil\\x1b]52;c;ZWNobyBwd25lZA==\\x07\\x1b[2J" in done.stderr, done.stderr


def test_a_tool_name_and_an_answer_from_the_model_reach_stderr_escaped(cli: CliEnv) -> None:
    script = cli.script(
        "s", [tool_reply(f"x{CLIPBOARD}", {}), text_reply(f"done{CLIPBOARD}\x1b[2Jfake line")]
    )
    done = cli.run("-p", "hi", "--no-session", script=script)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stderr and "[tool] x\\x1b]52;c;" in done.stderr, done.stderr
    assert done.stdout == f"done{CLIPBOARD}\x1b[2Jfake line\n"  # a pipe: the exact text


def test_the_answer_on_a_terminal_is_shown_escaped(cli: CliEnv) -> None:
    script = cli.script("s", [text_reply("one\ttwo\n", f"done{CLIPBOARD}\x1b[2J\rover")])
    main, child = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "tether.cli", "-p", "hi", "--no-session"],
            cwd=cli.project,
            env=cli.env(TETHER_SCRIPTED=str(script)),
            stdin=subprocess.DEVNULL,
            stdout=child,
            stderr=subprocess.PIPE,
        )
        os.close(child)
        child = -1
        shown = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # EIO: the other end closed
                break
            if not chunk:
                break
            shown += chunk
        _, err = process.communicate(timeout=60)
    finally:
        os.close(main)
        if child != -1:
            os.close(child)
    assert process.returncode == 0, err
    text = shown.decode()
    assert "\x1b" not in text and "\x07" not in text, repr(text)
    assert "one\ttwo" in text and "done\\x1b]52;c;ZWNobyBwd25lZA==\\x07\\x1b[2J\\x0dover" in text, repr(text)
