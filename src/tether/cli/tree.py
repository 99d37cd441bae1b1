"""``/tree``: the session's entry tree as indented text, the active path marked.

Only entries a person navigates by are shown (prompts, answers, summaries, compactions); tool
results and settings changes fold into their neighbours. Each line starts with the entry id to
pass to ``/tree ID`` (branch there) or ``/fork ID``.
"""

from __future__ import annotations

from typing import Any, cast

from tether.session import Session

SHOWN = ("user", "assistant", "branchSummary", "compactionSummary", "bashExecution", "pythonExecution")


def describe(entry: dict[str, Any]) -> str | None:
    """One line for an entry, or ``None`` to leave it out."""
    kind = entry.get("type")
    if kind == "compaction":
        return f"[compaction] {str(entry.get('summary', ''))[:60]}"
    if kind == "branch_summary":
        return f"[branch summary] {str(entry.get('summary', ''))[:60]}"
    if kind != "message":
        return None
    message = cast(dict[str, Any], entry.get("message") or {})
    role = message.get("role")
    if role not in SHOWN:
        return None
    if role == "user":
        return f"user: {_text(message.get('content'))}"
    if role == "assistant":
        blocks = cast(list[dict[str, Any]], message.get("content") or [])
        calls = [b.get("name", "?") for b in blocks if b.get("type") == "toolCall"]
        text = _text(blocks)
        suffix = f" [tools: {', '.join(calls)}]" if calls else ""
        return f"assistant: {text}{suffix}" if text or suffix else "assistant: (empty)"
    if role == "bashExecution":
        return f"!{message.get('command', '')}"
    if role == "pythonExecution":
        return f"${message.get('code', '')}"
    return f"[{role}]"


def render_tree(session: Session) -> str:
    entries = session.entries()
    active = {e["id"] for e in session.path()}
    labels = session.labels()
    children: dict[str | None, list[dict[str, Any]]] = {}
    for entry in entries:
        children.setdefault(entry.get("parentId"), []).append(entry)
    lines: list[str] = []

    def walk(parent: str | None, depth: int) -> None:
        for entry in children.get(parent, []):
            line = describe(entry)
            next_depth = depth
            if line is not None:
                marker = "*" if entry["id"] in active else " "
                label = f" ({labels[entry['id']]})" if entry["id"] in labels else ""
                here = "  <- you are here" if entry["id"] == session.leaf_id else ""
                lines.append(f"{marker} {entry['id']}  {'  ' * depth}{line}{label}{here}")
                next_depth = depth + (1 if len(children.get(parent, [])) > 1 else 0)
            walk(entry["id"], next_depth)

    walk(None, 0)
    return "\n".join(lines) if lines else "(the session is empty)"


def _text(content: object, limit: int = 70) -> str:
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        blocks = cast(list[dict[str, Any]], content)
        text = " ".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    else:
        text = ""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
