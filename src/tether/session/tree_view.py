"""``/tree``: the session's entry tree as rows, for the text listing and the interactive navigator.

Only entries a person navigates by are shown (prompts, answers with their tool names, summaries,
compactions, ``!``/``$`` runs); tool results, settings changes and labels fold into their
neighbours (a label is shown beside the entry it names). The tree is drawn the way pi does it:
a straight conversation stays in one column and only a fork indents, with ``├─``/``└─``
connectors, so a long session does not drift off the right edge.

Everything here is pure (entries in, rows and decisions out), so it is tested without a terminal.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from rich.cells import cell_len

from tether.session import Session

SHOWN = ("user", "assistant", "branchSummary", "compactionSummary", "bashExecution", "pythonExecution")
TEXT_LIMIT = 300
"""Characters of an entry's text kept in a row (the screen cuts it further to its width)."""
HERE = "  ← you are here"
LEFT_BEHIND = ("message", "compaction", "branch_summary")
"""Entry types whose loss is worth a branch summary."""


@dataclass(frozen=True, slots=True)
class TreeRow:
    """One shown entry of the tree, in display order."""

    id: str
    parent_id: str | None
    prefix: str
    """The connectors before the text (``"│  ├─ "``); empty on a straight line."""
    text: str
    """One line: ``user: …``, ``assistant: … [tools: read]``, ``[compaction] …``, ``!cmd``."""
    kind: str
    """``user``, ``assistant``, ``bashExecution``, …, ``compaction`` or ``branch_summary``."""
    on_path: bool
    """On the active path (root to the current leaf)."""
    current: bool
    """Where the session is now: the last shown entry of the active path."""
    label: str | None = None
    prompt: str | None = None
    """The whole text of a user prompt (to put back in the input box)."""


@dataclass(frozen=True, slots=True)
class BranchChoice:
    """What choosing a row means: the new leaf, and text for the input box (a prompt to edit)."""

    target: str | None
    """The new leaf; ``None`` is before the first entry."""
    editor_text: str | None = None


def describe(entry: dict[str, Any], limit: int = 70) -> str | None:
    """One line for an entry, or ``None`` to leave it out."""
    kind = entry.get("type")
    if kind == "compaction":
        return f"[compaction] {_one_line(str(entry.get('summary', '')), limit - 13)}"
    if kind == "branch_summary":
        return f"[branch summary] {_one_line(str(entry.get('summary', '')), limit - 17)}"
    if kind != "message":
        return None
    message = cast(dict[str, Any], entry.get("message") or {})
    role = message.get("role")
    if role not in SHOWN:
        return None
    if role == "user":
        return f"user: {_text(message.get('content'), limit)}"
    if role == "assistant":
        blocks = cast(list[dict[str, Any]], message.get("content") or [])
        calls = [b.get("name", "?") for b in blocks if b.get("type") == "toolCall"]
        text = _text(blocks, limit)
        tools = f"[tools: {', '.join(calls)}]" if calls else ""
        return "assistant: " + (" ".join(p for p in (text, tools) if p) or "(empty)")
    if role == "bashExecution":
        return f"!{_one_line(str(message.get('command', '')), limit)}"
    if role == "pythonExecution":
        return f"${_one_line(str(message.get('code', '')), limit)}"
    return f"[{role}]"


def tree_rows(
    entries: Sequence[dict[str, Any]], active_path: Iterable[str], labels: dict[str, str] | None = None
) -> list[TreeRow]:
    """Flatten the entry tree into display rows, depth first, children in append order.

    ``active_path`` is the ids from the root to the leaf. Hidden entries are skipped but their
    children are not: a fork below a tool result is still a fork.
    """
    labels = labels or {}
    path_order = list(active_path)
    on_path = set(path_order)
    texts = {e["id"]: describe(e, TEXT_LIMIT) for e in entries}
    current = next((i for i in reversed(path_order) if texts.get(i) is not None), None)
    children: dict[str | None, list[dict[str, Any]]] = {}
    for entry in entries:
        children.setdefault(entry.get("parentId"), []).append(entry)

    def shown_children(parent: str | None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        stack = list(reversed(children.get(parent, [])))
        while stack:
            entry = stack.pop()
            if texts[entry["id"]] is not None:
                out.append(entry)
            else:
                stack.extend(reversed(children.get(entry["id"], [])))
        return out

    rows: list[TreeRow] = []
    # (entry, its row's prefix, its children's prefix); a stack, so deep trees need no recursion.
    stack: list[tuple[dict[str, Any], str, str]] = []

    def push_children(parent: str | None, prefix: str) -> None:
        kids = shown_children(parent)
        if len(kids) == 1:
            stack.append((kids[0], prefix, prefix))
            return
        for index in reversed(range(len(kids))):
            last = index == len(kids) - 1
            stack.append(
                (kids[index], prefix + ("└─ " if last else "├─ "), prefix + ("   " if last else "│  "))
            )

    push_children(None, "")
    while stack:
        entry, row_prefix, child_prefix = stack.pop()
        entry_id: str = entry["id"]
        message = cast(dict[str, Any], entry.get("message") or {})
        is_user = entry.get("type") == "message" and message.get("role") == "user"
        rows.append(
            TreeRow(
                id=entry_id,
                parent_id=entry.get("parentId"),
                prefix=row_prefix,
                text=texts[entry_id] or "",
                kind=str(message.get("role")) if entry.get("type") == "message" else str(entry.get("type")),
                on_path=entry_id in on_path,
                current=entry_id == current,
                label=labels.get(entry_id),
                prompt=_full_text(message.get("content")) if is_user else None,
            )
        )
        push_children(entry_id, child_prefix)
    return rows


def session_rows(session: Session) -> list[TreeRow]:
    return tree_rows(session.entries(), [e["id"] for e in session.path()], session.labels())


def branch_choice(row: TreeRow) -> BranchChoice:
    """Choosing a user prompt goes back to just before it and offers the prompt for editing
    (as pi does: you branch to ask again, differently); anything else becomes the new leaf."""
    if row.kind == "user":
        return BranchChoice(row.parent_id, row.prompt or "")
    return BranchChoice(row.id)


def leaves_something(old_path: Sequence[dict[str, Any]], new_path: Sequence[dict[str, Any]]) -> bool:
    """Whether moving from ``old_path`` to ``new_path`` leaves conversation behind (a branch
    summary would have something to say); moving forward or staying put leaves nothing."""
    kept = {e["id"] for e in new_path}
    return any(e["id"] not in kept and e.get("type") in LEFT_BEHIND for e in old_path)


def row_line(row: TreeRow, width: int) -> str:
    """The row as one screen line of at most ``width`` cells: path mark, connectors, text,
    label and the "you are here" mark (cut with ``…`` when too long)."""
    mark = "•" if row.on_path else " "
    label = f" ({row.label})" if row.label else ""
    here = (HERE if width >= 2 * cell_len(HERE) else " ←") if row.current else ""
    return fit(fit(f"{mark} {row.prefix}{row.text}{label}", width - cell_len(here)) + here, width)


def fit(text: str, width: int) -> str:
    """Cut ``text`` to ``width`` terminal cells (wide characters count two), ending with ``…``."""
    if width <= 0:
        return ""
    if text.isascii() and text.isprintable():  # one cell per character: no measuring
        return text if len(text) <= width else text[: width - 1] + "…"
    if cell_len(text) <= width:
        return text
    out: list[str] = []
    used = 0
    for char in text:
        cells = cell_len(char)
        if used + cells > width - 1:
            break
        out.append(char)
        used += cells
    return "".join(out) + "…"


def render_tree(session: Session) -> str:
    """The tree as text, each line starting with the entry id to pass to ``/tree ID`` or
    ``/fork ID`` (for scripts, RPC and a quick look)."""
    rows = session_rows(session)
    if not rows:
        return "(the session is empty)"
    lines: list[str] = []
    for row in rows:
        marker = "*" if row.on_path else " "
        label = f" ({row.label})" if row.label else ""
        here = "  <- you are here" if row.current else ""
        lines.append(f"{marker} {row.id}  {row.prefix}{fit(row.text, 80)}{label}{here}")
    return "\n".join(lines)


def _one_line(text: str, limit: int) -> str:
    return fit(" ".join(text.split()), max(1, limit))


def _full_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        blocks = cast(list[dict[str, Any]], content)
        return "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    return ""


def _text(content: object, limit: int) -> str:
    return _one_line(_full_text(content), limit)
