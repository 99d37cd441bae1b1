"""``/tree``: the session's entry tree as rows, for the text listing and the interactive navigator.

Which entries become rows is pi's tree filter (``FILTERS``): ``default`` hides only settings
entries (model and thinking changes, labels, titles, custom data), so tool results are rows of
their own; ``no-tools`` also folds tool results into the answer that called them
(``[tools: read]``); ``user-only`` and ``labeled-only`` are what they say; ``all`` hides nothing.
As in pi, an answer that only called tools is left out where its results are rows. Hidden
entries lift their children to the nearest shown ancestor; a label is shown beside the entry it
names. The tree is drawn the way pi does it: a straight conversation stays in one column and only
a fork indents, with ``├─``/``└─`` connectors, so a long session does not drift off the right
edge. A branch can be folded (pi's fold): its start shows ``⊞`` and nothing below it is a row.

Everything here is pure (entries in, rows and decisions out), so it is tested without a terminal.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from rich.cells import cell_len

from tether.session import Session
from tether.session.labels import fold_labels

SHOWN = ("user", "assistant", "branchSummary", "compactionSummary", "bashExecution", "pythonExecution")
"""Message roles the ``no-tools`` view (and the text listing) shows."""
FILTERS = ("default", "no-tools", "user-only", "labeled-only", "all")
"""pi's tree filter modes, in the order Ctrl-O cycles through them."""
ROW_TYPES = ("message", "compaction", "branch_summary", "custom_message")
"""Entry types that are conversation; every other type is a settings entry, a row only in ``all``."""
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
    up: int | None = None
    """The index of the row of the nearest shown ancestor (``None`` for a root)."""
    foldable: bool = False
    """The start of a branch (a root, or one of several children) with rows below it."""
    folded: bool = False


@dataclass(frozen=True, slots=True)
class BranchChoice:
    """What choosing a row means: the new leaf, and text for the input box (a prompt to edit)."""

    target: str | None
    """The new leaf; ``None`` is before the first entry."""
    editor_text: str | None = None


def describe(entry: dict[str, Any], limit: int = 70) -> str | None:
    """One line for an entry in the ``no-tools`` view, or ``None`` to leave it out."""
    return entry_text(entry, limit, {}) if _no_tools_row(entry) else None


def _no_tools_row(entry: dict[str, Any]) -> bool:
    kind = entry.get("type")
    if kind in ("compaction", "branch_summary"):
        return True
    return kind == "message" and cast(dict[str, Any], entry.get("message") or {}).get("role") in SHOWN


def entry_text(entry: dict[str, Any], limit: int, calls: dict[str, dict[str, Any]]) -> str:
    """One line for any entry; ``calls`` (tool call id → call) names what a tool result answers."""
    kind = entry.get("type")
    if kind == "compaction":
        return f"[compaction] {_one_line(str(entry.get('summary', '')), limit - 13)}"
    if kind == "branch_summary":
        return f"[branch summary] {_one_line(str(entry.get('summary', '')), limit - 17)}"
    if kind != "message":
        return _setting_text(entry, limit)
    message = cast(dict[str, Any], entry.get("message") or {})
    role = message.get("role")
    if role == "toolResult":
        call = calls.get(str(message.get("toolCallId")))
        if call is None:
            return f"[{message.get('toolName') or 'tool'}]"
        return tool_call_text(str(call.get("name")), cast(dict[str, Any], call.get("arguments") or {}))
    if role == "user":
        return f"user: {_text(message.get('content'), limit)}"
    if role == "assistant":
        blocks = cast(list[dict[str, Any]], message.get("content") or [])
        names = [b.get("name", "?") for b in blocks if b.get("type") == "toolCall"]
        text = _text(blocks, limit)
        tools = f"[tools: {', '.join(names)}]" if names else ""
        return "assistant: " + (" ".join(p for p in (text, tools) if p) or "(empty)")
    if role == "bashExecution":
        return f"!{_one_line(str(message.get('command', '')), limit)}"
    if role == "pythonExecution":
        return f"${_one_line(str(message.get('code', '')), limit)}"
    return f"[{role}]"


def tool_call_text(name: str, args: dict[str, Any]) -> str:
    """A tool result's row: the call it answers, as pi writes it (``[read: src/a.py:10-29]``)."""
    path = str(args.get("path") or args.get("file_path") or "")
    if name == "read":
        offset, limit = args.get("offset"), args.get("limit")
        start = offset if isinstance(offset, int) else 1
        lines = "" if offset is None and limit is None else f":{start}"
        if isinstance(limit, int) and lines:
            lines += f"-{start + limit - 1}"
        return f"[read: {path}{lines}]"
    if name in ("write", "edit"):
        return f"[{name}: {path}]"
    if name == "bash":
        command = " ".join(str(args.get("command") or "").split())
        return f"[bash: {command[:50]}{'...' if len(command) > 50 else ''}]"
    if name == "grep":
        return f"[grep: /{args.get('pattern') or ''}/ in {args.get('path') or '.'}]"
    if name == "find":
        return f"[find: {args.get('pattern') or ''} in {args.get('path') or '.'}]"
    if name == "ls":
        return f"[ls: {args.get('path') or '.'}]"
    dumped = json.dumps(args)
    return f"[{name}: {dumped[:40]}{'...' if len(dumped) > 40 else ''}]"


def _setting_text(entry: dict[str, Any], limit: int) -> str:
    kind = str(entry.get("type"))
    if kind == "model_change":
        return f"[model: {entry.get('modelId')}]"
    if kind == "thinking_level_change":
        return f"[thinking: {entry.get('thinkingLevel')}]"
    if kind == "service_tier_change":
        return f"[service tier: {entry.get('serviceTier') or 'default'}]"
    if kind == "system_prompt_change":
        return f"[system prompt: {_one_line(str(entry.get('systemPrompt', '')), limit - 16)}]"
    if kind == "label":
        return f"[label: {entry.get('label') or '(cleared)'}]"
    if kind == "session_info":
        return f"[title: {entry.get('name') or 'empty'}]"
    if kind == "custom":
        return f"[custom: {entry.get('customType')}]"
    if kind == "custom_message":
        content = entry.get("content")
        return f"[{entry.get('customType')}]: {_text(content, limit)}"
    return f"[{kind}]"


def _shown(entry: dict[str, Any], mode: str, *, labelled: bool, leaf: bool) -> bool:
    """pi's filter: whether ``entry`` is a row in view ``mode``."""
    kind = entry.get("type")
    message = cast(dict[str, Any], entry.get("message") or {})
    role = message.get("role") if kind == "message" else None
    if mode == "no-tools":
        return _no_tools_row(entry)
    if mode == "user-only":
        return role == "user"
    if role == "assistant" and not leaf and _only_tool_calls(message):
        return False  # its tool results stand for it
    if mode == "labeled-only":
        return labelled
    return mode == "all" or kind in ROW_TYPES


def _only_tool_calls(message: dict[str, Any]) -> bool:
    """An answer with no text that ended normally (pi keeps errors and aborts as rows)."""
    if message.get("stopReason") not in (None, "stop", "toolUse"):
        return False
    return not _full_text(message.get("content")).strip()


def tree_rows(
    entries: Sequence[dict[str, Any]],
    active_path: Iterable[str],
    labels: dict[str, str] | None = None,
    *,
    mode: str = "no-tools",
    folded: Collection[str] = (),
) -> list[TreeRow]:
    """Flatten the entry tree into display rows, depth first: among siblings the one on the active
    path first (pi's order: the branch you are on is where the eye starts), the rest in append order.

    ``active_path`` is the ids from the root to the leaf; ``mode`` is one of ``FILTERS``;
    ``folded`` are branch starts whose rows below are left out. Hidden entries are skipped but
    their children are not: a fork below a hidden tool result is still a fork. One pass over
    the entries, whatever the mode, so a filter key costs the same on any session.
    """
    labels = labels or {}
    path_order = list(active_path)
    on_path = set(path_order)
    leaf = path_order[-1] if path_order else None
    calls: dict[str, dict[str, Any]] = {}
    if mode in ("default", "all", "labeled-only"):
        for entry in entries:
            message = cast(dict[str, Any], entry.get("message") or {})
            if entry.get("type") == "message" and message.get("role") == "assistant":
                for block in cast(list[dict[str, Any]], message.get("content") or []):
                    if block.get("type") == "toolCall":
                        calls[str(block.get("id"))] = block
    texts = {
        e["id"]: entry_text(e, TEXT_LIMIT, calls)
        if _shown(e, mode, labelled=e["id"] in labels, leaf=e["id"] == leaf)
        else None
        for e in entries
    }
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
        out.sort(key=lambda entry: entry["id"] not in on_path)  # stable: append order otherwise
        return out

    rows: list[TreeRow] = []
    # (entry, its row's prefix, its children's prefix, its parent row, starts a branch); a
    # stack, so deep trees need no recursion.
    stack: list[tuple[dict[str, Any], str, str, int | None, bool]] = []

    def push_children(parent: str | None, prefix: str, up: int | None, kids: list[dict[str, Any]]) -> None:
        if len(kids) == 1:
            stack.append((kids[0], prefix, prefix, up, up is None))
            return
        for index in reversed(range(len(kids))):
            last = index == len(kids) - 1
            stack.append(
                (
                    kids[index],
                    prefix + ("└─ " if last else "├─ "),
                    prefix + ("   " if last else "│  "),
                    up,
                    True,
                )
            )

    push_children(None, "", None, shown_children(None))
    while stack:
        entry, row_prefix, child_prefix, up, branch_start = stack.pop()
        entry_id: str = entry["id"]
        message = cast(dict[str, Any], entry.get("message") or {})
        is_user = entry.get("type") == "message" and message.get("role") == "user"
        kids = shown_children(entry_id)
        foldable = branch_start and bool(kids)
        is_folded = foldable and entry_id in folded
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
                up=up,
                foldable=foldable,
                folded=is_folded,
            )
        )
        if not is_folded:
            push_children(entry_id, child_prefix, len(rows) - 1, kids)
    return rows


def branch_jump(rows: Sequence[TreeRow], index: int, direction: int) -> int:
    """pi's ``foldOrUp``/``unfoldOrDown`` move when there is nothing to fold: up (``-1``) to the
    start of the branch segment the row is in (or of the one above when already there); down
    (``1``) along first children to the first branch of the next fork, or to the branch's end."""
    if not 0 <= index < len(rows):
        return index
    below: dict[int | None, list[int]] = {}
    for i, row in enumerate(rows):
        below.setdefault(row.up, []).append(i)
    at = index
    if direction > 0:
        while len(kids := below.get(at, [])) == 1:
            at = kids[0]
        return kids[0] if kids else at
    while (parent := rows[at].up) is not None:
        if len(below[parent]) > 1 and at < index:
            return at
        at = parent
    return at


class TreeSource:
    """A session's entries read once, for the navigator to draw in any filter and fold."""

    def __init__(self, entries: Sequence[dict[str, Any]], active_path: Sequence[str]) -> None:
        self.entries = entries
        self.active_path = active_path
        self._parents: dict[str, str | None] = {e["id"]: e.get("parentId") for e in entries}
        self._by_id = {e["id"]: e for e in entries}
        marks = fold_labels(entries)
        self.labels = {target: label.text for target, label in marks.items()}
        self.label_times = {target: label.set_at for target, label in marks.items()}
        """Entry id → when its label was set (ms), from the newest label entry naming it."""

    @classmethod
    def of(cls, session: Session) -> TreeSource:
        return cls(session.entries(), [e["id"] for e in session.path()])

    def rows(self, mode: str, folded: Collection[str] = ()) -> list[TreeRow]:
        return tree_rows(self.entries, self.active_path, self.labels, mode=mode, folded=folded)

    def copy_text(self, entry_id: str) -> str | None:
        """What Ctrl-X copies from the row (pi's ``getEntryCopyText``): a message's whole text (a
        failed answer's error when it has none), a shell run's command, a summary's text."""
        entry = self._by_id.get(entry_id) or {}
        kind = entry.get("type")
        text: str | None = None
        if kind == "message":
            message = cast(dict[str, Any], entry.get("message") or {})
            if message.get("role") == "bashExecution":
                text = message.get("command")
            elif "content" in message:
                text = _full_text(message.get("content"))
                if not text and message.get("role") == "assistant":
                    text = message.get("errorMessage")
        elif kind == "custom_message":
            text = _full_text(entry.get("content"))
        elif kind in ("compaction", "branch_summary"):
            text = entry.get("summary")
        return text if isinstance(text, str) and text.strip() else None

    def nearest(self, entry_id: str | None, rows: Sequence[TreeRow]) -> str | None:
        """``entry_id``, or its nearest ancestor that is one of ``rows`` (where the cursor stays
        when a filter hides its row, as in pi)."""
        ids = {row.id for row in rows}
        while entry_id is not None and entry_id not in ids:
            entry_id = self._parents.get(entry_id)
        return entry_id


def session_rows(session: Session, mode: str = "no-tools", folded: Collection[str] = ()) -> list[TreeRow]:
    return TreeSource.of(session).rows(mode, folded)


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


def row_line(row: TreeRow, width: int, label_time: str | None = None) -> str:
    """The row as one screen line of at most ``width`` cells: path mark, connectors (with pi's
    ``⊟`` on a branch that can be folded, ``⊞`` on a folded one), text, label (with when it was
    set, if given) and the "you are here" mark (cut with ``…`` when too long)."""
    mark = "•" if row.on_path else " "
    label = f" ({row.label}{' · ' + label_time if label_time else ''})" if row.label else ""
    here = (HERE if width >= 2 * cell_len(HERE) else " ←") if row.current else ""
    prefix = row.prefix
    if row.foldable and prefix.endswith("─ "):  # pi's fold mark sits on the connector
        prefix = prefix[:-2] + ("⊞ " if row.folded else "⊟ ")
    elif row.folded:
        prefix += "⊞ "  # a root: no connector to carry it
    return fit(fit(f"{mark} {prefix}{row.text}{label}", width - cell_len(here)) + here, width)


def label_time(timestamp_ms: int, now: datetime) -> str:
    """When a label was set, as pi's tree shows it (local time): ``14:03`` today, ``3/9 14:03``
    this year, ``25/3/9 14:03`` before."""
    when = datetime.fromtimestamp(timestamp_ms / 1000).astimezone(now.tzinfo)
    clock = f"{when.hour:02d}:{when.minute:02d}"
    if when.date() == now.date():
        return clock
    if when.year == now.year:
        return f"{when.month}/{when.day} {clock}"
    return f"{when.year % 100:02d}/{when.month}/{when.day} {clock}"


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
