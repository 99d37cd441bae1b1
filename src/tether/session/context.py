"""Rebuilding what the agent sees from the active path of the entry tree.

The path is walked once: settings entries are folded (newest wins) into the model, thinking
level, service tier and system prompt; the newest compaction replaces everything before its
``firstKeptEntryId`` with one ``compactionSummary`` message; branch summaries become
``branchSummary`` messages where they hang; labels, titles and custom entries are not context.
Every context message remembers the id of the entry it came from, which is what prompt hooks
address with ``insert_after``/``insert_before``.

pi 1.6's ``context_edit`` entries (kept by an import as ``pi.context_edit`` custom entries; tether
writes none of its own) then change what their target puts in the context, as pi's
``buildSessionProjection`` does: among the entries the context is built from (so an edit the
newest compaction summarised away no longer counts), the latest edit of a target wins;
``replacement: null`` leaves the target out, otherwise its content is replaced (a string as one
text block for assistant and tool results, whose content must be a list) and the rest kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast, get_args

from tether.ai.types import ThinkingLevel
from tether.session.budget import TokenCount
from tether.store.entries import SETTINGS_TYPES, EntryDict
from tether.store.tree import Node
from tether.wire import AgentMessage, ModelInfo

_THINKING: frozenset[object] = frozenset(get_args(ThinkingLevel))


@dataclass(frozen=True, slots=True)
class ModelRef:
    """The model a session is set to: provider and id, plus the descriptor when it was stored."""

    provider: str
    model_id: str
    info: ModelInfo | None = None


@dataclass(slots=True)
class SessionContext:
    """Messages for the next request, their entry ids, and the folded settings."""

    messages: list[AgentMessage] = field(default_factory=lambda: [])
    entry_ids: list[str] = field(default_factory=lambda: [])
    """``entry_ids[i]`` is the entry ``messages[i]`` was built from."""
    model: ModelRef | None = None
    thinking_level: ThinkingLevel | None = None
    """``None`` too for a level tether does not know (an imported file's, a newer version's):
    the run's own level applies, as if none were stored."""
    service_tier: str | None = None
    system_prompt: str | None = None
    compacted: int = 0
    """How many of ``messages`` the newest compaction left: its summary and the part it kept.
    By place, not time (a kept reply's clock may be anyone's): their usage measured the context
    before the compaction (a kept reply reported the old 70% until the next one), so ``tokens``
    estimates them."""
    tokens: TokenCount = field(default_factory=TokenCount)
    """``context_tokens`` of ``messages``, kept as they are added (``build_context`` counts them)."""

    def apply_setting(self, entry: EntryDict) -> None:
        """Fold one settings entry (newest wins)."""
        kind = entry.get("type")
        if kind == "model_change":
            info = entry.get("model")
            self.model = ModelRef(
                str(entry.get("provider", "")),
                str(entry.get("modelId", "")),
                cast(ModelInfo, info) if isinstance(info, dict) else None,
            )
        elif kind == "thinking_level_change":
            level = entry.get("thinkingLevel")
            self.thinking_level = (
                cast(ThinkingLevel, level) if isinstance(level, str) and level in _THINKING else None
            )
        elif kind == "service_tier_change":
            tier = entry.get("serviceTier")
            self.service_tier = tier if isinstance(tier, str) else None
        elif kind == "system_prompt_change":
            prompt = entry.get("systemPrompt")
            self.system_prompt = prompt if isinstance(prompt, str) else None

    def add(self, node: Node) -> None:
        """Append what ``node`` contributes after the current tail.

        A compaction rewrites the head of the context, so callers rebuild with ``build_context``
        instead of adding one.
        """
        message = context_message(node)
        if message is not None:
            self.messages.append(message)
            self.entry_ids.append(node.id)
            self.tokens.add(message)
        elif node.type in SETTINGS_TYPES:
            self.apply_setting(node.entry)


def build_context(path: Sequence[Node]) -> SessionContext:
    """The context at the end of ``path`` (root first)."""
    ctx = SessionContext()
    compaction_at = -1
    for i in range(len(path) - 1, -1, -1):
        if path[i].type == "compaction":
            compaction_at = i
            break
    for node in path:
        if node.type in SETTINGS_TYPES:
            ctx.apply_setting(node.entry)
    if compaction_at < 0:
        _add_messages(ctx, path)
        _apply_edits(ctx, path)
        ctx.tokens = TokenCount.of(ctx.messages)
        return ctx
    compaction = path[compaction_at]
    ctx.messages.append(compaction_message(compaction.entry))
    ctx.entry_ids.append(compaction.id)
    first_kept = compaction.entry.get("firstKeptEntryId")
    start = compaction_at
    if isinstance(first_kept, str):
        for i in range(compaction_at):
            if path[i].id == first_kept:
                start = i
                break
    _add_messages(ctx, path[start:compaction_at])
    ctx.compacted = len(ctx.messages)
    _add_messages(ctx, path[compaction_at + 1 :])
    _apply_edits(ctx, path[start:])
    ctx.tokens = TokenCount.of(ctx.messages, ctx.compacted)
    return ctx


PI_CONTEXT_EDIT = "pi.context_edit"
"""The custom type an imported pi ``context_edit`` entry is kept as (``pi_format``)."""

_EDITABLE_ROLES = frozenset({"user", "assistant", "toolResult", "custom"})
_LIST_ROLES = frozenset({"assistant", "toolResult"})


def _apply_edits(ctx: SessionContext, nodes: Sequence[Node]) -> None:
    """Apply the ``context_edit`` entries among ``nodes`` (see the module docstring)."""
    edits: dict[str, object] = {}
    for node in nodes:
        if node.type == "custom" and node.entry.get("customType") == PI_CONTEXT_EDIT:
            data = node.entry.get("data")
            if isinstance(data, dict):
                edit = cast(dict[str, Any], data)
                if isinstance(edit.get("targetId"), str):
                    edits[edit["targetId"]] = edit.get("replacement")
    if not edits:
        return
    messages: list[AgentMessage] = []
    entry_ids: list[str] = []
    compacted = 0
    for i, (message, entry_id) in enumerate(zip(ctx.messages, ctx.entry_ids, strict=True)):
        if entry_id in edits:
            replacement = edits[entry_id]
            if replacement is None:
                continue
            message = _replaced(message, replacement)
        messages.append(message)
        entry_ids.append(entry_id)
        compacted += i < ctx.compacted
    ctx.messages, ctx.entry_ids, ctx.compacted = messages, entry_ids, compacted


def _replaced(message: AgentMessage, replacement: object) -> AgentMessage:
    role = message.get("role")
    if role not in _EDITABLE_ROLES:
        return message
    content = cast(dict[str, Any], replacement).get("content") if isinstance(replacement, dict) else None
    if role in _LIST_ROLES and isinstance(content, str):
        content = [{"type": "text", "text": content}]
    return cast(AgentMessage, {**message, "content": content})


def _add_messages(ctx: SessionContext, nodes: Sequence[Node]) -> None:
    messages, entry_ids = ctx.messages, ctx.entry_ids
    for node in nodes:
        # Message entries are nearly all of a path: take them without the general call.
        message = node.message if node.type == "message" else context_message(node)
        if message is not None:
            messages.append(cast(AgentMessage, message))
            entry_ids.append(node.id)


def context_message(node: Node) -> AgentMessage | None:
    """The message an entry puts in the context, if any (compactions aside)."""
    if node.type == "message":
        return cast("AgentMessage | None", node.message)  # a string: no typing work per call
    if node.type == "branch_summary":
        entry = node.entry
        if not entry.get("summary"):
            return None  # pi puts no message in for an empty summary
        return cast(
            AgentMessage,
            {
                "role": "branchSummary",
                "summary": str(entry.get("summary", "")),
                "fromId": str(entry.get("fromId", "")),
                "timestamp": node.created,
            },
        )
    return None


def compaction_message(entry: EntryDict) -> AgentMessage:
    message: dict[str, Any] = {
        "role": "compactionSummary",
        "summary": str(entry.get("summary", "")),
        "tokensBefore": int(entry.get("tokensBefore", 0) or 0),
        "timestamp": entry.get("timestamp", 0),
    }
    if isinstance(entry.get("tokensAfter"), int):
        message["tokensAfter"] = entry["tokensAfter"]
    return cast(AgentMessage, message)
