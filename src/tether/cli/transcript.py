"""The transcript view's text (Ctrl-O): the whole current branch with nothing folded (but a
user message too long to read on a screen: a 5 MB paste shows its beginning, ``render.user_text``).

The scrollback shows tool results folded to a few lines and thinking folded to one; this is the
place to read them in full. It covers the branch from its first entry, compacted messages
included (with the compaction summary where it happened), so it is also the way to see what a
compaction hid. Pure: messages and a ``Painter`` in, ANSI text out.

A long session is rendered from its end, a chunk of messages at a time (``BackwardTranscript``),
as the view scrolls up: opening it costs the last screens, not the session's length.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, cast

from tether.cli import render
from tether.session import Session


def branch_messages(session: Session) -> list[dict[str, Any]]:
    """Every message of the active path, compacted ones too, compactions as summary messages."""
    from tether.session.context import compaction_message, context_message

    out: list[dict[str, Any]] = []
    for node in session.path_nodes():
        message = compaction_message(node.entry) if node.type == "compaction" else context_message(node)
        if message is not None:
            out.append(cast(dict[str, Any], message))
    return out


def branch_messages_backward(session: Session) -> Iterator[dict[str, Any]]:
    """``branch_messages`` newest first, read lazily from the leaf."""
    from tether.session.context import compaction_message, context_message

    for node in session.walk_back():
        message = compaction_message(node.entry) if node.type == "compaction" else context_message(node)
        if message is not None:
            yield cast(dict[str, Any], message)


CHUNK = 12
"""Messages rendered at a time when the transcript view needs older lines."""


class BackwardTranscript:
    """The transcript of messages given newest first, rendered oldest-last in chunks on demand.

    A chunk never starts with a tool result, so a call and its results are rendered together
    (a run of many results only makes that chunk longer)."""

    def __init__(
        self,
        painter: render.Painter,
        newest_first: Iterable[dict[str, Any]],
        *,
        show_thinking: bool,
        folded: bool = False,
        custom: render.CustomRenderer | None = None,
    ) -> None:
        self._painter = painter
        self._custom = custom
        self._messages = iter(newest_first)
        self._show_thinking = show_thinking
        self._folded = folded
        self._started = False
        self.exhausted = False
        """The first message has been read: nothing older is left."""

    def older(self) -> str | None:
        """The text of the next older chunk (to go above what was returned before), ``None`` when
        the first message has been rendered."""
        chunk: list[dict[str, Any]] = []
        for message in self._messages:
            chunk.append(message)
            if len(chunk) >= CHUNK and message.get("role") != "toolResult":
                break
        else:
            self.exhausted = True
        if not chunk:
            if self._started:
                return None
            self._started = True
            return render_transcript(self._painter, [], show_thinking=self._show_thinking)
        self._started = True
        chunk.reverse()
        return render_transcript(
            self._painter, chunk, show_thinking=self._show_thinking, folded=self._folded, custom=self._custom
        )


def render_transcript(
    painter: render.Painter,
    messages: Sequence[dict[str, Any]],
    *,
    show_thinking: bool,
    folded: bool = False,
    custom: render.CustomRenderer | None = None,
) -> str:
    """The messages as terminal text: prompts, answers, every tool call followed by its whole
    result, shell runs with all their output, summaries, extensions' messages (``custom``
    renders them); thinking in full when ``show_thinking``. ``folded``: as the scrollback shows
    them instead (long results and thinking folded)."""
    results = {
        str(m.get("toolCallId")): m for m in messages if m.get("role") == "toolResult" and m.get("toolCallId")
    }
    called: set[str] = set()
    parts: list[str] = []
    for message in messages:
        role = message.get("role")
        if role == "user":
            parts.append(render.user_text(painter, render.message_text(message)))
        elif role == "assistant":
            parts.extend(
                _assistant(painter, message, results, called, show_thinking=show_thinking, folded=folded)
            )
        elif role == "toolResult" and str(message.get("toolCallId")) not in called:
            parts.append(_tool(painter, str(message.get("toolName", "?")), {}, message, folded=folded))
        elif role in ("bashExecution", "pythonExecution"):
            parts.append(render.shell_run(painter, message, expanded=not folded))
        elif role in ("compactionSummary", "branchSummary"):
            title = "compaction summary" if role == "compactionSummary" else "summary of a branch left"
            parts.append(painter.styled(f"── {title} ──", "warning.strong"))
            parts.append(painter.markdown(str(message.get("summary", ""))))
        elif role == "fileMention":
            for item in cast(list[dict[str, Any]], message.get("files") or []):
                note = f" (skipped: {item['skippedReason']})" if item.get("skippedReason") else ""
                parts.append(painter.styled(f"@ attached {item.get('path', '?')}{note}", "muted"))
        elif role == "custom":
            parts.append(render.custom_message(painter, message, expanded=not folded, custom=custom) or "")
    text = "\n\n".join(stripped for p in parts if (stripped := p.strip("\n")))
    return text or painter.styled("(nothing in this conversation yet)", "muted")


def _assistant(
    painter: render.Painter,
    message: dict[str, Any],
    results: dict[str, dict[str, Any]],
    called: set[str],
    *,
    show_thinking: bool,
    folded: bool,
) -> list[str]:
    parts: list[str] = []
    for block in cast(list[dict[str, Any]], message.get("content") or []):
        kind = block.get("type")
        if kind == "thinking":
            hint = "Ctrl-O to read" if folded else "Ctrl-T to expand"
            parts.append(
                render.thinking_text(
                    painter, str(block.get("thinking", "")), expanded=show_thinking, hint=hint
                )
            )
        elif kind == "text" and str(block.get("text", "")).strip():
            parts.append(painter.markdown(str(block["text"])))
        elif kind == "toolCall":
            call_id = str(block.get("id"))
            called.add(call_id)
            arguments = block.get("arguments", {})
            parts.append(
                _tool(painter, str(block.get("name", "?")), arguments, results.get(call_id), folded=folded)
            )
    if message.get("stopReason") in ("error", "aborted"):
        aborted = message.get("stopReason") == "aborted"
        parts.append(render.error_text(painter, str(message.get("errorMessage", "")), aborted=aborted))
    return parts


def _tool(
    painter: render.Painter, name: str, args: object, result: dict[str, Any] | None, *, folded: bool
) -> str:
    if result is None:
        return render.tool_header(painter, name, args, "running")
    return render.finished_tool(painter, name, args, result, expanded=not folded)
