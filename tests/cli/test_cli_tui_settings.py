"""pi's settings commands in a real terminal (tmux): ``/settings`` (saved, and read at the next
start), themes (built in, a pi theme file, a broken one), ``/scoped-models`` (what Ctrl-P
cycles through), ``/login`` (a key typed unseen, stored 0600, never in the session), ``/import``,
``/reload``, label editing in ``/tree``, and the first frame drawn only once the header is there.

Each check waits for the redrawn status line or input box, not only for printed text.
"""

from __future__ import annotations

import json
import re
import shutil
import stat
import sys
import time
from pathlib import Path

import pytest
from cli_support import CliEnv, text_reply
from test_cli_tui_keys import models_json
from test_cli_tui_pi import stored_session
from tmux_support import Terminal, input_line, started, status_line

pytestmark = [
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt install tmux)"),
    pytest.mark.subprocess,
]


def start(cli: CliEnv, script: Path, *args: str, colour: bool = False, **env: str) -> Terminal:
    environ = cli.env(TETHER_SCRIPTED=str(script), TERM="xterm-256color", **env)
    if colour:
        environ.pop("NO_COLOR")
    terminal = Terminal([sys.executable, "-m", "tether.cli", *args], str(cli.project), environ)
    terminal.wait_for(started)
    return terminal


def settings_file(cli: CliEnv) -> dict[str, object]:
    return json.loads((cli.home / "config" / "settings.json").read_text())


def ready(screen: str) -> bool:
    return input_line(screen) == "›" and "working" not in status_line(screen)


def test_settings_menu_applies_and_saves_each_choice(cli: CliEnv) -> None:
    models_json(cli)
    script = cli.script("settings", [text_reply("unused")])
    terminal = start(cli, script, "--model", "alpha/a2", ALPHA_TEST_KEY="k")
    try:
        assert status_line(terminal.screen()).startswith("alpha/a2 · thinking medium")
        terminal.type("/settings")
        terminal.send("Enter")
        screen = terminal.wait_for("Esc cancel")
        for row in ("Thinking level", "Default model", "Theme", "Auto-compaction", "Steering mode"):
            assert row in screen
        assert re.search(r"Auto-compaction\s+on", screen) and re.search(
            r"Steering mode\s+one-at-a-time", screen
        )
        terminal.send("Enter")  # Thinking level
        terminal.wait_for("medium  ← current")
        terminal.send("5")  # off minimal low medium high
        screen = terminal.wait_for(lambda s: re.search(r"Thinking level\s+high", s) is not None)
        terminal.send("4")  # Auto-compaction
        terminal.wait_for("on  ← current")
        terminal.send("2")  # off
        terminal.wait_for(lambda s: re.search(r"Auto-compaction\s+off", s) is not None)
        terminal.send("5")  # Steering mode
        terminal.wait_for("one-at-a-time  ← current")
        terminal.send("2")  # all
        terminal.wait_for(lambda s: re.search(r"Steering mode\s+all", s) is not None)
        terminal.send("Escape")
        screen = terminal.wait_for(lambda s: not terminal.full_screen() and ready(s))
        assert status_line(screen).startswith("alpha/a2 · thinking high")  # applied at once
        assert "thinking: high (saved in" in screen
        terminal.send("C-d")
        terminal.wait_until_dead()
    finally:
        terminal.close()
    saved = settings_file(cli)
    assert saved["thinking"] == "high"
    assert saved["compaction"] == {"enabled": False}
    assert saved["steeringMode"] == "all"


def colours(screen: str) -> set[str]:
    return set(re.findall(r"\x1b\[([0-9;]*)m", screen))


def test_theme_light_from_settings_a_pi_theme_file_and_a_broken_one(cli: CliEnv) -> None:
    script = cli.script("theme", [text_reply("unused")])
    terminal = start(cli, script, colour=True)
    try:
        terminal.type("/nosuchcommand")
        terminal.send("Enter")
        terminal.wait_for(lambda s: "unknown command /nosuchcommand" in s and ready(s))
        assert "31" in colours(terminal.screen(escapes=True))  # dark: the terminal's red
        terminal.type("/settings")
        terminal.send("Enter")
        terminal.wait_for("Esc cancel")
        terminal.send("3")  # Theme
        terminal.wait_for("dark  ← current")
        terminal.send("2")  # light
        terminal.wait_for(lambda s: re.search(r"Theme\s+light", s) is not None)
        terminal.send("Escape")
        terminal.wait_for(lambda s: not terminal.full_screen() and ready(s))
        terminal.type("/stillnothing")
        terminal.send("Enter")
        terminal.wait_for(lambda s: "unknown command /stillnothing" in s and ready(s))
        line = next(li for li in terminal.screen(escapes=True).splitlines() if "/stillnothing (try" in li)
        assert "38;5;88" in line  # light: a darker red
        terminal.send("C-d")
        terminal.wait_until_dead()
    finally:
        terminal.close()
    assert settings_file(cli)["theme"] == "light"

    # A theme file in pi's format (hex, a variable, a 256 index, okhsl) in tether's themes folder.
    required = [
        "accent", "border", "error", "success", "warning", "muted", "text", "thinkingText",
        "selectedBg", "userMessageText", "toolTitle", "toolOutput", "toolDiffAdded",
        "toolDiffRemoved", "toolDiffContext", "mdHeading", "mdLink", "mdLinkUrl", "mdCode",
        "mdQuote", "mdHr", "mdListBullet",
    ]  # fmt: skip
    colors: dict[str, object] = {name: "okhsl(229 6% 67%)" for name in required}
    colors.update({"error": "alarm", "success": 34, "text": ""})
    themes = cli.home / "config" / "themes"
    themes.mkdir()
    mine = {"name": "mine", "vars": {"alarm": "#ff0000"}, "colors": colors}
    (themes / "mine.json").write_text(json.dumps(mine))
    (themes / "broken.json").write_text(json.dumps({"name": "broken", "colors": {"error": "#ff0000"}}))
    for name, expected in (("mine", "38;5;196"), ("broken", "31")):
        (cli.home / "config" / "settings.json").write_text(json.dumps({"theme": name}))
        terminal = start(cli, script, colour=True)
        try:
            header = re.sub(r"\s", "", terminal.screen())  # the warning, wrapped at 100 columns
            if name == "broken":  # one warning naming the file and what it lacks; the default applies
                assert header.count("theme:") == 1
                assert 'broken.json:"colors"lacksaccent,border,' in header
                assert "usingthedefaulttheme" in header
            else:
                assert "theme:" not in header
            terminal.type("/nothing")
            terminal.send("Enter")
            terminal.wait_for(lambda s: "unknown command /nothing" in s and ready(s))
            line = next(li for li in terminal.screen(escapes=True).splitlines() if "/nothing (try" in li)
            assert expected in line, (name, line)
            terminal.send("C-d")
            terminal.wait_until_dead()
        finally:
            terminal.close()


def test_scoped_models_choose_what_ctrl_p_cycles_and_are_saved(cli: CliEnv) -> None:
    models_json(cli)
    script = cli.script("scoped", [text_reply("unused")])
    terminal = start(cli, script, ALPHA_TEST_KEY="k")
    try:
        terminal.type("/scoped-models")
        terminal.send("Enter")
        screen = terminal.wait_for("^C cancel")
        assert "[ ] alpha/a1" in screen and "[ ] alpha/a3" in screen and "0 of" in screen
        terminal.type("a3")
        terminal.wait_for(lambda s: "alpha/a1" not in s)
        terminal.send("Enter")  # ticked first: first in the cycle
        terminal.wait_for("[x] alpha/a3")
        terminal.send("BSpace", "BSpace")
        terminal.type("a1")
        terminal.wait_for(lambda s: "alpha/a3" not in s)
        terminal.send("Enter")
        terminal.wait_for("2 of")
        terminal.send("C-s")  # keep and save
        # "through:" is the line after the picker; its own title says "through (none ticked...)"
        screen = terminal.wait_for(lambda s: not terminal.full_screen() and "Ctrl-P cycles through:" in s)
        assert "Ctrl-P cycles through: alpha/a3, alpha/a1" in " ".join(screen.split())
        # the status line redrawn after the view (a first frame can lack it): the model to leave
        screen = terminal.wait_for(lambda s: status_line(s).startswith("scripted/scoped "))
        seen: list[str] = []
        for _ in range(3):
            terminal.send("C-p")
            before = seen[-1] if seen else status_line(screen).split(" ")[0]
            screen = terminal.wait_for(lambda s, b=before: status_line(s).split(" ")[0] not in ("", b))
            seen.append(status_line(screen).split(" ")[0])
        assert seen == ["alpha/a3", "alpha/a1", "alpha/a3"]  # a2 left out
        terminal.send("C-d")
        terminal.wait_until_dead()
    finally:
        terminal.close()
    assert settings_file(cli)["enabledModels"] == ["alpha/a3", "alpha/a1"]
    terminal = start(cli, script, ALPHA_TEST_KEY="k")  # the next start: the saved scope
    try:
        assert status_line(terminal.screen()).startswith("alpha/a3 · ")
        terminal.send("C-p")
        terminal.wait_for(lambda s: status_line(s).startswith("alpha/a1 · "))
        terminal.send("C-p")
        terminal.wait_for(lambda s: status_line(s).startswith("alpha/a3 · "))
    finally:
        terminal.close()


def test_login_stores_a_key_unseen_and_logout_forgets_it(cli: CliEnv) -> None:
    models_json(cli)
    secret = "sk-test-VERY-secret-9431"
    script = cli.script("login", [text_reply("answered")])
    terminal = start(cli, script, ALPHA_TEST_KEY="k")
    try:
        terminal.send("C-l")
        assert "beta/b1" not in terminal.wait_for("Esc cancel")  # no key for beta yet
        terminal.send("Escape")
        terminal.wait_for(lambda s: not terminal.full_screen() and ready(s))
        terminal.type("/login")
        terminal.send("Enter")
        terminal.wait_for("which provider?")
        terminal.type("beta")
        terminal.wait_for("1 of")
        terminal.send("Enter")
        terminal.wait_for("API key for beta")
        terminal.type(secret)
        screen = terminal.wait_for("*" * len(secret))
        assert secret not in screen
        terminal.send("Enter")
        screen = terminal.wait_for(lambda s: "saved an API key for beta" in s and ready(s))
        assert "mode 0600" in screen and secret not in screen
        terminal.send("C-l")
        terminal.wait_for("beta/b1")  # usable now
        terminal.send("Escape")
        terminal.wait_for(lambda s: not terminal.full_screen() and ready(s))
        terminal.type("hello")
        terminal.send("Enter")
        terminal.wait_for(lambda s: "answered" in s and ready(s))
        terminal.send("C-d")
        terminal.wait_until_dead()
    finally:
        terminal.close()
    auth = cli.home / "data" / "auth.json"
    assert stat.S_IMODE(auth.stat().st_mode) == 0o600
    assert json.loads(auth.read_text()) == {"beta": {"type": "api_key", "key": secret}}
    for path in (cli.home / "data").rglob("*"):  # the session database, the prompt history …
        if path.is_file() and path != auth:
            assert secret.encode() not in path.read_bytes(), path

    terminal = start(cli, script)
    try:
        terminal.type("/logout beta")
        terminal.send("Enter")
        terminal.wait_for(lambda s: "forgot the API key saved for beta" in s and ready(s))
        terminal.type("/logout beta")  # again: it said "unknown provider 'beta' (known: )"
        terminal.send("Enter")
        terminal.wait_for(lambda s: "no API key was saved for beta" in s and ready(s))
        terminal.type("/login nosuch")
        terminal.send("Enter")
        terminal.wait_for(lambda s: "unknown provider 'nosuch'" in s and ready(s))
    finally:
        terminal.close()
    assert json.loads(auth.read_text()) == {}


def test_import_a_pi_session_file_and_continue_it(cli: CliEnv, tmp_path: Path) -> None:
    header = {
        "type": "session",
        "version": 3,
        "id": "p1",
        "timestamp": "2024-12-03T14:00:00.000Z",
        "cwd": "/x",
    }
    entries = [
        {"role": "user", "content": "what is pi?", "timestamp": 1},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "A coding agent from a file."}],
            "api": "x", "provider": "x", "model": "x", "stopReason": "stop", "timestamp": 2,
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                      "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        },
    ]  # fmt: skip
    lines = [json.dumps(header)]
    parent = None
    for number, message in enumerate(entries):
        entry_id = f"e{number}"
        entry = {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": "2024-12-03T14:00:01.000Z",
        }
        lines.append(json.dumps({**entry, "message": message}))
        parent = entry_id
    (tmp_path / "pi.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "bad.jsonl").write_text("not a session\n")
    script = cli.script("import", [text_reply("Continued.")])
    terminal = start(cli, script)
    try:
        terminal.type(f"/import {tmp_path / 'bad.jsonl'}")
        terminal.send("Enter")
        terminal.wait_for(lambda s: "bad.jsonl: " in s and ready(s))
        terminal.type(f"/import {tmp_path / 'pi.jsonl'}")
        terminal.send("Enter")
        screen = terminal.wait_for(lambda s: "imported " in s and ready(s))
        assert "› what is pi?" in screen and "A coding agent from a file." in screen
        assert "(2 messages)" in " ".join(screen.split())
        terminal.type("go on")
        terminal.send("Enter")
        terminal.wait_for(lambda s: "Continued." in s and ready(s))
    finally:
        terminal.close()
    from tether.session import SessionManager
    from tether.store import default_db_path

    with SessionManager.at(default_db_path({"TETHER_HOME": str(cli.home)})) as sessions:
        (record,) = [r for r in sessions.list() if r.message_count]
        messages = sessions.open(record.id, readonly=True).messages
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]


def test_reload_reads_templates_context_files_and_keys_again(cli: CliEnv) -> None:
    script = cli.script("reload", [text_reply("Done.")])
    terminal = start(cli, script)
    try:
        config = cli.home / "config"
        (config / "prompts").mkdir(parents=True)
        (config / "prompts" / "greet.md").write_text("---\ndescription: say hello\n---\nSay hello to $1.")
        (cli.project / "AGENTS.md").write_text("Always answer in haiku.")
        (config / "keybindings.json").write_text(json.dumps({"app.message.copy": "ctrl+y"}))
        terminal.type("/reload")
        terminal.send("Enter")
        screen = terminal.wait_for(lambda s: "reloaded:" in s and ready(s))
        assert "1 prompt templates" in " ".join(screen.split())
        terminal.type("/gre")
        terminal.wait_for("say hello")  # the completion menu knows the new template
        terminal.type("et Ada")  # past the command's name: the menu closes
        terminal.wait_for(lambda s: input_line(s) == "› /greet Ada" and "say hello" not in s)
        terminal.send("Enter")
        terminal.wait_for(lambda s: "Done." in s and ready(s))
        terminal.send("C-y")  # the reloaded key copies the last answer
        terminal.wait_for("copied the last answer")
    finally:
        terminal.close()
    from tether.session import SessionManager
    from tether.store import default_db_path

    with SessionManager.at(default_db_path({"TETHER_HOME": str(cli.home)})) as sessions:
        (record,) = [r for r in sessions.list() if r.message_count]
        session = sessions.open(record.id, readonly=True)
        user = [m["content"] for m in session.messages if m["role"] == "user"]
        prompts = [e["systemPrompt"] for e in session.entries() if e["type"] == "system_prompt_change"]
    assert user == ["Say hello to Ada."]
    assert "Always answer in haiku." in prompts[-1]


def test_tree_label_editing_is_stored_as_pi_stores_labels(cli: CliEnv) -> None:
    session_id = stored_session(cli, 2)
    script = cli.script("labels", [text_reply("unused")])
    terminal = start(cli, script, "--resume", session_id)
    try:
        terminal.type("/tree")
        terminal.send("Enter")
        terminal.wait_for("L label")
        terminal.type("number 0")
        terminal.wait_for(lambda s: "› " in s and "question number 0" in s and "1/" in s)
        terminal.send("L")
        terminal.wait_for("Label for: user: question number 0")
        terminal.type("checkpoint-1")
        terminal.send("Enter")
        screen = terminal.wait_for("(checkpoint-1)")
        terminal.send("T")  # pi's Shift-T: when the label was set (today: the time only)
        screen = terminal.wait_for("[+label time]")
        assert re.search(r"\(checkpoint-1 · \d\d:\d\d\)", screen), screen
        terminal.tmux("set-option", "-s", "set-clipboard", "on")  # tmux takes OSC 52 into a buffer
        terminal.send("C-x")  # pi's Ctrl-X: the entry's whole text
        terminal.wait_for("characters to the terminal (OSC 52)")
        assert terminal.tmux("show-buffer") == "question number 0"
        terminal.send("Escape")  # clears the search
        terminal.wait_for(lambda s: "search: number" not in s)
        terminal.send("C-l")  # labelled entries only
        screen = terminal.wait_for("1/1 [labeled-only]")
        assert "question number 0" in screen and "question number 1" not in screen
        terminal.send("Escape")
        terminal.wait_for(lambda s: not terminal.full_screen() and ready(s))
    finally:
        terminal.close()
    from tether.session import SessionManager
    from tether.store import default_db_path

    with SessionManager.at(default_db_path({"TETHER_HOME": str(cli.home)})) as sessions:
        session = sessions.open(session_id, readonly=True)
        labels = [e for e in session.entries() if e["type"] == "label"]
        first = next(
            e["id"] for e in session.entries() if e["type"] == "message" and e["message"]["role"] == "user"
        )
    assert [(e["targetId"], e["label"]) for e in labels] == [(first, "checkpoint-1")]


def test_the_first_frame_comes_after_the_header_and_the_history(cli: CliEnv) -> None:
    """Every byte the terminal received, recorded from before tether starts (``read`` holds the
    command until tmux's pipe is on): the first status line is drawn after the resumed
    conversation, never above it to be pushed down (the stale frame pi users saw flash)."""
    stored_session(cli, 2)
    script = cli.script("frame", [text_reply("unused")])
    environ = cli.env(TETHER_SCRIPTED=str(script), TERM="xterm-256color")
    raw = cli.home / "raw.bin"
    command = f"read go; exec {sys.executable} -m tether.cli -c"
    terminal = Terminal(["sh", "-c", command], str(cli.project), environ)
    try:
        terminal.tmux("pipe-pane", "-t", "t", "-o", f"cat > {raw}")
        deadline = time.monotonic() + 10
        while not raw.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        terminal.send("Enter")
        terminal.wait_for(lambda s: "resumed: 6 messages" in s and input_line(s) == "›")
        terminal.send("C-d")
        terminal.wait_until_dead()
    finally:
        terminal.close()
    output = raw.read_bytes().decode("utf-8", "replace")
    first_status = output.index(" · thinking ")
    assert output.index("/help for commands") < first_status
    assert output.index("question number 1") < first_status
    assert output.index("resumed: 6 messages") < first_status
