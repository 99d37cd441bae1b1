"""``/export FILE.html``, ``export_html`` and ``tether --export``: a stored session as one
self-contained HTML page, every branch of it (the page itself: ``html_page``).

The page takes the colours of the user's theme, as pi's export does: a theme file's colours
(``tether.session.theme_files``) by role, and its ``export`` section's page and card backgrounds,
else backgrounds made from its ``userMessageBg`` (a touch darker for the page, as pi derives
them). tether's built-in ``dark`` and ``light`` themes are the terminal's own palette, with no
colour values to put on a page: with them the page keeps its own light palette.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tether.session import Session
from tether.session.html_page import render_session_page, session_meta
from tether.session.theme_files import ThemeError, ThemeFile, css_colour, find_theme_file, read_theme_file
from tether.store.jsonl import write_lines
from tether.wire.json_line import replace_lone_surrogates

if TYPE_CHECKING:
    from collections.abc import Callable

    from tether.session import SessionManager
    from tether.store import EntryDict, SessionRecord

BUILT_IN_THEMES = frozenset({"dark", "light", "system"})

_ROLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("text", ("text",)),
    ("muted", ("muted", "dim")),
    ("border", ("borderMuted", "border")),
    ("accent", ("accent",)),
    ("user", ("borderAccent", "accent")),
    ("user-bg", ("userMessageBg",)),
    ("tool", ("toolTitle", "muted")),
    ("mention", ("warning",)),
    ("summary", ("success",)),
    ("summary-bg", ("toolSuccessBg",)),
    ("error", ("error",)),
    ("error-bg", ("toolErrorBg",)),
    ("label-bg", ("selectedBg",)),
    ("diff-add", ("toolDiffAdded",)),
    ("diff-del", ("toolDiffRemoved",)),
)
"""Page role (``html_page.PALETTE``) ← the theme's colours, the first one it has."""


def write_html(
    path: Path, session: Session, *, colours: dict[str, str] | None = None, dark: bool = False
) -> Path:
    """Write ``session``'s page to ``path`` as an export is written (``write_lines``: a new
    temporary file, the user's alone, renamed over ``path``, or the file a link there points to;
    an error names ``path``), in
    ``colours`` (``page_colours``); returns ``path``. A fixed ``path.html.tmp`` sent the page into
    the file a link planted there pointed to, and a failure named that ``.tmp``."""
    return _write(path, session.record, session.entries(), session.leaf_id, colours, dark)


def write_stored_html(
    path: Path,
    sessions: SessionManager,
    session_id: str,
    on_skip: Callable[[str], None],
    *,
    colours: dict[str, str] | None = None,
    dark: bool = False,
) -> Path:
    """``write_html`` for a stored session, with the entries its JSONL and pi exports write
    (``SessionManager.sound_entries``): a row damaged outside tether is left out and told to
    ``on_skip``, the rest written. Opened as a session, such a row ended the page's export with
    that line, where the other formats wrote everything else."""
    record, kept = sessions.sound_entries(session_id, on_skip)
    return _write(path, record, [entry for entry, _ in kept], record.leaf_id, colours, dark)


def _write(
    path: Path,
    record: SessionRecord,
    entries: list[EntryDict],
    leaf_id: str | None,
    colours: dict[str, str] | None,
    dark: bool,
) -> Path:
    title = record.title or f"tether session {record.id}"
    meta = session_meta(record.id, record.cwd, record.created, entries)
    page = render_session_page(entries, leaf_id, title=title, meta=meta, colours=colours, dark=dark)
    # A live session's messages may hold a lone surrogate (half an emoji a model's stream cut in
    # two) that its stored form has as U+FFFD already: UTF-8 has no form for it, and the export
    # raised UnicodeEncodeError.
    page = replace_lone_surrogates(page.removesuffix("\n"))
    write_lines(path, [page.encode("utf-8")], export=True)  # which ends each line
    return path


def page_colours(theme: str | None, config_dir: Path) -> tuple[dict[str, str], bool, str | None]:
    """The page's colours for the ``theme`` setting, whether they make a dark page, and a line
    saying why the theme could not be used (then the default page's, ``{}``)."""
    name = (theme or "dark").rsplit("/", 1)[-1]  # pi's "light/dark" pair: its dark half, as the TUI
    if name in BUILT_IN_THEMES:
        return {}, False, None
    path = find_theme_file(name, config_dir)
    if path is None:
        return {}, False, f'theme: no theme "{name}" for the HTML page; it has the default colours'
    try:
        return _from_file(read_theme_file(path))
    except ThemeError as exc:
        return {}, False, f"theme: {exc}; the HTML page has the default colours"


def _from_file(theme: ThemeFile) -> tuple[dict[str, str], bool, str | None]:
    colours: dict[str, str] = {}
    for role, names in _ROLES:
        for name in names:
            value = css_colour(theme.colour(name)) if name in theme.colors else None
            if value is not None:
                colours[role] = value
                break
    text = colours.get("text")
    dark = (
        theme.appearance == "dark"
        if theme.appearance is not None
        else text is not None and _luminance(text) > 0.5
    )
    base = css_colour(theme.colour("userMessageBg")) if "userMessageBg" in theme.colors else None
    page, card = _backgrounds(base, dark)
    colours["page-bg"] = css_colour(theme.export_colour("pageBg") or "") or page
    colours["card-bg"] = css_colour(theme.export_colour("cardBg") or "") or card
    colours["diff-add-bg"] = colours["diff-del-bg"] = colours["card-bg"]
    return colours, dark, None


def _backgrounds(base: str | None, dark: bool) -> tuple[str, str]:
    """Page and card backgrounds made from the user message's: the card that colour, the page a
    little darker (a light theme), or both darker (a dark one)."""
    if base is None:
        return ("#18181e", "#1e1e24") if dark else ("#ffffff", "#f6f8fa")
    if _luminance(base) > 0.5:
        return _scaled(base, 0.96), base
    return _scaled(base, 0.7), _scaled(base, 0.85)


def _channels(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def _luminance(colour: str) -> float:
    def linear(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    red, green, blue = (linear(c) for c in _channels(colour))
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def _scaled(colour: str, factor: float) -> str:
    return "#" + "".join(f"{min(255, round(c * factor)):02x}" for c in _channels(colour))
