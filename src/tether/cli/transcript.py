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
    items = transcript_items(messages, show_thinking=show_thinking, folded=folded, custom=custom)
    return draw_transcript(painter, items)


def draw_transcript(painter: render.Painter, items: Sequence[render.Item]) -> str:
    """``transcript_items`` drawn with ``painter``: what ``render_transcript`` returns."""
    text = "\n\n".join(stripped for item in items if (stripped := item(painter).strip("\n")))
    return text or painter.styled("(nothing in this conversation yet)", "muted")


def transcript_items(
    messages: Sequence[dict[str, Any]],
    *,
    show_thinking: bool,
    folded: bool = False,
    custom: render.CustomRenderer | None = None,
) -> list[render.Item]:
    """``render_transcript``'s pieces, each keeping of its message what it shows: folded, a tool's
    header line and its result's first lines, a prompt's beginning, thinking's first line, not
    the whole messages. The resumed session's history (``interactive_views.history``) keeps
    them to draw again at a new width, as the scrollback keeps live items."""
    results = {
        str(m.get("toolCallId")): m for m in messages if m.get("role") == "toolResult" and m.get("toolCallId")
    }
    called: set[str] = set()
    items: list[render.Item] = []
    for message in messages:
        role = message.get("role")
        if role == "user":
            items.append(render.user_item(render.message_text(message)))
        elif role == "assistant":
            items.extend(_assistant(message, results, called, show_thinking=show_thinking, folded=folded))
        elif role == "toolResult" and str(message.get("toolCallId")) not in called:
            items.append(_tool(str(message.get("toolName", "?")), {}, message, folded=folded))
        elif role in ("bashExecution", "pythonExecution"):
            items.append(render.shell_item(message, expanded=not folded))
        elif role in ("compactionSummary", "branchSummary"):
            title = "compaction summary" if role == "compactionSummary" else "summary of a branch left"
            items.append(render.note(f"── {title} ──", "warning.strong"))
            items.append(render.item(render.Painter.markdown, str(message.get("summary", ""))))
        elif role == "fileMention":
            for file in cast(list[dict[str, Any]], message.get("files") or []):
                note = f" (skipped: {file['skippedReason']})" if file.get("skippedReason") else ""
                items.append(render.note(f"@ attached {file.get('path', '?')}{note}", "muted"))
        elif role == "custom":  # kept whole: its renderer may read any of it
            items.append(render.item(_custom, message, expanded=not folded, custom=custom))
    return items


def _custom(
    painter: render.Painter, message: dict[str, Any], *, expanded: bool, custom: render.CustomRenderer | None
) -> str:
    return render.custom_message(painter, message, expanded=expanded, custom=custom) or ""


def _assistant(
    message: dict[str, Any],
    results: dict[str, dict[str, Any]],
    called: set[str],
    *,
    show_thinking: bool,
    folded: bool,
) -> list[render.Item]:
    items: list[render.Item] = []
    for block in cast(list[dict[str, Any]], message.get("content") or []):
        kind = block.get("type")
        if kind == "thinking":
            hint = "Ctrl-O to read" if folded else "Ctrl-T to expand"
            items.append(
                render.thinking_item(str(block.get("thinking", "")), expanded=show_thinking, hint=hint)
            )
        elif kind == "text" and str(block.get("text", "")).strip():
            items.append(render.item(render.Painter.markdown, str(block["text"])))
        elif kind == "toolCall":
            call_id = str(block.get("id"))
            called.add(call_id)
            arguments = block.get("arguments", {})
            items.append(_tool(str(block.get("name", "?")), arguments, results.get(call_id), folded=folded))
    if message.get("stopReason") in ("error", "aborted"):
        aborted = message.get("stopReason") == "aborted"
        items.append(render.item(render.error_text, str(message.get("errorMessage", "")), aborted=aborted))
    return items


def _tool(name: str, args: object, result: dict[str, Any] | None, *, folded: bool) -> render.Item:
    if result is None:
        return render.running_item(name, args)
    return render.FinishedTool.of(name, args, result, expanded=not folded)
