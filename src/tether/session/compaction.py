"""Compaction: keep a long session inside the model's context window.

When the context reaches ``context_window - reserve_tokens`` (defaults: reserve 16,384 tokens
for the reply and the next prompt, keep the newest ~20,000 tokens verbatim), or when a provider
rejects a request as too long (``is_context_overflow``), the older part of the active path is
summarised by the current model into one ``compactionSummary``, and a ``compaction`` entry
records the summary and the first entry kept verbatim. Nothing is deleted: the rebuild simply
starts at the newest compaction (``tether.session.context``).

Rules: the cut never lands on a tool result (a call and its result stay together on the kept
side); an earlier summary is *updated* — it goes to the model as the previous summary together
with the newly compacted messages — never nested inside the new one.

Token counts come from ``tether.session.budget``.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from tether.ai.abort import AbortSignal
from tether.ai.types import Context, SimpleStreamOptions, StreamFn
from tether.session.budget import (
    CompactionSettings,
    estimate_tokens,
    message_texts,
)
from tether.session.context import context_message
from tether.session.events import CompactionSummary
from tether.session.session import Session
from tether.store.store import SessionError
from tether.store.tree import Node
from tether.wire import AgentMessage, Message, ModelInfo, Usage
from tether.wire.json_line import mended_json

TOOL_RESULT_CHARS = 4_000
_ARGUMENTS = json.JSONEncoder(ensure_ascii=False, allow_nan=False)
"""How a summarised call's arguments are written (``mended_json``: any depth, no ``NaN``)."""
"""A tool result is cut to this many characters in the text the summariser reads."""


class CompactionError(SessionError):
    """The summariser failed (its error message is kept) or there is nothing to compact."""


class NothingToCompactError(CompactionError):
    """The conversation is still short: all of it lies in the part compaction always keeps
    (``keep_recent_tokens``), so there is nothing older to summarise. Not a failure of anything:
    a program that compacts on a schedule may ignore it."""


@dataclass(frozen=True, slots=True)
class CompactionResult:
    entry_id: str
    summary: str
    first_kept_entry_id: str | None
    tokens_before: int
    tokens_after: int
    usage: Usage | None = None
    """What the summarising call cost (pi 1.x's ``usage`` of a compaction)."""
    details: dict[str, list[str]] | None = None
    """``{readFiles, modifiedFiles}`` of what was summarised (``file_lists``), as pi 1.6 reports."""

    def wire(self) -> CompactionSummary:
        """pi's form, as ``compaction_end`` and RPC's ``compact`` answer carry it."""
        summary: CompactionSummary = {
            "summary": self.summary,
            "firstKeptEntryId": self.first_kept_entry_id,
            "tokensBefore": self.tokens_before,
            "tokensAfter": self.tokens_after,
            "estimatedTokensAfter": self.tokens_after,
        }
        if self.usage is not None:
            summary["usage"] = self.usage
        if self.details is not None:
            summary["details"] = self.details
        return summary


# --- choosing what to summarise -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Plan:
    to_summarise: list[AgentMessage]
    first_kept: str | None
    previous_summary: str | None
    previous_details: object = None


def _plan(path: list[Node], keep_recent_tokens: int) -> _Plan:
    """Split the live part of ``path`` into what to summarise and what to keep."""
    start = 0
    previous: str | None = None
    previous_details: object = None
    for i in range(len(path) - 1, -1, -1):
        if path[i].type == "compaction":
            entry = path[i].entry
            previous = str(entry.get("summary", ""))
            previous_details = entry.get("details")
            kept = entry.get("firstKeptEntryId")
            start = next((j for j in range(i) if path[j].id == kept), i + 1)
            live = [n for n in path[start:] if n.id != path[i].id]
            break
    else:
        live = list(path[start:])
    items = [(n, m) for n in live if (m := context_message(n)) is not None]
    kept_tokens = 0
    cut = len(items)
    for k in range(len(items) - 1, -1, -1):
        kept_tokens += estimate_tokens(items[k][1])
        if kept_tokens >= keep_recent_tokens:
            cut = k
            break
    else:
        cut = 0
    # Move the cut back until it is not a tool result, so calls keep their results.
    while 0 < cut < len(items) and items[cut][1]["role"] == "toolResult":
        cut -= 1
    first_kept = None if cut == len(items) else items[cut][0].id
    return _Plan([m for _, m in items[:cut]], first_kept, previous, previous_details)


def file_lists(messages: Sequence[AgentMessage], previous: object = None) -> dict[str, list[str]]:
    """``{readFiles, modifiedFiles}``: the paths the summarised part's ``read``, ``write`` and
    ``edit`` calls named, plus those of the compaction before (its ``details``), as pi 1.6 lists
    them on a compaction: read-only files apart from changed ones, each list sorted."""
    read: set[str] = set()
    changed: set[str] = set()
    if isinstance(previous, dict):
        before = cast(dict[str, Any], previous)
        read.update(p for p in before.get("readFiles") or () if isinstance(p, str))
        changed.update(p for p in before.get("modifiedFiles") or () if isinstance(p, str))
    for message in messages:
        if message["role"] != "assistant":
            continue
        for block in message["content"]:
            if block["type"] != "toolCall":
                continue
            path = block["arguments"].get("path")
            if not isinstance(path, str) or not path:
                continue
            if block["name"] == "read":
                read.add(path)
            elif block["name"] in ("write", "edit"):
                changed.add(path)
    return {"readFiles": sorted(read - changed), "modifiedFiles": sorted(changed)}


# --- summarising --------------------------------------------------------------------------------

SUMMARY_SYSTEM_PROMPT = (
    "You summarise a conversation between a user and an AI coding agent so the agent can continue "
    "the work without the original messages. Write a concise, structured summary: the user's goal "
    "and constraints, decisions made, files read or changed (with paths), commands run and their "
    "outcomes, errors met and how they were resolved, and what remains to be done. Keep exact "
    "names, paths, numbers and identifiers. Do not continue the conversation; output only the summary."
)


def serialize_for_summary(messages: Sequence[AgentMessage]) -> str:
    """The conversation as plain text for the summariser (tool results cut)."""
    lines: list[str] = []
    for message in messages:
        m = cast(dict[str, Any], message)
        role = str(m.get("role"))
        if role == "assistant":
            for block in cast(list[Any], m.get("content") or []):
                b = cast(dict[str, Any], block) if isinstance(block, dict) else {}
                if b.get("type") == "text":
                    lines.append(f"[assistant]: {b.get('text', '')}")
                elif b.get("type") == "toolCall":
                    args = mended_json(b.get("arguments", {}), _ARGUMENTS)[0]
                    lines.append(f"[assistant tool call {b.get('name')}]: {args}")
        elif role == "toolResult":
            text = "".join(t for t in message_texts(m) if t is not None)
            if len(text) > TOOL_RESULT_CHARS:
                text = text[:TOOL_RESULT_CHARS] + f"\n… ({len(text) - TOOL_RESULT_CHARS} more characters)"
            lines.append(f"[tool result {m.get('toolName')}]: {text}")
        else:
            text = "\n".join(t for t in message_texts(m) if t is not None)
            lines.append(f"[{role}]: {text}")
    return "\n\n".join(lines)


def summary_prompt(
    messages: Sequence[AgentMessage], previous_summary: str | None, instructions: str | None
) -> str:
    parts = ["<conversation>", serialize_for_summary(messages), "</conversation>"]
    if previous_summary:
        parts += [
            "",
            "<previous-summary>",
            previous_summary,
            "</previous-summary>",
            "",
            "The previous summary covers what came before this conversation. Produce one updated "
            "summary that merges it with the conversation above; keep what is still relevant.",
        ]
    else:
        parts += ["", "Summarise the conversation above."]
    if instructions:
        parts += ["", f"Additional instructions: {instructions}"]
    return "\n".join(parts)


async def summarize(
    messages: Sequence[AgentMessage],
    model: ModelInfo,
    stream_fn: StreamFn,
    *,
    previous_summary: str | None = None,
    instructions: str | None = None,
    options: SimpleStreamOptions | None = None,
) -> str:
    """Ask ``model`` for a summary of ``messages``; ``CompactionError`` if the call fails."""
    text, _ = await _summary_reply(messages, model, stream_fn, previous_summary, instructions, options)
    return text


async def _summary_reply(
    messages: Sequence[AgentMessage],
    model: ModelInfo,
    stream_fn: StreamFn,
    previous_summary: str | None,
    instructions: str | None,
    options: SimpleStreamOptions | None,
) -> tuple[str, Usage]:
    """The summary's text and the usage of the call that wrote it."""
    request: Message = cast(
        Message,
        {
            "role": "user",
            "content": summary_prompt(messages, previous_summary, instructions),
            "timestamp": 0,
        },
    )
    context: Context = {"systemPrompt": SUMMARY_SYSTEM_PROMPT, "messages": [request]}
    stream = stream_fn(model, context, options)
    if inspect.isawaitable(stream):
        stream = await stream
    reply = await stream.result()
    if reply["stopReason"] in ("error", "aborted"):
        raise CompactionError(f"summarising failed: {reply.get('errorMessage') or reply['stopReason']}")
    text = "\n".join(
        cast(str, b.get("text", "")) for b in reply["content"] if b.get("type") == "text"
    ).strip()
    if not text:
        raise CompactionError("summarising failed: the model returned no text")
    return text, reply["usage"]


async def compact(
    session: Session,
    model: ModelInfo,
    stream_fn: StreamFn,
    *,
    instructions: str | None = None,
    settings: CompactionSettings | None = None,
    signal: AbortSignal | None = None,
) -> CompactionResult:
    """Summarise the older part of the active path and persist a compaction entry."""
    settings = settings or CompactionSettings()
    if signal is not None and signal.aborted:  # before the request (a ``compaction_start`` listener)
        raise CompactionError("summarising failed: the compaction was aborted")
    path = session.path_nodes()
    plan = _plan(path, settings.keep_recent_tokens)
    if not plan.to_summarise:
        raise NothingToCompactError(
            f"nothing to compact yet: the conversation ({session.context.tokens.total} tokens) lies "
            f"within the {settings.keep_recent_tokens} most recent tokens compaction always keeps"
        )
    tokens_before = session.context.tokens.total
    options = SimpleStreamOptions(signal=signal, session_id=session.id)
    summary, usage = await _summary_reply(
        plan.to_summarise, model, stream_fn, plan.previous_summary, instructions, options
    )
    if signal is not None and signal.aborted:  # from a model deaf to the abort: not stored all the same
        raise CompactionError("summarising failed: the compaction was aborted")
    kept = session.messages[_kept_start(session, plan.first_kept) :] if plan.first_kept else []
    summary_tokens = len(summary) // 4
    tokens_after = summary_tokens + sum(estimate_tokens(m) for m in kept)
    details = file_lists(plan.to_summarise, plan.previous_details)
    entry_id = session.append_compaction(summary, plan.first_kept, tokens_before, tokens_after, details)
    return CompactionResult(entry_id, summary, plan.first_kept, tokens_before, tokens_after, usage, details)


def _kept_start(session: Session, first_kept: str) -> int:
    ids = session.context.entry_ids
    return ids.index(first_kept) if first_kept in ids else len(ids)


async def summarize_branch(
    session: Session,
    target: str | None,
    model: ModelInfo,
    stream_fn: StreamFn,
    *,
    instructions: str | None = None,
    signal: AbortSignal | None = None,
) -> str | None:
    """Move the leaf to ``target``, leaving a ``branch_summary`` of the branch being left.

    The summary covers the entries between the common ancestor of the old leaf and ``target``
    and the old leaf. Returns the new leaf (the summary entry).
    """
    old_path = session.path_nodes()
    target_ids = {n.id for n in session.path_nodes(target)} if target is not None else set[str]()
    fork = len(old_path)
    while fork > 0 and old_path[fork - 1].id not in target_ids:
        fork -= 1
    left = [m for n in old_path[fork:] if (m := context_message(n)) is not None]
    if not left:
        return session.branch(target)
    summary = await summarize(
        left,
        model,
        stream_fn,
        instructions=instructions,
        options=SimpleStreamOptions(signal=signal, session_id=session.id),
    )
    if signal is not None and signal.aborted:  # from a model deaf to the abort: not moved all the same
        raise CompactionError("summarising failed: the move was aborted")
    return session.branch(target, summary=summary)
