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
.run, .fileMention { border-color: #c93; white-space: normal; }
.output { background: #f6f6f6; padding: .5rem; margin: .25rem 0; white-space: pre-wrap; overflow-x: auto; }
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
    if role in ("bashExecution", "pythonExecution"):
        return _run(message)
    if role == "fileMention":
        return _mentions(message)
    body: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        body.append(html.escape(content))
    elif isinstance(content, list):
        for block in cast(list[object], content):  # an imported file's may be anything
            body.append(
                _block(cast(dict[str, Any], block)) if isinstance(block, dict) else html.escape(str(block))
            )
    for key in ("summary",):
        if isinstance(message.get(key), str):
            body.append(html.escape(str(message[key])))
    if message.get("errorMessage"):
        body.append(f'<div class="error">{html.escape(str(message["errorMessage"]))}</div>')
    css = html.escape(role)
    return f'<div class="msg {css}"><div class="role">{css}</div>{"".join(body)}</div>'


def _run(message: dict[str, Any]) -> str:
    """``!cmd`` / ``$code``: the input as typed, then the output apart from it, then how it ended."""
    shell = message.get("role") == "bashExecution"
    marker = "!" if shell else "$"
    typed = str(message.get("command" if shell else "code", ""))
    if message.get("excludeFromContext"):
        marker *= 2
    notes: list[str] = []
    if message.get("exitCode") not in (None, 0):
        notes.append(f"exit code {message['exitCode']}")
    if message.get("cancelled"):
        notes.append("cancelled")
    if message.get("truncated"):
        notes.append("output truncated")
    if message.get("excludeFromContext"):
        notes.append("not sent to the model")
    note = f'<div class="role">{html.escape(", ".join(notes))}</div>' if notes else ""
    return (
        f'<div class="msg run"><div class="role">{"shell" if shell else "python"}</div>'
        f'<div class="tool">{html.escape(marker + typed)}</div>'
        f'<pre class="output">{html.escape(str(message.get("output", "")))}</pre>{note}</div>'
    )


def _mentions(message: dict[str, Any]) -> str:
    """``@path``: each attached file by name, with its text (images and skipped files noted)."""
    parts: list[str] = []
    for item in cast(list[dict[str, Any]], message.get("files") or []):
        path = html.escape(str(item.get("path", "?")))
        if item.get("skippedReason"):
            body = f'<div class="role">not attached: {html.escape(str(item["skippedReason"]))}</div>'
        elif item.get("image"):
            body = f"[image {html.escape(str(item['image'].get('mimeType', '')))}]"
        else:
            body = f'<pre class="output">{html.escape(str(item.get("content", "")))}</pre>'
        parts.append(f'<details><summary class="tool">@{path}</summary>{body}</details>')
    return f'<div class="msg fileMention"><div class="role">attached files</div>{"".join(parts)}</div>'


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
