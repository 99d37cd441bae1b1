"""``/export FILE.html``, ``export_html`` and ``tether --export``: a stored session as one
self-contained HTML page, every branch of it (the page itself: ``html_page``)."""

from __future__ import annotations

from pathlib import Path

from tether.session import Session
from tether.session.html_page import render_session_page, session_meta


def write_html(path: Path, session: Session) -> Path:
    """Write ``session``'s page to ``path`` (through a temporary file: a reader never sees half
    a page); returns ``path``."""
    record, entries = session.record, session.entries()
    title = session.title or f"tether session {session.id}"
    meta = session_meta(record.id, record.cwd, record.created, entries)
    page = render_session_page(entries, session.leaf_id, title=title, meta=meta)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(path)
    return path
