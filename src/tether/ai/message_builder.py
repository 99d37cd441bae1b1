"""The partial assistant message a provider's stream builds, and the events each change causes.

Every API streams the same three kinds of content part (text, thinking, a tool call): opened,
grown by deltas, closed. Only the wire names differ. So a parser is a mapping from its API's
events to the calls of this builder (in the spirit of pydantic-ai's ``_parts_manager``): the
builder appends the block to ``output["content"]``, keeps each open part under the provider's
own key (an Anthropic block index, a Responses ``output_index``, ...), grows its text in place
(as ``append.append_text`` does) or its arguments (``partial_json.PartialJson``), and returns the stream
events the change causes. Positions, ``partial``, the ``*_start``/``*_delta``/``*_end``
vocabulary and the amortized appends are written here once.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, cast

from tether.ai.partial_json import PartialJson
from tether.wire import AssistantMessage, AssistantMessageEvent

_START = {"text": "text_start", "thinking": "thinking_start", "toolCall": "toolcall_start"}
_DELTA = {"text": "text_delta", "thinking": "thinking_delta", "toolCall": "toolcall_delta"}


class Part:
    """One content block being streamed: the block, where it sits, and its argument text."""

    __slots__ = ("args", "block", "key", "position")

    def __init__(self, block: dict[str, Any], position: int, key: Hashable, arguments: str) -> None:
        self.block = block
        self.position = position
        self.key = key
        self.args = PartialJson(arguments)
        """A tool call's streamed argument text (unused for text and thinking)."""


class MessageBuilder:
    """Owns the open parts of ``output``; each method returns the events its change causes."""

    __slots__ = ("content", "open", "output")

    def __init__(self, output: AssistantMessage) -> None:
        self.output = output
        self.content: list[Any] = cast("list[Any]", output["content"])
        self.open: dict[Hashable, Part] = {}
        """The parts not closed yet, by the provider's key."""

    def start(self, key: Hashable, block: dict[str, Any], arguments: str = "") -> list[AssistantMessageEvent]:
        """Open ``block`` (a text, thinking or tool-call block) under ``key``; a tool call's
        ``arguments`` text, when the start carries some, is parsed into its ``arguments``."""
        position = len(self.content)
        part = Part(block, position, key, arguments)
        if arguments:
            block["arguments"] = part.args.value
        self.content.append(block)
        self.open[key] = part
        return [
            cast(
                AssistantMessageEvent,
                {"type": _START[block["type"]], "contentIndex": position, "partial": self.output},
            )
        ]

    def delta(self, part: Part, text: str) -> list[AssistantMessageEvent]:
        """Grow ``part`` by ``text``: a text or thinking block's text, a tool call's arguments.

        The per-token path of every provider: the append is ``append.append_text`` written out
        and the event is built without ``cast`` (a call at run time), one call instead of four.
        """
        block = part.block
        kind = block["type"]
        if kind == "toolCall":
            if text:
                block["arguments"] = part.args.add(text)
        else:
            whole: str = block[kind]
            block[kind] = ""  # the dict lets go of the string, so += resizes it in place
            whole += text
            block[kind] = whole
        event: Any = {
            "type": _DELTA[kind],
            "contentIndex": part.position,
            "delta": text,
            "partial": self.output,
        }
        return [event]

    def delta_event(self, part: Part, text: str) -> list[AssistantMessageEvent]:
        """The delta event alone, for a change the provider made to the block itself."""
        event: Any = {
            "type": _DELTA[part.block["type"]],
            "contentIndex": part.position,
            "delta": text,
            "partial": self.output,
        }
        return [event]

    def end(self, part: Part) -> list[AssistantMessageEvent]:
        """Close ``part``: a tool call's arguments parsed whole, then its ``*_end`` event."""
        self.open.pop(part.key, None)
        block = part.block
        kind = block["type"]
        if kind == "toolCall":
            if part.args.text:
                block["arguments"] = part.args.finish()
            event: dict[str, Any] = {"type": "toolcall_end", "contentIndex": part.position, "toolCall": block}
        else:
            event = {"type": f"{kind}_end", "contentIndex": part.position, "content": block[kind]}
        event["partial"] = self.output
        return [cast(AssistantMessageEvent, event)]

    def end_all(self) -> list[AssistantMessageEvent]:
        """Close every open part, in content order (the body ended with parts still open)."""
        events: list[AssistantMessageEvent] = []
        for part in sorted(self.open.values(), key=lambda p: p.position):
            events += self.end(part)
        return events
