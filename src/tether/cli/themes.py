"""The interactive mode's colours: the ``theme`` setting, two built-in themes and pi's theme files.

Everything the screen colours is named by its role (``error``, ``tool.title``, ``diff.added``,
``markdown.code`` …): ``render.Painter`` hands the theme to rich, the prompt mark and the rule
take theirs from ``Theme.toolkit_style``. ``dark`` (the default) is what tether always drew, in
the terminal's own 16 colours; ``light`` uses darker colours of the 256 and a code theme for a
light background.

A name other than those is a theme file in pi's format (``tether.session.theme_files``: where
it is looked for, how its colours are read). A file that cannot be used (unreadable, a missing
colour, a bad value, a loop of variables) is one warning line naming the file and what is wrong,
and the default theme applies.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.theme import Theme as RichTheme

from tether.session.theme_files import ThemeError, find_theme_file, read_theme_file, theme_folders

if TYPE_CHECKING:
    from prompt_toolkit.styles import Style

BUILT_IN = ("dark", "light")

ROLES_DARK: dict[str, str] = {
    "error": "red",
    "error.strong": "bold red",
    "success": "green",
    "warning": "yellow",
    "warning.strong": "bold yellow",
    "muted": "dim",
    "muted.italic": "dim italic",
    "strong": "bold",
    "tool.title": "bold cyan",
    "tool.args": "cyan",
    "diff.added": "green",
    "diff.removed": "red",
    "diff.hunk": "cyan",
    "diff.context": "dim",
    "user.mark": "bold magenta",
    "user.text": "bold",
}
"""The built-in dark theme: what tether always drew (the terminal's palette)."""

ROLES_LIGHT: dict[str, str] = {
    **ROLES_DARK,
    "error": "dark_red",
    "error.strong": "bold dark_red",
    "success": "dark_green",
    "warning": "dark_orange3",
    "warning.strong": "bold dark_orange3",
    "muted": "grey42",
    "muted.italic": "italic grey42",
    "tool.title": "bold dark_cyan",
    "tool.args": "dark_cyan",
    "diff.added": "dark_green",
    "diff.removed": "dark_red",
    "diff.hunk": "dark_cyan",
    "diff.context": "grey42",
    "user.mark": "bold dark_magenta",
    "markdown.code": "bold dark_blue",
    "markdown.link": "dark_blue",
    "markdown.item.bullet": "bold dark_orange3",
}

# pi's colour roles → tether's: (tether role, pi colour, extra style)
_FROM_PI: tuple[tuple[str, str, str], ...] = (
    ("error", "error", ""),
    ("error.strong", "error", "bold"),
    ("success", "success", ""),
    ("warning", "warning", ""),
    ("warning.strong", "warning", "bold"),
    ("muted", "muted", ""),
    ("muted.italic", "thinkingText", "italic"),
    ("strong", "text", "bold"),
    ("tool.title", "toolTitle", "bold"),
    ("tool.args", "toolOutput", ""),
    ("diff.added", "toolDiffAdded", ""),
    ("diff.removed", "toolDiffRemoved", ""),
    ("diff.hunk", "accent", ""),
    ("diff.context", "toolDiffContext", ""),
    ("user.mark", "accent", "bold"),
    ("user.text", "userMessageText", "bold"),
    ("markdown.h1", "mdHeading", "bold"),
    ("markdown.h2", "mdHeading", "bold"),
    ("markdown.h3", "mdHeading", "bold"),
    ("markdown.h4", "mdHeading", ""),
    ("markdown.link", "mdLink", ""),
    ("markdown.link_url", "mdLinkUrl", ""),
    ("markdown.code", "mdCode", ""),
    ("markdown.block_quote", "mdQuote", ""),
    ("markdown.hr", "mdHr", ""),
    ("markdown.item.bullet", "mdListBullet", ""),
)
REQUIRED = tuple(sorted({pi for _, pi, _ in _FROM_PI} | {"border", "selectedBg"}))
"""The colours a theme file must define for tether (pi's schema requires these and more)."""


@dataclass(frozen=True, slots=True)
class Theme:
    name: str
    roles: dict[str, str]
    """Role name → rich style."""
    light: bool = False
    color_system: str = "standard"
    """rich's colour system: the terminal's 16 palette colours for ``dark``, 256 or true colour
    for ``light`` and theme files."""
    prompt: str = "bold ansimagenta"
    rule: str = "ansibrightblack"
    approval: str = "bold ansiyellow"
    rich: RichTheme = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "rich", RichTheme(self.roles))

    @property
    def code_theme(self) -> str:
        return "ansi_light" if self.light else "ansi_dark"

    def toolkit_style(self) -> Style:
        from prompt_toolkit.styles import Style

        return Style.from_dict(
            {
                "status": "reverse",
                "chip.steer": "bg:ansiblue fg:ansiwhite",
                "chip.follow": "bg:ansimagenta fg:ansiwhite",
                "chip.image": "bg:ansicyan fg:ansiblack",
                "prompt": self.prompt,
                "rule": self.rule,
                "approval": self.approval,
                "extension-status": self.rule,
            }
        )


DARK = Theme("dark", ROLES_DARK)
LIGHT = Theme("light", ROLES_LIGHT, light=True, color_system="256", rule="ansigray")
"""Darker colours than the 16 a light background gets from most palettes: from the 256."""


def available(config_dir: Path) -> list[str]:
    """The built-in names, then the theme files' (for ``/settings``)."""
    names: list[str] = list(BUILT_IN)
    for folder in theme_folders(config_dir):
        if folder.is_dir():
            names += sorted(p.stem for p in folder.glob("*.json") if p.stem not in names)
    return names


def load_theme(name: str | None, config_dir: Path) -> tuple[Theme, str | None]:
    """The theme ``name`` names, and a warning line when it cannot be used (then ``DARK``).
    pi's ``light/dark`` pair picks the dark one: tether does not ask the terminal its colours."""
    if name is None or name in ("dark", "system"):
        return DARK, None
    if "/" in name:
        name = name.rsplit("/", 1)[-1]
        if name in ("dark", "system"):
            return DARK, None
    if name == "light":
        return LIGHT, None
    path = find_theme_file(name, config_dir)
    if path is not None:
        try:
            return theme_from_file(path), None
        except ThemeError as exc:
            return DARK, f"theme: {exc}; using the default theme"
    where = " or ".join(str(f) for f in theme_folders(config_dir))
    return DARK, f'theme: no theme "{name}" (built in: dark, light; files: {where}); using the default theme'


def theme_from_file(path: Path) -> Theme:
    theme = read_theme_file(path)
    missing = [name for name in REQUIRED if name not in theme.colors]
    if missing:  # all of them in one line, not one per fix
        raise ThemeError(f'{path}: "colors" lacks {", ".join(missing)}')
    resolved = {name: theme.colour(name) for name in REQUIRED}
    roles: dict[str, str] = {}
    for role, pi, extra in _FROM_PI:
        roles[role] = " ".join(part for part in (extra, resolved[pi]) if part) or "none"
    light = theme.appearance == "light" if theme.appearance is not None else _looks_light(resolved)
    truecolor = os.environ.get("COLORTERM", "").lower() in ("truecolor", "24bit")
    return Theme(
        path.stem,  # the name it is chosen by (pi asks for the same in "name")
        roles,
        light=light,
        color_system="truecolor" if truecolor else "256",
        prompt=_toolkit(resolved["accent"], bold=True),
        rule=_toolkit(resolved["border"]),
        approval=_toolkit(resolved["warning"], bold=True),
    )


def _looks_light(resolved: dict[str, str]) -> bool:
    """No ``appearance``: light when the text colour is dark."""
    text = resolved.get("text", "")
    if not text.startswith("#"):
        return False
    red, green, blue = (int(text[i : i + 2], 16) for i in (1, 3, 5))
    return 0.299 * red + 0.587 * green + 0.114 * blue < 128


def _toolkit(colour: str, *, bold: bool = False) -> str:
    """A prompt-toolkit style for a resolved colour (``color(N)`` has no form there: default)."""
    shown = colour if colour.startswith("#") else ""
    return " ".join(part for part in ("bold" if bold else "", shown) if part) or "default"
