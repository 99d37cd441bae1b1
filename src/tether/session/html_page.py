"""A whole session as one self-contained HTML page: every branch, compacted history included.

pi's ``/export`` writes the whole session, not the context the model sees now, and so does this:
the entry tree is walked from its roots; where it forks, each branch is a collapsible section
(the one leading to the session's leaf open and marked "current"); a compaction shows its summary
where it happened, with the turns it summarised still above it. Messages are rendered as the user
saw them: markdown with highlighted code, thinking folded away, each tool call with its result
(a diff red and green, a file by its type), shell runs with their output, images inline.

The page needs nothing else: styles are inline, images are data URLs, there is no script and
no remote resource, and every text from the conversation is escaped (``html_markup``). The
renderer takes plain entries so that a web front end can use it as it is.
"""

from __future__ import annotations

import base64
import binascii
import html
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast

from tether.session.html_markup import (
    code_block,
    code_css,
    diff_lines,
    highlight_budget,
    looks_like_diff,
    markdown,
)
from tether.session.labels import fold_labels
from tether.session.pi_format import iso_timestamp
from tether.store.entries import EntryDict
from tether.wire.escapes import BIDI, escaped

PALETTE: dict[str, str] = {
    "page-bg": "#ffffff",
    "card-bg": "#f6f8fa",
    "text": "#1f2328",
    "muted": "#59636e",
    "border": "#d0d7de",
    "accent": "#0969da",
    "user": "#8250df",
    "user-bg": "#fbf8ff",
    "tool": "#6e7781",
    "mention": "#bf8700",
    "summary": "#1a7f37",
    "summary-bg": "#f6fff8",
    "error": "#cf222e",
    "error-bg": "#ffebe9",
    "label-bg": "#ddf4ff",
    "diff-add": "#116329",
    "diff-add-bg": "#dafbe1",
    "diff-del": "#82071e",
    "diff-del-bg": "#ffebe9",
}
"""The page's colours, by role (CSS custom properties ``--ROLE``): the default, light page. A theme
file replaces some or all of them (``tether.session.export_html.page_colours``)."""

STYLE = """
body { font: 15px/1.55 system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem;
  color: var(--text); background: var(--page-bg); }
a { color: var(--accent); }
header { border-bottom: 1px solid var(--border); margin-bottom: 1rem; }
header dl { display: grid; grid-template-columns: max-content 1fr; gap: .1rem 1rem; font-size: 13px; }
header dt { color: var(--muted); }
.msg { border-left: 4px solid var(--border); margin: .8rem 0; padding: .2rem .8rem; }
.msg > .role { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
.user { border-color: var(--user); background: var(--user-bg); } .assistant { border-color: var(--accent); }
.toolResult, .run { border-color: var(--tool); } .fileMention { border-color: var(--mention); }
.summary { border-color: var(--summary); background: var(--summary-bg); } .custom { border-color: var(--mention); }
.note { font-size: 12px; color: var(--muted); margin: .4rem 0; }
.error { color: var(--error); } .label { background: var(--label-bg); border-radius: 1em; padding: 0 .5em; }
details.thinking { color: var(--muted); font-style: italic; margin: .3rem 0; }
.tool-call { border: 1px solid var(--border); border-radius: 6px; margin: .5rem 0; }
.tool-call > .head { background: var(--card-bg); padding: .2rem .6rem; font: 13px ui-monospace, monospace; }
.tool-call > .body { padding: 0 .6rem; }
.tool-call.failed > .head { background: var(--error-bg); }
pre { background: var(--card-bg); padding: .6rem; overflow-x: auto; border-radius: 6px; font-size: 13px; }
code { font-family: ui-monospace, SFMono-Regular, monospace; }
img { max-width: 100%; }
.tool { font-family: ui-monospace, monospace; } .output { white-space: pre-wrap; }
.fork { border-left: 2px dashed var(--border); padding-left: .8rem; margin: 1rem 0; }
.fork > details > summary { cursor: pointer; color: var(--muted); font-size: 13px; }
.fork > details.current > summary { color: var(--accent); font-weight: bold; }
table { border-collapse: collapse; } td, th { border: 1px solid var(--border); padding: .2rem .5rem; }
"""

_HEX = re.compile(r"#[0-9a-fA-F]{6}")
"""What a colour must look like to reach the page's style (nothing else can be injected there)."""

_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def render_session_page(
    entries: Sequence[EntryDict],
    leaf_id: str | None,
    *,
    title: str,
    meta: Mapping[str, str],
    colours: Mapping[str, str] | None = None,
    dark: bool = False,
) -> str:
    """The page of a session: ``entries`` in append order (each ``parentId`` names an earlier
    entry or none), ``leaf_id`` where the session is now, ``meta`` shown under the title.
    ``colours``: ``#rrggbb`` values for roles of ``PALETTE`` (a theme's); ``dark``: they make a
    dark page (code is highlighted for a dark background)."""
    page = _Page(entries, leaf_id)
    with highlight_budget():  # the page's code coloured within one bound (HIGHLIGHT_PAGE_CHARS)
        body = "".join(page.render())
    chosen = {**PALETTE, **{k: v for k, v in (colours or {}).items() if k in PALETTE and _HEX.fullmatch(v)}}
    root = ":root { " + " ".join(f"--{k}: {v};" for k, v in chosen.items()) + " }"
    head = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in meta.items())
    page = "".join(
        [
            '<!doctype html>\n<html><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            # nothing on this page may load or run anything (it opens offline, whatever it holds)
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            "img-src data:; style-src 'unsafe-inline'\">",
            f"<title>{html.escape(title)}</title><style>{root}{STYLE}{code_css(dark=dark)}</style>",
            "</head><body>",
            f"<header><h1>{html.escape(title)}</h1><dl>{head}</dl></header><main>",
            body,
            "</main></body></html>\n",
        ]
    )
    return _BIDI.sub(escaped, page)


_BIDI = re.compile(f"[{BIDI}]")
"""The bidirectional overrides and isolates, written as escapes as the terminal writes them."""


class _Page:
    def __init__(self, entries: Sequence[EntryDict], leaf_id: str | None) -> None:
        self.by_id = {e["id"]: e for e in entries}
        self.children: dict[str | None, list[str]] = {}
        for entry in entries:
            parent = entry.get("parentId")
            self.children.setdefault(parent if parent in self.by_id else None, []).append(entry["id"])
        self.active: set[str] = set()
        at = leaf_id
        while at is not None and at in self.by_id and at not in self.active:
            self.active.add(at)
            at = self.by_id[at].get("parentId")
        self.labels = {target: label.text for target, label in fold_labels(entries).items()}
        self.results: dict[str, EntryDict] = {}
        for entry in entries:
            message = cast(dict[str, Any], entry.get("message") or {})
            if entry["type"] == "message" and message.get("role") == "toolResult":
                self.results.setdefault(str(message.get("toolCallId")), entry)
        self.shown_results: set[str] = set()

    def render(self) -> Iterator[str]:
        """Depth first, without recursion (a session can fork thousands of times deep)."""
        stack: list[tuple[str, Any]] = [("branches", self.children.get(None, []))]
        while stack:
            kind, value = stack.pop()
            if kind == "html":
                yield value
                continue
            if kind == "branches" and len(value) > 1:
                parts: list[tuple[str, Any]] = [("html", '<div class="fork">')]
                for number, entry_id in enumerate(value, start=1):
                    current = entry_id in self.active
                    opened = ' class="current" open' if current else ""
                    summary = f"branch {number} of {len(value)}{' (current)' if current else ''}: "
                    summary += html.escape(entry_preview(self.by_id[entry_id]))
                    parts.append(("html", f"<details{opened}><summary>{summary}</summary>"))
                    parts.append(("node", entry_id))
                    parts.append(("html", "</details>"))
                parts.append(("html", "</div>"))
                stack.extend(reversed(parts))
                continue
            if kind == "branches" and not value:
                continue
            entry_id = value[0] if kind == "branches" else value
            yield self.entry(self.by_id[entry_id])
            kids = self.children.get(entry_id, [])
            if kids:
                stack.append(("branches", kids))

    # -- entries -------------------------------------------------------------------------------

    def entry(self, entry: EntryDict) -> str:
        kind = entry["type"]
        label = self.labels.get(entry["id"])
        tag = f' <span class="label">{html.escape(label)}</span>' if label else ""
        if kind == "message":
            return self.message(cast(dict[str, Any], entry.get("message") or {}), tag)
        if kind == "compaction":
            tokens = entry.get("tokensBefore")
            note = f"compacted ({tokens} tokens before)" if isinstance(tokens, int) else "compacted"
            return _box("summary", note + tag, markdown(str(entry.get("summary", ""))))
        if kind == "branch_summary":
            return _box(
                "summary", "summary of the branch left" + tag, markdown(str(entry.get("summary", "")))
            )
        if kind == "model_change":
            return _note(f"model: {entry.get('provider')}/{entry.get('modelId')}")
        if kind == "thinking_level_change":
            return _note(f"thinking level: {entry.get('thinkingLevel')}")
        if kind == "service_tier_change":
            return _note(f"service tier: {entry.get('serviceTier')}")
        if kind == "system_prompt_change":
            prompt = html.escape(str(entry.get("systemPrompt", "")))
            return (
                f'<details class="note"><summary>system prompt changed</summary><pre>{prompt}</pre></details>'
            )
        if kind == "session_info":
            return _note(f"named: {entry.get('title')}")
        return ""  # labels (shown on their target), custom entries: not part of the conversation

    def message(self, message: dict[str, Any], tag: str) -> str:
        role = str(message.get("role"))
        if role == "toolResult":
            call_id = str(message.get("toolCallId"))
            if call_id in self.shown_results:
                return ""  # shown with its call
            name = html.escape(str(message.get("toolName", "?")))
            return _box("toolResult", f"result of {name}{tag}", self.result(message))
        if role in ("bashExecution", "pythonExecution"):
            return _run(message, tag)
        if role == "fileMention":
            return _mentions(message, tag)
        if role in ("branchSummary", "compactionSummary"):
            return _box("summary", role + tag, markdown(str(message.get("summary", ""))))
        body = [self.block(b) for b in _blocks(message.get("content"))]
        if message.get("errorMessage"):
            body.append(f'<div class="error">{html.escape(str(message["errorMessage"]))}</div>')
        if role == "assistant" and message.get("stopReason") == "aborted":
            body.append('<div class="note">aborted</div>')
        head = html.escape(role)
        if role == "assistant" and message.get("model"):
            head += html.escape(f" · {message.get('provider')}/{message.get('model')}")
        if role == "custom":
            head = html.escape(f"{role} · {message.get('customType', '')}")
        return _box(role if role in ("user", "assistant", "custom") else "custom", head + tag, "".join(body))

    def block(self, block: object) -> str:
        if not isinstance(block, dict):
            return html.escape(str(block))
        item = cast(dict[str, Any], block)
        kind = item.get("type")
        if kind == "text":
            return markdown(str(item.get("text", "")))
        if kind == "thinking":
            if item.get("redacted") or not str(item.get("thinking", "")).strip():
                return '<div class="note">(thinking not shown by the provider)</div>'
            return f'<details class="thinking"><summary>thinking</summary>{markdown(str(item["thinking"]))}</details>'
        if kind == "image":
            return _image(item)
        if kind == "toolCall":
            return self.tool_call(item)
        return ""

    def tool_call(self, call: dict[str, Any]) -> str:
        name = str(call.get("name", "?"))
        args = call.get("arguments")
        arguments = cast(dict[str, Any], args) if isinstance(args, dict) else {}
        result = self.results.get(str(call.get("id")))
        failed = False
        shown = ""
        if result is not None:
            self.shown_results.add(str(call.get("id")))
            message = cast(dict[str, Any], result.get("message") or {})
            failed = bool(message.get("isError"))
            shown = self.result(message, arguments.get("path"))
        else:
            shown = '<div class="note">(no result recorded)</div>'
        css = "tool-call failed" if failed else "tool-call"
        return (
            f'<div class="{css}"><div class="head">{html.escape(name)}{html.escape(_call_title(name, arguments))}</div>'
            f'<div class="body">{_call_body(name, arguments)}{shown}</div></div>'
        )

    def result(self, message: dict[str, Any], path: object = None) -> str:
        parts: list[str] = []
        for block in _blocks(message.get("content")):
            item = (
                cast(dict[str, Any], block)
                if isinstance(block, dict)
                else {"type": "text", "text": str(block)}
            )
            if item.get("type") == "image":
                parts.append(_image(item))
                continue
            text = str(item.get("text", ""))
            if not text:
                continue
            if looks_like_diff(text):
                parts.append(f'<pre class="hl"><code>{diff_lines(text)}</code></pre>')
            elif isinstance(path, str) and path:
                parts.append(code_block(text, filename=path))
            else:
                parts.append(f"<pre>{html.escape(text)}</pre>")
        details = message.get("details")
        diff = cast(dict[str, Any], details).get("diff") if isinstance(details, dict) else None
        if isinstance(diff, str) and diff and not any("diff-add" in p or "diff-del" in p for p in parts):
            parts.append(f'<pre class="hl"><code>{diff_lines(diff)}</code></pre>')
        css = "error" if message.get("isError") else ""
        return f'<div class="{css}">{"".join(parts)}</div>' if css else "".join(parts)


def _blocks(content: object) -> list[object]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(cast(list[object], content)) if isinstance(content, list) else []


def _call_title(name: str, arguments: dict[str, Any]) -> str:
    for key in ("path", "pattern", "url", "query"):
        if isinstance(arguments.get(key), str):
            return f" {arguments[key]}"
    return ""


def _call_body(name: str, arguments: dict[str, Any]) -> str:
    """A tool call's arguments as the user reads them: a command as shell, a written file by its
    type, an edit as the passage replaced; anything else as JSON."""
    if name == "bash" and isinstance(arguments.get("command"), str):
        return code_block(arguments["command"], "bash")
    if name == "write" and isinstance(arguments.get("content"), str):
        return code_block(arguments["content"], filename=str(arguments.get("path") or ""))
    if name == "edit":
        return ""  # its result is the diff
    rest = {k: v for k, v in arguments.items() if k not in ("path", "pattern", "url", "query")}
    if not rest:
        return ""
    return code_block(json.dumps(rest, ensure_ascii=False, indent=2), "json")


def _image(block: dict[str, Any]) -> str:
    mime = str(block.get("mimeType", ""))
    data = str(block.get("data", ""))
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return f'<div class="note">[image {html.escape(mime)}: not valid base64]</div>'
    if mime not in _IMAGE_TYPES:
        return f'<div class="note">[image {html.escape(mime)}]</div>'
    return f'<img alt="image" src="data:{mime};base64,{data}">'


def _box(css: str, head: str, body: str) -> str:
    """A message's box; ``head`` and ``body`` are HTML already (their text escaped)."""
    return f'<div class="msg {css}"><div class="role">{head}</div>{body}</div>'


def _note(text: str) -> str:
    return f'<div class="note">{html.escape(text)}</div>'


def entry_preview(entry: EntryDict) -> str:
    """One line of an entry for a list: its first text, else its role or type, at most 80 characters."""
    message = cast(dict[str, Any], entry.get("message") or {})
    text = ""
    for block in _blocks(message.get("content")):
        if isinstance(block, dict) and cast(dict[str, Any], block).get("type") == "text":
            text = str(cast(dict[str, Any], block).get("text", ""))
            break
    if not text:
        text = str(message.get("role") or entry["type"])
    text = " ".join(text.split())
    return text[:80] + ("…" if len(text) > 80 else "")


def _run(message: dict[str, Any], tag: str) -> str:
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
        f'<div class="msg run"><div class="role">{"shell" if shell else "python"}{tag}</div>'
        f'<div class="tool">{html.escape(marker + typed)}</div>'
        f'<pre class="output">{html.escape(str(message.get("output", "")))}</pre>{note}</div>'
    )


def _mentions(message: dict[str, Any], tag: str) -> str:
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
    return f'<div class="msg fileMention"><div class="role">attached files{tag}</div>{"".join(parts)}</div>'


def session_meta(session_id: str, cwd: str, created_ms: int, entries: Sequence[EntryDict]) -> dict[str, str]:
    """What the page's header says about a session: id, folder, start, models, totals."""
    models: list[str] = []
    messages = tokens = 0
    cost = 0.0
    for entry in entries:
        message = cast(dict[str, Any], entry.get("message") or {})
        if entry["type"] != "message":
            continue
        messages += 1
        if message.get("role") == "assistant":
            name = f"{message.get('provider')}/{message.get('model')}"
            if name not in models:
                models.append(name)
            usage = cast(dict[str, Any], message.get("usage") or {})
            tokens += int(usage.get("totalTokens") or 0)
            cost += float(cast(dict[str, Any], usage.get("cost") or {}).get("total") or 0)
    return {
        "session": session_id,
        "folder": cwd,
        "started": iso_timestamp(created_ms),
        "models": ", ".join(models) or "-",
        "messages": str(messages),
        "tokens": f"{tokens:,}",
        "cost": f"${cost:.4f}",
    }
