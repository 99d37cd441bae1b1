"""``/export FILE.html``: the active path of a session as one self-contained HTML page.

Everything is escaped text in ``<pre>``-like blocks (no markdown renderer, no script), so an
export can be opened or shared safely whatever the conversation contains.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any, cast

from tether.session import Session

STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 52rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
.msg { border-left: 4px solid #ccc; margin: 1rem 0; padding: .25rem .75rem; white-space: pre-wrap; }
.user { border-color: #a3c; } .assistant { border-color: #39c; } .toolResult { border-color: #999; }
.error { color: #b00; } .thinking { color: #777; font-style: italic; } .tool { font-family: monospace; }
.role { font-size: 12px; text-transform: uppercase; color: #888; }
"""


def write_html(path: Path, session: Session) -> Path:
    title = session.title or f"tether session {session.id}"
    parts = [
        "<!doctype html>",
        '<html><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    for message in session.messages:
        parts.append(_message(cast(dict[str, Any], message)))
    parts.append("</body></html>")
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def _message(message: dict[str, Any]) -> str:
    role = str(message.get("role"))
    body: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        body.append(html.escape(content))
    elif isinstance(content, list):
        for block in cast(list[dict[str, Any]], content):
            body.append(_block(block))
    for key in ("command", "code", "summary", "output"):
        if isinstance(message.get(key), str):
            body.append(html.escape(str(message[key])))
    if message.get("errorMessage"):
        body.append(f'<div class="error">{html.escape(str(message["errorMessage"]))}</div>')
    css = html.escape(role)
    return f'<div class="msg {css}"><div class="role">{css}</div>{"".join(body)}</div>'


def _block(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return html.escape(str(block.get("text", "")))
    if kind == "thinking":
        return f'<div class="thinking">{html.escape(str(block.get("thinking", "")))}</div>'
    if kind == "toolCall":
        args = json.dumps(block.get("arguments", {}), ensure_ascii=False)
        return f'<div class="tool">→ {html.escape(str(block.get("name")))} {html.escape(args)}</div>'
    if kind == "image":
        return f"[image {html.escape(str(block.get('mimeType', '')))}]"
    return ""
