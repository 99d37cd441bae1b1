"""The interactive mode's colours: the ``theme`` setting, two built-in themes and pi's theme files.

Everything the screen colours is named by its role (``error``, ``tool.title``, ``diff.added``,
``markdown.code`` …): ``render.Painter`` hands the theme to rich, the prompt mark and the rule
take theirs from ``Theme.toolkit_style``. ``dark`` (the default) is what tether always drew, in
the terminal's own 16 colours; ``light`` uses darker colours of the 256 and a code theme for a
light background.

A name other than those is a theme file: ``<name>.json`` in tether's ``themes`` folder (config
dir), else in pi's (``~/.pi/agent/themes``, or ``$PI_CODING_AGENT_DIR/themes``), in pi's format
(``https://pi.dev/schemas/theme.schema.json``): ``vars`` and ``colors``, each colour a hex value,
a 256-colour index, ``""`` (the terminal's default), a variable's name, ``oklch(L C H)`` or
``okhsl(H S L)``. ``okhsl`` is placed the way pi's docs describe it (the saturation relative to
the most chroma sRGB allows at that hue and lightness), found by a search rather than with
OKHSL's closed-form cusp, so a colour can differ slightly from pi's. A file that cannot be used
(unreadable, a missing colour, a bad value, a loop of variables) is one warning line naming the
file and what is wrong, and the default theme applies.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rich.theme import Theme as RichTheme

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


class ThemeError(ValueError):
    """A theme that cannot be used; the message names the file and what is wrong."""


def theme_folders(config_dir: Path) -> list[Path]:
    """Where theme files are looked for, tether's folder first."""
    pi_agent = os.environ.get("PI_CODING_AGENT_DIR")
    pi = Path(pi_agent).expanduser() if pi_agent else Path.home() / ".pi" / "agent"
    return [config_dir / "themes", pi / "themes"]


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
    for folder in theme_folders(config_dir):
        path = folder / f"{name}.json"
        if path.is_file():
            try:
                return theme_from_file(path), None
            except ThemeError as exc:
                return DARK, f"theme: {exc}; using the default theme"
    where = " or ".join(str(f) for f in theme_folders(config_dir))
    return DARK, f'theme: no theme "{name}" (built in: dark, light; files: {where}); using the default theme'


def theme_from_file(path: Path) -> Theme:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ThemeError(f"{path}: cannot be read as JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ThemeError(f"{path}: expected a JSON object")
    data = cast(dict[str, Any], data)
    colors = data.get("colors")
    variables = data.get("vars", {})
    if not isinstance(colors, dict) or not isinstance(variables, dict):
        raise ThemeError(f'{path}: "colors" (and "vars", when given) must be objects')
    colors, variables = cast(dict[str, Any], colors), cast(dict[str, Any], variables)
    missing = [name for name in REQUIRED if name not in colors]
    if missing:
        raise ThemeError(f'{path}: "colors" lacks {", ".join(missing)}')
    resolved: dict[str, str] = {}
    for name in REQUIRED:
        try:
            resolved[name] = _colour(colors[name], variables, ())
        except ThemeError as exc:
            raise ThemeError(f'{path}: "colors.{name}": {exc}') from None
    roles: dict[str, str] = {}
    for role, pi, extra in _FROM_PI:
        roles[role] = " ".join(part for part in (extra, resolved[pi]) if part) or "none"
    appearance = data.get("appearance")
    light = appearance == "light" if appearance in ("light", "dark") else _looks_light(resolved)
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


_HEX = re.compile(r"#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})")
_FUNCTION = re.compile(r"(oklch|okhsl)\(\s*([-\d.]+%?)\s+([-\d.]+%?)\s+([-\d.]+%?)\s*\)")


def _colour(value: object, variables: dict[str, Any], seen: tuple[str, ...]) -> str:
    """A rich colour (``#rrggbb``, ``color(N)`` or ``""``) for one of pi's colour values."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ThemeError(f"expected a colour, got {json.dumps(value)}")
    if isinstance(value, int):
        if not 0 <= value <= 255:
            raise ThemeError(f"a colour index is 0 to 255, got {value}")
        return f"color({value})"
    text = value.strip()
    if text == "":
        return ""
    if _HEX.fullmatch(text):
        digits = text[1:]
        return "#" + ("".join(c * 2 for c in digits) if len(digits) == 3 else digits).lower()
    match = _FUNCTION.fullmatch(text)
    if match is not None:
        kind, *parts = match.groups()
        try:
            return _hex(*(_oklch if kind == "oklch" else _okhsl)(*(_number(p) for p in parts)))
        except ValueError:
            raise ThemeError(f"cannot read {text!r}") from None
    if text in variables:
        if text in seen:
            raise ThemeError(f"variables refer to each other in a loop ({' → '.join((*seen, text))})")
        return _colour(variables[text], variables, (*seen, text))
    raise ThemeError(f'{text!r} is neither a colour (#hex, 0-255, oklch(), okhsl(), "") nor a variable')


def _number(text: str) -> float:
    return float(text[:-1]) / 100 if text.endswith("%") else float(text)


def _oklch(lightness: float, chroma: float, hue: float) -> tuple[float, float, float]:
    return _oklab_to_srgb(
        lightness, chroma * math.cos(math.radians(hue)), chroma * math.sin(math.radians(hue))
    )


def _okhsl(hue: float, saturation: float, lightness: float) -> tuple[float, float, float]:
    """OKHSL as pi's docs describe it: the lightness through OKHSL's toe, the chroma that share
    of the largest chroma still inside sRGB at that hue and lightness (found by bisection)."""
    k1, k2 = 0.206, 0.03
    k3 = (1 + k1) / (1 + k2)
    big_l = (lightness * lightness + k1 * lightness) / (k3 * (lightness + k2))
    low, high = 0.0, 0.5
    for _ in range(30):
        middle = (low + high) / 2
        if _in_gamut(_oklch_linear(big_l, middle, hue)):
            low = middle
        else:
            high = middle
    return _oklch(big_l, saturation * low, hue)


def _oklch_linear(lightness: float, chroma: float, hue: float) -> tuple[float, float, float]:
    a, b = chroma * math.cos(math.radians(hue)), chroma * math.sin(math.radians(hue))
    return _oklab_to_linear(lightness, a, b)


def _in_gamut(rgb: tuple[float, float, float]) -> bool:
    return all(-1e-6 <= c <= 1 + 1e-6 for c in rgb)


def _oklab_to_linear(lightness: float, a: float, b: float) -> tuple[float, float, float]:
    """Björn Ottosson's OKLab → linear sRGB matrices."""
    l_ = (lightness + 0.3963377774 * a + 0.2158037573 * b) ** 3
    m_ = (lightness - 0.1055613458 * a - 0.0638541728 * b) ** 3
    s_ = (lightness - 0.0894841775 * a - 1.2914855480 * b) ** 3
    return (
        4.0767416621 * l_ - 3.3077115913 * m_ + 0.2309699292 * s_,
        -1.2684380046 * l_ + 2.6097574011 * m_ - 0.3413193965 * s_,
        -0.0041960863 * l_ - 0.7034186147 * m_ + 1.7076147010 * s_,
    )


def _oklab_to_srgb(lightness: float, a: float, b: float) -> tuple[float, float, float]:
    def encode(c: float) -> float:
        c = min(1.0, max(0.0, c))  # outside the gamut: clipped
        return 12.92 * c if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055

    red, green, blue = _oklab_to_linear(lightness, a, b)
    return encode(red), encode(green), encode(blue)


def _hex(red: float, green: float, blue: float) -> str:
    return "#" + "".join(f"{round(c * 255):02x}" for c in (red, green, blue))


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
