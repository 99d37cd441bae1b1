"""The interactive mode's key bindings: named actions, their default keys, and ``keybindings.json``.

The action names and the key syntax are pi's (``app.model.select``, ``"ctrl+l"``), so a pi user's
file mostly carries over: ``keybindings.json`` in the config folder maps an action to one key or
a list of keys (``[]`` unbinds it). As in pi, what can be used is applied and the rest is named
in one warning line: an action tether does not have (pi has editor and selector actions tether leaves
to prompt-toolkit) is skipped, an entry with a key the terminal cannot send keeps its default
keys. Only a file that is not a JSON object at all leaves every default.

``shift+enter`` is a key here although prompt-toolkit has no name for it: terminals that report
it send ``CSI 13;2u`` (the kitty protocol, tmux's ``extended-keys-format csi-u``) or
``CSI 27;2;13~`` (xterm's modifyOtherKeys, tmux 3.2-3.4's ``extended-keys``); ``install_sequences``
teaches prompt-toolkit's parser both as ``SHIFT_ENTER``, a function key no keyboard sends.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from tether.errors import UserError
from tether.own_files import RefusedFile, read_own_file
from tether.wire.json_line import load_line

FILE_NAME = "keybindings.json"
SHIFT_ENTER = "f24"
"""The prompt-toolkit key Shift+Enter's sequences are parsed as (see ``install_sequences``)."""
SHIFT_ENTER_SEQUENCES = ("\x1b[13;2u", "\x1b[27;2;13~")
ALT_ENTER_SEQUENCES = ("\x1b[13;3u", "\x1b[27;3;13~")
MODIFY_OTHER_KEYS_ON = "\x1b[>4;1m"
"""Asks xterm-like terminals (and tmux with ``extended-keys on``) to report the modified keys
that have no code of their own, such as Shift+Enter; keys that have one (Ctrl-C) are unchanged."""
MODIFY_OTHER_KEYS_OFF = "\x1b[>4m"


def install_sequences() -> None:
    """Teach prompt-toolkit's input parser Shift+Enter and the extended forms of Alt+Enter
    (it reads ``CSI 27;2;13~`` as a plain Enter, which would send the message)."""
    from prompt_toolkit.input.ansi_escape_sequences import ANSI_SEQUENCES
    from prompt_toolkit.keys import Keys

    for sequence in SHIFT_ENTER_SEQUENCES:
        ANSI_SEQUENCES[sequence] = Keys.F24
    for sequence in ALT_ENTER_SEQUENCES:
        ANSI_SEQUENCES[sequence] = (Keys.Escape, Keys.ControlM)


@dataclass(frozen=True, slots=True)
class Action:
    name: str
    keys: tuple[str, ...]
    """Default keys, in pi's syntax."""
    summary: str
    view: str = ""
    """The full-screen view the action belongs to (``"tree"``), or ``""`` for the input box:
    a view's keys are not taken from extensions' shortcuts, which apply at the input box."""


ACTIONS: tuple[Action, ...] = (
    Action("tui.input.submit", ("enter",), "send (while the agent works: steer it)"),
    Action("app.message.followUp", ("alt+enter",), "queue a follow-up while the agent works"),
    Action("tui.input.newLine", ("shift+enter", "ctrl+j"), "add a line"),
    Action(
        "app.interrupt", ("escape",), "while the agent works: abort it (queued messages back to the input)"
    ),
    Action("app.message.dequeue", ("alt+up",), "queued messages back to the input (the run goes on)"),
    Action("app.clear", ("ctrl+c",), "clear the input (the run goes on); twice on an empty input: exit"),
    Action("app.exit", ("ctrl+d",), "exit (on an empty input)"),
    Action("app.suspend", ("ctrl+z",), "suspend to the background (the shell's fg brings it back)"),
    Action("app.model.select", ("ctrl+l",), "open the model picker"),
    Action("app.model.cycleForward", ("ctrl+p",), "next model (of --models, or every usable model)"),
    Action("app.model.cycleBackward", ("alt+p",), "previous model"),
    Action("app.thinking.cycle", ("shift+tab",), "next thinking level"),
    Action("app.thinking.toggle", ("ctrl+t",), "show or fold thinking"),
    Action("app.tools.expand", ("ctrl+o",), "open the transcript, nothing folded"),
    Action("app.editor.external", ("ctrl+g",), "edit the input in $VISUAL / $EDITOR"),
    Action("app.message.copy", ("ctrl+x",), "copy the last answer (like /copy)"),
    Action("app.clipboard.pasteImage", ("ctrl+v",), "attach the clipboard's image to the next message"),
    Action("app.session.new", (), "start a new session (like /new)"),
    Action("app.session.fork", (), "fork from one of your messages (like /fork)"),
    Action("app.session.resume", (), "open the session picker (like /resume)"),
    Action("app.session.tree", (), "open the tree navigator (like /tree)"),
    # pi's /tree keys. Alt+Left/Right (pi's second keys) are left out: the navigator takes Esc at
    # once, so Alt+key would never arrive; Shift+Ctrl+O is a key terminals do not send.
    Action("app.tree.foldOrUp", ("ctrl+left",), "in /tree: fold the branch, or go up to its start", "tree"),
    Action("app.tree.unfoldOrDown", ("ctrl+right",), "in /tree: unfold, or go down to the next fork", "tree"),
    Action("app.tree.editLabel", ("shift+l",), "in /tree: edit the entry's label", "tree"),
    Action("app.tree.toggleLabelTimestamp", ("shift+t",), "in /tree: show when each label was set", "tree"),
    Action(
        "app.tree.filter.default", ("ctrl+d",), "in /tree: the default view (no settings entries)", "tree"
    ),
    Action("app.tree.filter.noTools", ("ctrl+t",), "in /tree: hide tool results (again: default)", "tree"),
    Action("app.tree.filter.userOnly", ("ctrl+u",), "in /tree: only your messages (again: default)", "tree"),
    Action(
        "app.tree.filter.labeledOnly", ("ctrl+l",), "in /tree: only labelled entries (again: default)", "tree"
    ),
    Action("app.tree.filter.all", ("ctrl+a",), "in /tree: every entry (again: default)", "tree"),
    Action("app.tree.filter.cycleForward", ("ctrl+o",), "in /tree: the next filter", "tree"),
    Action("app.tree.filter.cycleBackward", (), "in /tree: the previous filter", "tree"),
)
BY_NAME: dict[str, Action] = {a.name: a for a in ACTIONS}

_NAMED = {
    "escape": "escape",
    "esc": "escape",
    "enter": "enter",
    "return": "enter",
    "tab": "tab",
    "space": "space",
    "backspace": "backspace",
    "delete": "delete",
    "insert": "insert",
    "home": "home",
    "end": "end",
    "pageup": "pageup",
    "pagedown": "pagedown",
    "up": "up",
    "down": "down",
    "left": "left",
    "right": "right",
    **{f"f{n}": f"f{n}" for n in range(1, 13)},
}
_CTRL_NAMED = {"up", "down", "left", "right", "home", "end", "pageup", "pagedown", "delete"}
_SHIFT_NAMED = {"tab", *_CTRL_NAMED}


class UnsendableKeyError(UserError, ValueError):
    """A key the terminal cannot send as written (e.g. ``ctrl+shift+p``)."""


def to_prompt_toolkit(key: str) -> tuple[str, ...]:
    """``"ctrl+l"`` → ``("c-l",)``; ``"alt+enter"`` → ``("escape", "enter")``; ``"shift+tab"``
    → ``("s-tab",)``. Raises ``UnsendableKeyError`` for what a terminal does not report (super, ctrl+shift
    on letters) or does not know."""
    parts = key.strip().lower().split("+")
    base, modifiers = parts[-1], set(parts[:-1])
    if base in ("enter", "return") and modifiers == {"shift"}:
        return (SHIFT_ENTER,)
    if not base or len(modifiers) != len(parts) - 1 or not modifiers <= {"ctrl", "alt", "shift"}:
        raise UnsendableKeyError(f"{key!r}: not a key (modifiers are ctrl, alt, shift)")
    alt = ("escape",) if "alt" in modifiers else ()
    modifiers.discard("alt")
    if base in _NAMED:
        name = _NAMED[base]
        if not modifiers:
            return (*alt, name)
        if modifiers == {"ctrl"} and name in _CTRL_NAMED:
            return (*alt, f"c-{name}")
        if modifiers == {"shift"} and name in _SHIFT_NAMED:
            return (*alt, f"s-{name}")
        if modifiers == {"ctrl", "shift"} and name in _CTRL_NAMED:
            return (*alt, f"c-s-{name}")
        raise UnsendableKeyError(f"{key!r}: a terminal does not send that combination")
    if len(base) != 1:
        raise UnsendableKeyError(f"{key!r}: unknown key {base!r}")
    if not modifiers:
        return (*alt, base)
    if modifiers == {"ctrl"} and (base.isalpha() or base in "@\\]^_"):
        return (*alt, f"c-{base}")
    if modifiers == {"shift"} and base.isalpha():
        return (*alt, base.upper())
    raise UnsendableKeyError(f"{key!r}: a terminal does not send that combination")


@dataclass(frozen=True, slots=True)
class Bindings:
    keys: Mapping[str, tuple[str, ...]]
    """Action name → its keys in pi's syntax (checked: each converts)."""
    warning: str | None = None
    """What in the file was not used and why (one line), or ``None``."""

    def for_action(self, name: str) -> list[tuple[str, ...]]:
        """The prompt-toolkit key sequences of action ``name``."""
        return [to_prompt_toolkit(key) for key in self.keys[name]]

    def label(self, name: str) -> str:
        """How ``/hotkeys`` and hints show an action's keys: ``Ctrl+L``, or ``(unbound)``."""
        keys = self.keys[name]
        return ", ".join("+".join(p.capitalize() for p in k.split("+")) for k in keys) or "(unbound)"


DEFAULTS = Bindings({a.name: a.keys for a in ACTIONS})


def load_bindings(config_dir: Path) -> Bindings:
    """The defaults with what can be used of ``config_dir/keybindings.json`` applied; what
    cannot is named in ``warning``."""
    path = config_dir / FILE_NAME
    try:
        # not read_bytes: a FIFO there blocked the start for good, /dev/zero filled memory
        text = read_own_file(path, None, limit=8 << 20)
    except FileNotFoundError:
        return DEFAULTS
    except RefusedFile as exc:
        return Bindings(DEFAULTS.keys, f"{path}: cannot read it ({exc}); using the default keys")
    except OSError as exc:
        return Bindings(DEFAULTS.keys, f"{path}: cannot read it ({exc.strerror}); using the default keys")
    try:
        keys, problems = _parse(text)
    except ValueError as exc:
        return Bindings(DEFAULTS.keys, f"{path}: {exc}; using the default keys")
    warning = f"{path}: {'; '.join(problems)}; the rest is applied" if problems else None
    return Bindings({**DEFAULTS.keys, **keys}, warning)


def _parse(text: bytes) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """The usable entries and what was wrong with the others; ``ValueError`` when the file is
    not a JSON object."""
    try:
        data: object = load_line(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except ValueError as exc:  # not UTF-8, nested too deeply
        raise ValueError(f"not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError('expected an object like {"app.model.select": "ctrl+l"}')
    out: dict[str, tuple[str, ...]] = {}
    unknown: list[str] = []
    problems: list[str] = []
    for name, value in cast(dict[str, object], data).items():
        if name == "$schema":
            continue
        if name not in BY_NAME:
            unknown.append(repr(name))
            continue
        keys = [value] if isinstance(value, str) else value
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in cast(list[object], keys)):
            problems.append(f"{name}: expected a key or a list of keys (default kept)")
            continue
        checked = tuple(cast(list[str], keys))
        try:
            for key in checked:
                to_prompt_toolkit(key)
        except UnsendableKeyError as exc:
            problems.append(f"{name}: {exc} (default kept)")
            continue
        out[name] = checked
    if unknown:
        noun = "action" if len(unknown) == 1 else "actions"
        problems.insert(0, f"ignored {len(unknown)} {noun} tether does not have ({', '.join(unknown)})")
    return out, problems


def hotkeys_text(bindings: Bindings, extra: Sequence[tuple[str, str]] = ()) -> str:
    """``/hotkeys``: every action with its keys, then the fixed keys of the full-screen views."""
    width = max(len(bindings.label(a.name)) for a in ACTIONS)
    lines = [f"{bindings.label(a.name).ljust(width)}  {a.summary}  [{a.name}]" for a in ACTIONS]
    lines += [f"{k.ljust(width)}  {v}" for k, v in extra]
    return "\n".join(lines)
