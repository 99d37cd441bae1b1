"""From the text a local model generates to assistant stream events.

A local model emits one flat string. Structure is recovered here, incrementally, piece by piece:

- ``<think>…</think>`` spans become thinking blocks (a tag split across two pieces is held back
  until it is complete);
- when tools are offered, an answer that *is* a tool call, a JSON object
  ``{"name": …, "arguments": {…}}`` (bare, fenced, or inside ``<tool_call>`` tags), becomes a
  ``toolCall`` block. Such an answer is held back until the end, since it can only be judged
  whole; anything else streams as text as soon as it is clearly not a call;
- when a tool is *forced*, the model was constrained by a grammar to emit exactly the arguments
  object, which streams as ``toolcall_delta``s.

Pure: no llama, no I/O. ``LocalOutput`` mutates the partial message and returns the events.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any, cast

from tether.wire import AssistantMessage, AssistantMessageEvent, TextContent, ThinkingContent, ToolCall

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
_CALL_STARTS = ("{", "<tool_call>", "```")
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)
_TAGGED = re.compile(r"^<tool_call>\s*(.*?)\s*(?:</tool_call>)?$", re.DOTALL)


class LocalOutput:
    """Incremental parser of one generation into ``output``'s content blocks."""

    def __init__(self, output: AssistantMessage, tool_names: frozenset[str], forced_tool: str | None) -> None:
        self.output = output
        self.tool_names = tool_names
        self.forced_tool = forced_tool
        self._pending = ""
        """Text not yet classified (a possible tag prefix, or a possible tool call)."""
        self._in_thinking = False
        self._thinking: ThinkingContent | None = None
        self._text: TextContent | None = None
        self._answer_started = False
        self._call: ToolCall | None = None
        self._call_text = ""

    # -- feeding -----------------------------------------------------------------------------------

    def feed(self, piece: str) -> list[AssistantMessageEvent]:
        events: list[AssistantMessageEvent] = []
        if self.forced_tool is not None:
            self._forced_delta(piece, events)
            return events
        self._pending += piece
        self._drain(events, final=False)
        return events

    def finish(self) -> list[AssistantMessageEvent]:
        """Close every block; the caller then emits the terminal event."""
        events: list[AssistantMessageEvent] = []
        if self.forced_tool is not None:
            self._forced_end(events)
            return events
        self._drain(events, final=True)
        if self._in_thinking:
            self._end_thinking(events)
        self._close_text(events)
        return events

    @property
    def has_tool_call(self) -> bool:
        return any(block["type"] == "toolCall" for block in self.output["content"])

    # -- text and thinking ---------------------------------------------------------------------------

    def _drain(self, events: list[AssistantMessageEvent], *, final: bool) -> None:
        while self._pending:
            tag = THINK_CLOSE if self._in_thinking else THINK_OPEN
            at = self._pending.find(tag)
            if at >= 0:
                before, self._pending = self._pending[:at], self._pending[at + len(tag) :]
                if self._in_thinking:
                    self._thinking_delta(before, events)
                    self._end_thinking(events)
                else:
                    self._answer(before, events, final=True)
                    self._start_thinking(events)
                continue
            keep = 0 if final else _partial_suffix(self._pending, tag)
            ready = self._pending[: len(self._pending) - keep]
            if self._in_thinking:
                self._pending = self._pending[len(ready) :]
                self._thinking_delta(ready, events)
            else:
                self._pending = self._pending[len(ready) :]
                held = self._answer(ready, events, final=final)
                self._pending = held + self._pending
            return

    def _answer(self, text: str, events: list[AssistantMessageEvent], *, final: bool) -> str:
        """Route answer text; returns what must wait (a tool call may still be being written)."""
        if not self._answer_started:
            text = text.lstrip()  # the blank line models put after </think> is not an answer
            if not text:
                return ""
            if self.tool_names:
                if not final and any(text.startswith(s) or s.startswith(text) for s in _CALL_STARTS):
                    return text  # judged once the whole answer is known
                if final and self._emit_tool_call(text, events):
                    return ""
        self._answer_started = True
        self._text_delta(text, events)
        return ""

    def _text_delta(self, text: str, events: list[AssistantMessageEvent]) -> None:
        if not text:
            return
        if self._text is None:
            self._text = {"type": "text", "text": ""}
            self.output["content"].append(self._text)
            events.append(
                {
                    "type": "text_start",
                    "contentIndex": len(self.output["content"]) - 1,
                    "partial": self.output,
                }
            )
        self._text["text"] += text
        index = self.output["content"].index(self._text)
        events.append({"type": "text_delta", "contentIndex": index, "delta": text, "partial": self.output})

    def _start_thinking(self, events: list[AssistantMessageEvent]) -> None:
        self._close_text(events)
        self._in_thinking = True
        self._thinking = {"type": "thinking", "thinking": ""}
        self.output["content"].append(self._thinking)
        events.append(
            {
                "type": "thinking_start",
                "contentIndex": len(self.output["content"]) - 1,
                "partial": self.output,
            }
        )

    def _thinking_delta(self, text: str, events: list[AssistantMessageEvent]) -> None:
        if not text or self._thinking is None:
            return
        self._thinking["thinking"] += text
        index = self.output["content"].index(self._thinking)
        events.append(
            {"type": "thinking_delta", "contentIndex": index, "delta": text, "partial": self.output}
        )

    def _end_thinking(self, events: list[AssistantMessageEvent]) -> None:
        self._in_thinking = False
        if self._thinking is None:
            return
        index = self.output["content"].index(self._thinking)
        events.append(
            {
                "type": "thinking_end",
                "contentIndex": index,
                "content": self._thinking["thinking"],
                "partial": self.output,
            }
        )
        self._thinking = None

    def _close_text(self, events: list[AssistantMessageEvent]) -> None:
        if self._text is not None:
            index = self.output["content"].index(self._text)
            events.append(
                {
                    "type": "text_end",
                    "contentIndex": index,
                    "content": self._text["text"],
                    "partial": self.output,
                }
            )
            self._text = None

    # -- tool calls ------------------------------------------------------------------------------------

    def _emit_tool_call(self, text: str, events: list[AssistantMessageEvent]) -> bool:
        call = parse_tool_call(text, self.tool_names)
        if call is None:
            return False
        name, arguments = call
        self._close_text(events)
        block: ToolCall = {"type": "toolCall", "id": _call_id(), "name": name, "arguments": {}}
        content = self.output["content"]
        content.append(block)
        index = len(content) - 1
        raw = json.dumps(arguments, ensure_ascii=False)
        events.append({"type": "toolcall_start", "contentIndex": index, "partial": self.output})
        events.append({"type": "toolcall_delta", "contentIndex": index, "delta": raw, "partial": self.output})
        block["arguments"] = arguments
        events.append(
            {"type": "toolcall_end", "contentIndex": index, "toolCall": block, "partial": self.output}
        )
        return True

    def _forced_delta(self, piece: str, events: list[AssistantMessageEvent]) -> None:
        assert self.forced_tool is not None
        if self._call is None:
            self._call = {"type": "toolCall", "id": _call_id(), "name": self.forced_tool, "arguments": {}}
            self.output["content"].append(self._call)
            events.append(
                {
                    "type": "toolcall_start",
                    "contentIndex": len(self.output["content"]) - 1,
                    "partial": self.output,
                }
            )
        if piece:
            self._call_text += piece
            index = self.output["content"].index(self._call)
            events.append(
                {"type": "toolcall_delta", "contentIndex": index, "delta": piece, "partial": self.output}
            )

    def _forced_end(self, events: list[AssistantMessageEvent]) -> None:
        self._forced_delta("", events)
        assert self._call is not None
        try:
            parsed = json.loads(self._call_text)
        except ValueError:
            parsed = None
        self._call["arguments"] = cast("dict[str, Any]", parsed) if isinstance(parsed, dict) else {}
        index = self.output["content"].index(self._call)
        events.append(
            {"type": "toolcall_end", "contentIndex": index, "toolCall": self._call, "partial": self.output}
        )


def parse_tool_call(text: str, tool_names: frozenset[str]) -> tuple[str, dict[str, Any]] | None:
    """``(name, arguments)`` when ``text`` is exactly one call of a known tool, else ``None``."""
    body = text.strip()
    for pattern in (_FENCE, _TAGGED):
        match = pattern.match(body)
        if match:
            body = match.group(1).strip()
    try:
        value = json.loads(body)
    except ValueError:
        return None
    if isinstance(value, list) and len(cast("list[Any]", value)) == 1:
        value = cast("list[Any]", value)[0]
    if not isinstance(value, dict):
        return None
    call = cast("dict[str, Any]", value)
    name = call.get("name")
    arguments = call.get("arguments", call.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(name, str) or name not in tool_names or not isinstance(arguments, dict):
        return None
    return name, cast("dict[str, Any]", arguments)


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


def _call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"
