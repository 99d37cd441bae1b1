"""The interactive mode's key bindings: named actions, their default keys, and ``keybindings.json``.

The action names and the key syntax are pi's (``app.model.select``, ``"ctrl+l"``), so a pi user's
file mostly carries over: ``keybindings.json`` in the config folder maps an action to one key or
a list of keys (``[]`` unbinds it). A file that cannot be used as a whole (not JSON, an unknown
action, a key the terminal cannot send) is reported in one warning line and ignored: the defaults
stay, rather than half a file's worth of surprises.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from tether.errors import UserError
from tether.wire.json_line import load_line

FILE_NAME = "keybindings.json"


@dataclass(frozen=True, slots=True)
class Action:
    name: str
    keys: tuple[str, ...]
    """Default keys, in pi's syntax."""
    summary: str


ACTIONS: tuple[Action, ...] = (
    Action("tui.input.submit", ("enter",), "send (while the agent works: steer it)"),
    Action("app.message.followUp", ("alt+enter",), "queue a follow-up while the agent works"),
    Action("tui.input.newLine", ("ctrl+j",), "add a line"),
    Action("app.interrupt", ("escape",), "while the agent works: queued messages back to the input, abort"),
    Action("app.message.dequeue", ("alt+up",), "queued messages back to the input (the run goes on)"),
    Action("app.clear", ("ctrl+c",), "abort the run; clear the input; twice: exit"),
    Action("app.exit", ("ctrl+d",), "exit (on an empty input)"),
    Action("app.model.select", ("ctrl+l",), "open the model picker"),
    Action("app.model.cycleForward", ("ctrl+p",), "next model (of --models, or every usable model)"),
    Action("app.model.cycleBackward", ("alt+p",), "previous model"),
    Action("app.thinking.cycle", ("shift+tab",), "next thinking level"),
    Action("app.thinking.toggle", ("ctrl+t",), "show or fold thinking"),
    Action("app.tools.expand", ("ctrl+o",), "open the transcript, nothing folded"),
    Action("app.editor.external", ("ctrl+g",), "edit the input in $VISUAL / $EDITOR"),
    Action("app.message.copy", ("ctrl+x",), "copy the last answer (like /copy)"),
    Action("app.session.resume", (), "open the session picker (like /resume)"),
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
    """Why the file was not used (one line), or ``None``."""

    def for_action(self, name: str) -> list[tuple[str, ...]]:
        """The prompt-toolkit key sequences of action ``name``."""
        return [to_prompt_toolkit(key) for key in self.keys[name]]

    def label(self, name: str) -> str:
        """How ``/hotkeys`` and hints show an action's keys: ``Ctrl+L``, or ``(unbound)``."""
        keys = self.keys[name]
        return ", ".join("+".join(p.capitalize() for p in k.split("+")) for k in keys) or "(unbound)"


DEFAULTS = Bindings({a.name: a.keys for a in ACTIONS})


def load_bindings(config_dir: Path) -> Bindings:
    """The defaults with ``config_dir/keybindings.json`` applied; a file that is wrong anywhere
    leaves the defaults and says why in ``warning``."""
    path = config_dir / FILE_NAME
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return DEFAULTS
    except OSError as exc:
        return Bindings(DEFAULTS.keys, f"{path}: cannot read it ({exc.strerror}); using the default keys")
    try:
        return Bindings({**DEFAULTS.keys, **_parse(text)})
    except ValueError as exc:
        return Bindings(DEFAULTS.keys, f"{path}: {exc}; using the default keys")


def _parse(text: bytes) -> dict[str, tuple[str, ...]]:
    try:
        data: object = load_line(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except ValueError as exc:  # not UTF-8, nested too deeply
        raise ValueError(f"not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError('expected an object like {"app.model.select": "ctrl+l"}')
    out: dict[str, tuple[str, ...]] = {}
    for name, value in cast(dict[str, object], data).items():
        if name == "$schema":
            continue
        if name not in BY_NAME:
            raise ValueError(f"unknown action {name!r} (/hotkeys lists them)")
        keys = [value] if isinstance(value, str) else value
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in cast(list[object], keys)):
            raise ValueError(f"{name}: expected a key or a list of keys")
        checked = tuple(cast(list[str], keys))
        for key in checked:
            try:
                to_prompt_toolkit(key)
            except UnsendableKeyError as exc:
                raise ValueError(f"{name}: {exc}") from None
        out[name] = checked
    return out


def hotkeys_text(bindings: Bindings, extra: Sequence[tuple[str, str]] = ()) -> str:
    """``/hotkeys``: every action with its keys, then the fixed keys of the full-screen views."""
    width = max(len(bindings.label(a.name)) for a in ACTIONS)
    lines = [f"{bindings.label(a.name).ljust(width)}  {a.summary}  [{a.name}]" for a in ACTIONS]
    lines += [f"{k.ljust(width)}  {v}" for k, v in extra]
    return "\n".join(lines)
