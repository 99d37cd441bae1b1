"""``keybindings.json``, the key syntax, the pickers' filter and sort, and OSC 52: without a terminal."""

from __future__ import annotations

import base64
import json
import os
import threading
from pathlib import Path

import pytest

from tether.cli.clipboard import osc52
from tether.cli.keybindings import (
    ACTIONS,
    DEFAULTS,
    UnsendableKeyError,
    hotkeys_text,
    load_bindings,
    to_prompt_toolkit,
)
from tether.cli.pickers import matches, sort_sessions
from tether.session.stats import SessionRow


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("ctrl+l", ("c-l",)),
        ("alt+enter", ("escape", "enter")),
        ("alt+up", ("escape", "up")),
        ("shift+tab", ("s-tab",)),
        ("ctrl+pageUp", ("c-pageup",)),
        ("Esc", ("escape",)),
        ("f5", ("f5",)),
        ("shift+l", ("L",)),
        ("x", ("x",)),
    ],
)
def test_pi_key_syntax_becomes_prompt_toolkit_keys(key: str, expected: tuple[str, ...]) -> None:
    assert to_prompt_toolkit(key) == expected


@pytest.mark.parametrize("key", ["ctrl+shift+p", "super+k", "ctrl+", "hyper+x", "ctrl+banana", "shift+1"])
def test_keys_a_terminal_cannot_send_are_refused(key: str) -> None:
    with pytest.raises(UnsendableKeyError):
        to_prompt_toolkit(key)


def test_every_default_key_converts() -> None:
    for action in ACTIONS:
        DEFAULTS.for_action(action.name)


def test_a_file_changes_and_unbinds_keys(tmp_path: Path) -> None:
    (tmp_path / "keybindings.json").write_text(
        json.dumps(
            {
                "$schema": "x",
                "app.model.select": "alt+m",
                "app.message.copy": [],
                "app.exit": ["ctrl+q", "ctrl+d"],
            }
        )
    )
    bindings = load_bindings(tmp_path)
    assert bindings.warning is None
    assert bindings.for_action("app.model.select") == [("escape", "m")]
    assert bindings.for_action("app.message.copy") == []
    assert (
        bindings.label("app.exit") == "Ctrl+Q, Ctrl+D" and bindings.label("app.message.copy") == "(unbound)"
    )
    assert bindings.for_action("app.thinking.cycle") == [("s-tab",)]  # untouched: the default
    assert "Alt+M" in hotkeys_text(bindings)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{not json", "not valid JSON (line 1"),
        ('["ctrl+l"]', "expected an object"),
    ],
)
def test_a_bad_file_is_one_line_and_the_defaults_stay(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "keybindings.json"
    path.write_text(text)
    _check_ignored(path, reason)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b'{"app.\xff": "x"}', "not valid JSON (not UTF-8 text"),
        (b"[" * 100_000 + b"]" * 100_000, "not valid JSON (nested too deeply)"),
        (b'{"app.model.select":' * 100_000 + b'"x"' + b"}" * 100_000, "not valid JSON (nested too deeply)"),
    ],
)
def test_a_damaged_file_is_one_line_too(tmp_path: Path, data: bytes, reason: str) -> None:
    """Not text, or nested deeper than the parser recurses: the same warning, not a traceback."""
    path = tmp_path / "keybindings.json"
    path.write_bytes(data)
    _check_ignored(path, reason)


def _check_ignored(path: Path, reason: str) -> None:
    bindings = load_bindings(path.parent)
    assert bindings.keys == DEFAULTS.keys
    assert bindings.warning is not None and "\n" not in bindings.warning
    assert bindings.warning.startswith(f"{path}: {reason}") and bindings.warning.endswith(
        "using the default keys"
    )


def test_a_pi_file_applies_what_tether_has_and_names_the_rest_in_one_line(tmp_path: Path) -> None:
    """A pi user's file: actions tether lacks and keys a terminal cannot send are skipped (the
    action keeps its default), everything else applies."""
    path = tmp_path / "keybindings.json"
    path.write_text(
        json.dumps(
            {
                "$schema": "https://pi.dev/schemas/keybindings.schema.json",
                "app.session.togglePath": "ctrl+shift+n",
                "tui.editor.cursorLeft": ["left", "ctrl+b"],
                "app.model.select": "alt+m",
                "app.model.cycleForward": ["ctrl+n", "super+n"],
                "app.thinking.cycle": 5,
                "tui.input.newLine": "shift+enter",
            }
        )
    )
    bindings = load_bindings(tmp_path)
    assert bindings.for_action("app.model.select") == [("escape", "m")]
    assert bindings.for_action("tui.input.newLine") == [("f24",)]  # Shift+Enter's sequences
    assert bindings.keys["app.model.cycleForward"] == DEFAULTS.keys["app.model.cycleForward"]
    assert bindings.keys["app.thinking.cycle"] == DEFAULTS.keys["app.thinking.cycle"]
    warning = bindings.warning
    assert warning is not None and "\n" not in warning
    assert warning == (
        f"{path}: ignored 2 actions tether does not have ('app.session.togglePath', 'tui.editor.cursorLeft'); "
        "app.model.cycleForward: 'super+n': not a key (modifiers are ctrl, alt, shift) (default kept); "
        "app.thinking.cycle: expected a key or a list of keys (default kept); the rest is applied"
    )


def test_no_file_is_the_defaults_without_a_warning(tmp_path: Path) -> None:
    assert load_bindings(tmp_path) == DEFAULTS


def test_picker_filter_and_session_sort() -> None:
    assert matches("", "anything")
    assert matches("REL plan", "beta release plan") and not matches("rel alpha", "beta release plan")
    rows = [
        SessionRow("a", 3, "zeta", 1, 0.0, "/p"),
        SessionRow("b", 2, "alpha", 1, 0.0, "/p"),
        SessionRow("c", 1, "Alpha", 1, 0.0, "/p"),
    ]
    assert [r.id for r in sort_sessions(rows, "date")] == ["a", "b", "c"]
    assert [r.id for r in sort_sessions(rows, "name")] == ["b", "c", "a"]  # A-Z, newest first among equals


def test_osc52_carries_the_text_base64_encoded() -> None:
    sequence = osc52("héllo\nworld")
    assert sequence.startswith("\x1b]52;c;") and sequence.endswith("\x07")
    assert base64.b64decode(sequence[7:-1]).decode() == "héllo\nworld"


def test_pi_tree_actions_are_tethers_and_leave_the_input_box_keys_free(tmp_path: Path) -> None:
    """pi's ``app.tree.*`` actions rebind the tree navigator's keys without a warning; they are
    the navigator's alone, so an extension's Ctrl+A shortcut at the input box is still bound."""
    from tether.cli.interactive_extensions import shortcut_keys
    from tether.session.extensions.api import ExtensionShortcut

    (tmp_path / "keybindings.json").write_text(
        json.dumps({"app.tree.filter.all": "ctrl+b", "app.tree.foldOrUp": ["ctrl+left", "ctrl+up"]})
    )
    bindings = load_bindings(tmp_path)
    assert bindings.warning is None
    assert bindings.for_action("app.tree.filter.all") == [("c-b",)]
    assert bindings.for_action("app.tree.foldOrUp") == [("c-left",), ("c-up",)]
    assert DEFAULTS.for_action("app.tree.editLabel") == [("L",)]

    async def nothing(_context: object) -> None: ...

    reports: list[str] = []
    shortcut = ExtensionShortcut("ctrl+a", "select all", nothing, "ext")
    taken = ExtensionShortcut("ctrl+l", "mine", nothing, "ext")  # the model picker's
    assert shortcut_keys([shortcut, taken], DEFAULTS, reports.append) == [(("c-a",), shortcut)]
    assert reports == ["extension ext: shortcut ctrl+l is already bound; not bound"]


def test_a_keybindings_file_that_is_a_fifo_is_a_warning_not_a_blocked_start(tmp_path: Path) -> None:
    """Read at every interactive start: opening a FIFO for reading waits for a writer, for good."""
    os.mkfifo(tmp_path / "keybindings.json")
    found: list[object] = []
    thread = threading.Thread(target=lambda: found.append(load_bindings(tmp_path)), daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "blocked"
    [bindings] = found
    assert isinstance(bindings, type(DEFAULTS)) and bindings.keys == DEFAULTS.keys
    assert bindings.warning is not None and "not a regular file" in bindings.warning
