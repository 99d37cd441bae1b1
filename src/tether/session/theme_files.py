"""Theme files in pi's format, read for every place that shows colours: the interactive mode's
(``tether.cli.themes``) and the HTML export's (``tether.session.export_html``).

A theme named other than a built-in one is ``<name>.json`` in tether's ``themes`` folder (config
dir), else in pi's (``~/.pi/agent/themes``, or ``$PI_CODING_AGENT_DIR/themes``), in pi's format
(``https://pi.dev/schemas/theme.schema.json``): ``vars`` and ``colors``, each colour a hex value,
a 256-colour index, ``""`` (the terminal's default), a variable's name, ``oklch(L C H)`` or
``okhsl(H S L)``; an optional ``export`` section gives the HTML export's page, card and info
backgrounds. ``okhsl`` is placed the way pi's docs describe it (the saturation relative to the most
chroma sRGB allows at that hue and lightness), found by a search rather than with OKHSL's
closed-form cusp, so a colour can differ slightly from pi's. Colours are resolved one by one, when
asked for: a colour nobody here uses cannot make a file unusable.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from tether.own_files import read_own_file


class ThemeError(ValueError):
    """A theme that cannot be used; the message names the file and what is wrong."""


def theme_folders(config_dir: Path) -> list[Path]:
    """Where theme files are looked for, tether's folder first."""
    pi_agent = os.environ.get("PI_CODING_AGENT_DIR")
    pi = Path(pi_agent).expanduser() if pi_agent else Path.home() / ".pi" / "agent"
    return [config_dir / "themes", pi / "themes"]


def find_theme_file(name: str, config_dir: Path) -> Path | None:
    """The file of theme ``name`` (the first folder that has it); ``None``: no such file."""
    if not name or "/" in name or "\\" in name or name.startswith("."):
        return None  # a name, not a path: a project's "theme" setting reaches no file elsewhere
    for folder in theme_folders(config_dir):
        path = folder / f"{name}.json"
        if path.is_file():
            return path
    return None


@dataclass(frozen=True, slots=True)
class ThemeFile:
    """A theme file as read: its colours, resolved on demand (``colour``)."""

    path: Path
    colors: dict[str, Any]
    variables: dict[str, Any]
    export: dict[str, Any]
    appearance: str | None
    """``light`` or ``dark`` when the file says so."""

    def colour(self, name: str) -> str:
        """Colour ``name`` of ``colors`` as ``#rrggbb``, ``color(N)`` or ``""``; ``ThemeError``
        naming the file and the colour when it is missing or cannot be read."""
        if name not in self.colors:
            raise ThemeError(f'{self.path}: "colors" lacks {name}')
        try:
            return _colour(self.colors[name], self.variables, ())
        except ThemeError as exc:
            raise ThemeError(f'{self.path}: "colors.{name}": {exc}') from None

    def export_colour(self, name: str) -> str | None:
        """The ``export`` section's ``name`` (``pageBg``, ``cardBg``, ``infoBg``); ``None`` when
        not given (or ``""``)."""
        if name not in self.export:
            return None
        try:
            return _colour(self.export[name], self.variables, ()) or None
        except ThemeError as exc:
            raise ThemeError(f'{self.path}: "export.{name}": {exc}') from None


def read_theme_file(path: Path) -> ThemeFile:
    try:
        # own_files' policy: a link to /dev/zero or a sparse 1 GB file is refused unread
        data = json.loads(read_own_file(path, None).decode("utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
        raise ThemeError(f"{path}: cannot be read as JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ThemeError(f"{path}: expected a JSON object")
    data = cast(dict[str, Any], data)
    colors = data.get("colors")
    variables = data.get("vars", {})
    export = data.get("export", {})
    if not isinstance(colors, dict) or not isinstance(variables, dict) or not isinstance(export, dict):
        raise ThemeError(f'{path}: "colors" (and "vars" and "export", when given) must be objects')
    appearance = data.get("appearance")
    return ThemeFile(
        path,
        cast(dict[str, Any], colors),
        cast(dict[str, Any], variables),
        cast(dict[str, Any], export),
        appearance if appearance in ("light", "dark") else None,
    )


def css_colour(colour: str) -> str | None:
    """A resolved colour as CSS ``#rrggbb`` (a 256-colour index by xterm's palette); ``None``
    for ``""``, the terminal's default, which a page does not know."""
    if colour.startswith("#"):
        return colour
    if not colour.startswith("color("):
        return None
    index = int(colour[6:-1])
    if index < 16:
        return _SIXTEEN[index]
    if index < 232:
        steps = (0, 95, 135, 175, 215, 255)
        index -= 16
        return _hex(*(steps[i] / 255 for i in (index // 36, index // 6 % 6, index % 6)))
    grey = (8 + 10 * (index - 232)) / 255
    return _hex(grey, grey, grey)


_SIXTEEN = (
    "#000000", "#800000", "#008000", "#808000", "#000080", "#800080", "#008080", "#c0c0c0",
    "#808080", "#ff0000", "#00ff00", "#ffff00", "#0000ff", "#ff00ff", "#00ffff", "#ffffff",
)  # fmt: skip
"""xterm's first 16 colours (a terminal may show its own; a page needs some values)."""


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
