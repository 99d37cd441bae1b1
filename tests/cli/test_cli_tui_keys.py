"""The interactive mode's keys and terminal-only commands, in a real terminal (tmux): the model
picker (Ctrl-L) and cycling (Ctrl-P, Shift-Tab), Esc and Alt-Up bringing queued messages back,
Ctrl-G with ``EDITOR`` set to a script, ``/copy`` (OSC 52 read back from tmux, and a local
clipboard program), ``/hotkeys`` and ``keybindings.json``.

Each check waits for the redrawn status line or input box, not only for printed text: output is
printed above the live area, which is drawn again after it.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from cli_support import CliEnv, text_reply, tool_reply
from tmux_support import NAP, Terminal, input_line, started, status_line, take_a_nap

from tether.session.stats import SessionRow

pytestmark = [
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt install tmux)"),
    pytest.mark.subprocess,
]


def models_json(cli: CliEnv) -> None:
    """A provider whose key is set (three models, one reasoning) and one whose key is not."""
    config = cli.home / "config"
    config.mkdir(exist_ok=True)
    url = "http://127.0.0.1:9/v1"  # never called: these tests only switch models
    providers = {
        "alpha": {
            "baseUrl": url,
            "api": "openai-completions",
            "apiKeyEnv": "ALPHA_TEST_KEY",
            "models": [{"id": "a1"}, {"id": "a2", "reasoning": True}, {"id": "a3"}],
        },
        "beta": {
            "baseUrl": url,
            "api": "openai-completions",
            "apiKeyEnv": "BETA_TEST_KEY",
            "models": [{"id": "b1"}],
        },
    }
    (config / "models.json").write_text(json.dumps({"providers": providers}))


def words(screen: str) -> str:
    """The screen's text with its line wrapping undone (words joined by single spaces)."""
    return " ".join(screen.split())


def start(cli: CliEnv, script: Path, **env: str) -> Terminal:
    terminal = Terminal(
        [sys.executable, "-m", "tether.cli"],
        str(cli.project),
        cli.env(TETHER_SCRIPTED=str(script), TERM="xterm-256color", **env),
    )
    terminal.wait_for(started)
    return terminal


def test_model_picker_cycling_and_thinking_levels(cli: CliEnv) -> None:
    models_json(cli)
    script = cli.script("models", [text_reply("unused")])
    terminal = start(cli, script, ALPHA_TEST_KEY="k")
    try:
        assert status_line(terminal.screen()).startswith("scripted/models · thinking off")
        terminal.send("C-p")  # the usable models, after the one in use
        terminal.wait_for(lambda s: status_line(s).startswith("alpha/a1 · "))
        terminal.send("C-p")
        terminal.wait_for(lambda s: status_line(s).startswith("alpha/a2 · thinking off"))
        terminal.send("BTab")  # Shift-Tab: the next level a2 accepts
        terminal.wait_for(lambda s: status_line(s).startswith("alpha/a2 · thinking minimal"))
        terminal.send("BTab")
        terminal.wait_for(lambda s: status_line(s).startswith("alpha/a2 · thinking low"))
        terminal.send("Escape", "p")  # Alt-P: back
        terminal.wait_for(lambda s: status_line(s).startswith("alpha/a1 · thinking off"))

        terminal.send("C-l")
        screen = terminal.wait_for("Esc cancel")  # the footer: drawn last
        assert "3 of 3 models" in screen and "beta/b1" not in screen  # beta has no key
        assert "› alpha/a1  ← current" in screen
        terminal.type("a3")
        screen = terminal.wait_for("1 of 3 models")
        assert "› alpha/a3" in screen and "alpha/a2" not in screen
        terminal.send("Enter")
        screen = terminal.wait_for(lambda s: status_line(s).startswith("alpha/a3 · "))
        assert "model: alpha/a3, thinking off" in screen

        terminal.send("C-l")
        terminal.wait_for("Esc cancel")
        terminal.type("nothing matches this")
        terminal.wait_for("0 of 3 models")
        terminal.send("Escape")  # cancelled: the model stays
        screen = terminal.wait_for(
            lambda s: not terminal.full_screen() and status_line(s).startswith("alpha/")
        )
        assert status_line(screen).startswith("alpha/a3 · ")

        terminal.send("C-l")
        terminal.wait_for("Esc cancel")
        terminal.type("a2")
        terminal.wait_for("1 of 3 models")
        terminal.send("C-s")  # switch, and save as the default (pi's app.models.save)
        screen = terminal.wait_for(
            lambda s: "saved as the default model" in s and status_line(s).startswith("alpha/a2 · ")
        )
        terminal.send("C-d")
        terminal.wait_until_dead()
    finally:
        terminal.close()
    assert json.loads((cli.home / "config" / "settings.json").read_text())["model"] == "alpha/a2"


def test_escape_and_alt_up_bring_queued_messages_back(cli: CliEnv) -> None:
    script = cli.script(
        "queue", [tool_reply("bash", {"command": NAP}, "call_nap"), text_reply("never reached")]
    )
    terminal = start(cli, script)
    try:
        take_a_nap(terminal)
        terminal.type("steer one")
        terminal.send("Enter")
        terminal.wait_for("steer: steer one")
        terminal.type("follow two")
        terminal.send("Escape", "Enter")  # Alt-Enter: a follow-up
        terminal.wait_for("follow-up: follow two")

        terminal.send("Escape", "Up")  # Alt-Up: back into the input box, the run goes on
        screen = terminal.wait_for(lambda s: input_line(s) == "» steer one")  # » : still working
        live = screen.split("─" * 20)[-2:]
        assert "steer:" not in "".join(live) and "follow-up:" not in "".join(live)
        assert "follow two" in screen.split("» steer one")[-1]  # the second one, below a blank line
        assert "● working" in status_line(screen)

        terminal.send("Enter")  # sent again: one steering message now
        terminal.wait_for("steer: steer one  follow two")  # a chip shows line breaks as spaces
        terminal.send("Escape")  # nothing typed: queued messages back, and the run stops
        screen = terminal.wait_for(
            lambda s: "Aborted" in s and input_line(s) == "› steer one" and "● working" not in status_line(s),
            timeout=10,
        )
        assert "never reached" not in screen
        assert "steer:" not in screen.split("Aborted")[-1]
        terminal.send("C-c")  # clears the restored text
        terminal.wait_for(lambda s: input_line(s) == "›")
        terminal.send("C-d")
        terminal.wait_until_dead()
    finally:
        terminal.close()

    from tether.session import SessionManager
    from tether.store import default_db_path

    with SessionManager.at(default_db_path({"TETHER_HOME": str(cli.home)})) as sessions:
        (record,) = sessions.list()
        messages = sessions.open(record.id, readonly=True).messages
        users = [m["content"] for m in messages if m["role"] == "user"]
        assert users == ["take a nap"]  # the queued messages never reached the model


def test_ctrl_g_edits_the_input_in_editor(cli: CliEnv) -> None:
    editor = cli.home / "editor.sh"
    editor.write_text(
        "#!/bin/sh\n"
        'grep -q refuse "$1" && exit 3\n'
        "sed -i 's/draft/EDITED draft/' \"$1\"\n"
        "printf '\\nsecond line\\n' >> \"$1\"\n"
    )
    editor.chmod(0o755)
    script = cli.script("edit", [text_reply("got it")])
    terminal = start(cli, script, EDITOR=str(editor), VISUAL="")
    try:
        terminal.type("my draft")
        terminal.send("C-g")
        screen = terminal.wait_for(lambda s: input_line(s) == "› my EDITED draft")
        assert "second line" in screen.split("my EDITED draft")[-1]
        terminal.send("C-c")
        terminal.wait_for(lambda s: input_line(s) == "›")

        terminal.type("please refuse")
        terminal.send("C-g")
        screen = terminal.wait_for(
            lambda s: "the input is unchanged" in s and input_line(s) == "› please refuse"
        )
        assert f"editor: {editor} exited with status 3; the input is unchanged" in words(screen)
        terminal.send("C-d")
    finally:
        terminal.close()


def test_copy_through_osc52_and_a_local_tool(cli: CliEnv) -> None:
    bin_dir = cli.home / "bin"
    bin_dir.mkdir()
    copied = cli.home / "clipboard.txt"
    fake = bin_dir / "wl-copy"
    fake.write_text(f"#!/bin/sh\ncat > {copied}\n")
    fake.chmod(0o755)
    script = cli.script("copy", [text_reply("The answer is **42**, of course.")])
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "WAYLAND_DISPLAY": "wayland-test"}
    terminal = start(cli, script, **env)
    try:
        terminal.tmux("set-option", "-s", "set-clipboard", "on")  # tmux takes OSC 52 into a buffer
        terminal.type("/copy")
        terminal.send("Enter")
        terminal.wait_for(lambda s: "no answer to copy yet" in s and input_line(s) == "›")
        terminal.type("question")
        terminal.send("Enter")
        terminal.wait_for("The answer is 42, of course.")
        terminal.type("/copy")
        terminal.send("Enter")
        screen = terminal.wait_for(lambda s: "copied the last answer" in s and input_line(s) == "›")
        assert "to the terminal (OSC 52) and wl-copy" in screen
        assert (
            terminal.tmux("show-buffer") == "The answer is **42**, of course."
        )  # the OSC 52 sequence's text
        assert copied.read_text() == "The answer is **42**, of course."
        copied.unlink()
        terminal.send("C-x")  # the key does the same
        terminal.wait_for(lambda s: s.count("copied the last answer") == 2 and input_line(s) == "›")
        assert copied.read_text() == "The answer is **42**, of course."

        terminal.type("/hotkeys")
        terminal.send("Enter")
        screen = terminal.wait_for(lambda s: "app.model.select" in s and input_line(s) == "›")
        assert "Ctrl+L" in screen and "Shift+Tab" in screen and "Ctrl+G" in screen
        assert f"Change them in {cli.home / 'config' / 'keybindings.json'}" in words(screen)
        terminal.send("C-d")
    finally:
        terminal.close()


def test_keybindings_file_changes_keys_and_a_bad_one_is_one_warning(cli: CliEnv) -> None:
    models_json(cli)
    config = cli.home / "config"
    bindings = {"app.model.cycleForward": ["ctrl+n"], "app.session.new": "alt+n"}  # pi: no default
    (config / "keybindings.json").write_text(json.dumps(bindings))
    script = cli.script("keys", [text_reply("unused")])
    terminal = start(cli, script, ALPHA_TEST_KEY="k")
    try:
        assert "keybindings.json" not in terminal.screen()  # no warning: every action is known
        terminal.send("C-n")
        terminal.wait_for(lambda s: status_line(s).startswith("alpha/a1 · "))
        terminal.send("M-n")
        terminal.wait_for("new session")
        terminal.type("/hotkeys")
        terminal.send("Enter")
        screen = terminal.wait_for(lambda s: "app.model.cycleForward" in s and input_line(s) == "›")
        line = next(line for line in screen.splitlines() if "[app.model.cycleForward]" in line)
        assert line.startswith("Ctrl+N ")
        terminal.send("C-d")
    finally:
        terminal.close()

    (config / "keybindings.json").write_text(json.dumps({"app.model.cycleForward": "ctrl+shift+p"}))
    terminal = start(cli, script, ALPHA_TEST_KEY="k")
    try:
        screen = terminal.screen()
        warning = (
            f"{config / 'keybindings.json'}: app.model.cycleForward: 'ctrl+shift+p': "
            "a terminal does not send that combination (default kept); the rest is applied"
        )
        assert warning in words(screen)
        assert "Traceback" not in screen
        terminal.send("C-p")  # the default again
        terminal.wait_for(lambda s: status_line(s).startswith("alpha/a1 · "))
        terminal.send("C-d")
    finally:
        terminal.close()


def test_resume_picker_searches_sorts_renames_and_deletes(cli: CliEnv) -> None:
    for prompt in ("alpha project notes", "beta release plan", "gamma cleanup"):
        done = cli.run(prompt, script=cli.script("one", [text_reply(f"answer to {prompt}")]))
        assert done.returncode == 0, done.stderr
    terminal = start(cli, cli.script("resume", [text_reply("unused")]))
    try:
        terminal.type("/resume")
        terminal.send("Enter")
        screen = terminal.wait_for("Esc cancel")  # the footer: drawn last
        assert "newest first" in screen
        rows = [line for line in screen.splitlines() if "msgs" in line]
        # Not this run's own session: it has no message yet, so it is not stored.
        assert [r.split("$0.0000")[-1].strip() for r in rows] == [
            "gamma cleanup",
            "beta release plan",
            "alpha project notes",
        ]
        terminal.type("release")  # search: one row left
        screen = terminal.wait_for(lambda s: " 1 of 3 " in s)
        assert "beta release plan" in screen and "alpha project" not in screen

        terminal.send("C-r")  # rename it
        terminal.wait_for("new name, Enter to save")
        terminal.send("C-u")
        terminal.type("zeta shipped")
        terminal.send("Enter")
        screen = terminal.wait_for("renamed to 'zeta shipped'")
        terminal.send("C-u")  # clear the search
        terminal.wait_for(lambda s: " 3 of 3 " in s)
        terminal.send("C-s")  # by name
        screen = terminal.wait_for(lambda s: "by name" in s and "renamed" not in s.splitlines()[-1])
        rows = [line for line in screen.splitlines() if "msgs" in line]
        assert [r.split("$0.0000")[-1].strip() for r in rows] == [
            "alpha project notes",
            "gamma cleanup",
            "zeta shipped",
        ]

        terminal.send("Down")  # gamma
        terminal.send("C-d")
        screen = terminal.wait_for("? y to delete, any key keeps it")
        assert "(gamma cleanup)" in screen
        terminal.send("n")
        terminal.wait_for("delete: cancelled")
        terminal.send("C-d")
        terminal.wait_for("? y to delete, any key keeps it")
        terminal.send("y")
        screen = terminal.wait_for(lambda s: "deleted " in s and " 2 of 2 " in s)
        assert "gamma cleanup" not in screen

        terminal.send("Enter")  # the cursor is on a row again: zeta
        screen = terminal.wait_for(lambda s: "resumed session" in s and input_line(s) == "›")
        assert "(2 messages)" in screen
        redrawn = screen.rsplit("resumed session", 1)[0].rsplit("› /resume", 1)[-1]
        assert "answer to " in redrawn  # its conversation drawn again before the line saying so
        terminal.type("/session")
        terminal.send("Enter")
        terminal.wait_for(lambda s: "title     zeta shipped" in s and input_line(s) == "›")

        terminal.type("/resume")
        terminal.send("Enter")
        terminal.wait_for("Esc cancel")
        terminal.send("Escape")  # at once: a key typed as the view opens is the view's
        terminal.wait_for(lambda s: "resume: cancelled" in s and input_line(s) == "›")
        terminal.send("C-d")
        terminal.wait_until_dead()
    finally:
        terminal.close()

    from tether.session import SessionManager
    from tether.store import default_db_path

    with SessionManager.at(default_db_path({"TETHER_HOME": str(cli.home)})) as sessions:
        titles = sorted(SessionRow.of(r).title for r in sessions.list())
    assert "gamma cleanup" not in titles and "zeta shipped" in titles and "alpha project notes" in titles
