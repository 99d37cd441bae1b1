"""Themes: the built-ins, pi's theme files (colour forms, variables), and a bad file as one
warning with the default theme in its place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.cli.render import Painter, error_text
from tether.cli.themes import DARK, LIGHT, REQUIRED, ThemeError, available, load_theme, theme_from_file


def pi_theme(path: Path, **colors: object) -> Path:
    data = {"name": path.stem, "vars": {"base": "#336699"}, "colors": {n: "base" for n in REQUIRED} | colors}
    path.write_text(json.dumps(data))
    return path


def test_built_in_names_and_pi_names(tmp_path: Path) -> None:
    assert load_theme(None, tmp_path) == (DARK, None)
    assert load_theme("system", tmp_path) == (DARK, None)  # pi's default: the terminal's colours
    assert load_theme("light", tmp_path) == (LIGHT, None)
    assert load_theme("light/dark", tmp_path) == (DARK, None)  # pi's pair: its dark half
    theme, warning = load_theme("nosuch", tmp_path)
    assert theme is DARK and warning is not None and 'no theme "nosuch"' in warning
    assert "using the default theme" in warning


def test_colour_forms_of_a_pi_theme_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLORTERM", raising=False)
    path = pi_theme(
        tmp_path / "mine.json",
        error="#f00",
        success=34,
        warning="",
        muted="oklch(100% 0 0)",
        dim="okhsl(0 0% 0%)",
        text="okhsl(90 0% 100%)",
        toolTitle="okhsl(20 100% 60%)",
    )
    theme = theme_from_file(path)
    assert theme.name == "mine" and theme.color_system == "256"
    assert theme.roles["error"] == "#ff0000" and theme.roles["error.strong"] == "bold #ff0000"
    assert theme.roles["success"] == "color(34)" and theme.roles["warning"] == "none"
    assert theme.roles["muted"] == "#ffffff" and theme.roles["strong"] == "bold #ffffff"
    assert theme.roles["user.mark"] == "bold #336699"  # accent, through the variable
    assert theme.roles["tool.title"].startswith("bold #")
    red, green, blue = (int(theme.roles["tool.title"][-6:][i : i + 2], 16) for i in (0, 2, 4))
    assert red == 255 and blue > green  # hue 20, fully saturated: sRGB's red edge, towards magenta
    assert "38;5;196" in error_text(Painter(80, True, theme), "x", aborted=False)
    monkeypatch.setenv("COLORTERM", "truecolor")
    assert theme_from_file(path).color_system == "truecolor"


@pytest.mark.parametrize(
    ("colors", "reason"),
    [
        ({"error": "nosuchvar"}, "\"colors.error\": 'nosuchvar' is neither a colour"),
        ({"error": 300}, '"colors.error": a colour index is 0 to 255'),
        ({"error": "okhsl(a b c)"}, "is neither a colour"),
        ({"error": True}, '"colors.error": expected a colour'),
    ],
)
def test_a_bad_colour_names_the_file_and_the_colour(
    tmp_path: Path, colors: dict[str, object], reason: str
) -> None:
    path = pi_theme(tmp_path / "bad.json", **colors)
    with pytest.raises(ThemeError) as info:
        theme_from_file(path)
    assert str(info.value).startswith(f"{path}: ") and reason in str(info.value)


def test_variables_in_a_loop_and_a_file_in_pis_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pi_dir = tmp_path / "pi"
    (pi_dir / "themes").mkdir(parents=True)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(pi_dir))
    looped = {"name": "loop", "vars": {"a": "b", "b": "a"}, "colors": {n: "a" for n in REQUIRED}}
    (pi_dir / "themes" / "loop.json").write_text(json.dumps(looped))
    pi_theme(pi_dir / "themes" / "good.json")
    (tmp_path / "config").mkdir()
    assert available(tmp_path / "config") == ["dark", "light", "good", "loop"]
    theme, warning = load_theme("loop", tmp_path / "config")
    assert theme is DARK and warning is not None and "loop (a → b → a)" in warning
    theme, warning = load_theme("good", tmp_path / "config")
    assert warning is None and theme.roles["error"] == "#336699"


def test_a_theme_file_nested_too_deeply_is_a_warning(tmp_path: Path) -> None:
    """Deeper than the JSON parser recurses: its RecursionError ended the start-up (and every
    HTML export) with a traceback; it is a warning and the default theme, as other damage is."""
    (tmp_path / "themes").mkdir()
    (tmp_path / "themes" / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    theme, warning = load_theme("deep", tmp_path)
    assert theme is DARK and warning is not None and "deep.json: cannot be read as JSON" in warning
