"""The HTML export in the user's theme, as pi's ``/export`` is: a theme file's colours by role, its
``export`` backgrounds (or ones made from ``userMessageBg``), code highlighted for a dark page;
the built-in themes (the terminal's own palette) keep the page's light colours; a theme that
cannot be used is one line, and the page has its default colours."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tether.session.events import SessionEvent
from tether.session.export_html import page_colours
from tether.session.factory import SessionChoice, create_agent_session
from tether.session.html_markup import code_css
from tether.session.html_page import PALETTE, render_session_page
from tether.session.settings import Settings

OCEAN = {
    "name": "ocean",
    "vars": {"sea": "#4fa3ff", "ink": "#e0e6f0"},
    "colors": {
        "text": "ink",
        "muted": 245,  # an index of the 256: xterm's grey
        "accent": "sea",
        "error": "#ff5555",
        "userMessageBg": "#203040",
        "toolDiffAdded": "oklch(0.7 0.15 145)",
        "toolSuccessBg": "",  # the terminal's default: the page keeps its own
    },
    "export": {"pageBg": "#101820"},
}


def variables(page: str) -> dict[str, str]:
    """The ``--ROLE: value`` declarations of the page's ``:root``."""
    root = re.search(r":root \{([^}]*)\}", page)
    assert root is not None
    return dict(re.findall(r"--([\w-]+): ([^;]+);", root.group(1)))


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    folder = tmp_path / "home" / "config"
    (folder / "themes").mkdir(parents=True)
    (folder / "themes" / "ocean.json").write_text(json.dumps(OCEAN))
    return folder


def test_a_theme_files_colours_become_the_pages(config: Path) -> None:
    colours, dark, problem = page_colours("ocean", config)
    assert problem is None and dark  # light text: a dark page
    assert colours["text"] == "#e0e6f0" and colours["accent"] == colours["user"] == "#4fa3ff"
    assert colours["muted"] == "#8a8a8a" and colours["error"] == "#ff5555"
    assert colours["user-bg"] == "#203040"
    assert colours["page-bg"] == "#101820"  # the export section's
    assert colours["card-bg"] == "#1b2936"  # made from userMessageBg: 0.85 of it
    assert re.fullmatch(r"#[0-9a-f]{6}", colours["diff-add"])
    assert "summary-bg" not in colours  # "": left to the page


def test_the_built_in_themes_keep_the_light_page(config: Path) -> None:
    for theme in (None, "dark", "light", "system", "light/dark"):
        assert page_colours(theme, config) == ({}, False, None)


def test_a_theme_that_cannot_be_used_is_one_line(config: Path) -> None:
    (config / "themes" / "broken.json").write_text(json.dumps({"colors": {"text": "not a colour"}}))
    colours, dark, problem = page_colours("broken", config)
    assert (colours, dark) == ({}, False) and problem is not None
    assert '"colors.text"' in problem and str(config / "themes" / "broken.json") in problem
    _, _, missing = page_colours("nosuch", config)
    assert missing is not None and 'no theme "nosuch"' in missing


def test_a_theme_name_is_no_path_and_a_huge_theme_file_is_refused_unread(
    config: Path, tmp_path: Path
) -> None:
    """A project's ``theme`` setting ("../../elsewhere/x") reached files outside the themes
    folders, and a theme file was read whole, a sparse 1 GB one too."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.json").write_text(json.dumps(OCEAN))
    _, _, outside = page_colours("../../../elsewhere/x", config)
    assert outside is not None and "no theme" in outside
    with (config / "themes" / "huge.json").open("wb") as file:
        file.write(b"{")
        file.truncate(1 << 30)
    _, _, huge = page_colours("huge", config)
    assert huge is not None and "larger than 1 MB, not read" in huge, huge


def test_only_colours_reach_the_style() -> None:
    page = render_session_page(
        [], None, title="t", meta={}, colours={"text": "red; } body { display: none", "accent": "#123456"}
    )
    assert variables(page) == {**PALETTE, "accent": "#123456"}
    assert "display: none" not in page


async def test_export_writes_the_page_in_the_settings_theme(
    config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [{"content": [{"type": "text", "chunks": ["hi"]}]}]}))
    monkeypatch.setenv("TETHER_SCRIPTED", str(script))
    project = tmp_path / "project"
    project.mkdir()
    notices: list[str] = []

    def noted(event: SessionEvent) -> None:
        if event["type"] == "notice":
            notices.append(event["message"])

    for theme in ("ocean", "light", "broken"):
        core = create_agent_session(cwd=project, settings=Settings(theme=theme), session=SessionChoice())
        core.subscribe(noted)
        try:
            await core.prompt("hello")
            page = core.export(project / f"{theme}.html").read_text()
        finally:
            await core.close()
        if theme == "ocean":
            assert variables(page) == {**PALETTE, **page_colours("ocean", config)[0]}
            assert code_css(dark=True) in page
        else:
            assert variables(page) == PALETTE and code_css() in page
    assert notices == ['theme: no theme "broken" for the HTML page; it has the default colours']
