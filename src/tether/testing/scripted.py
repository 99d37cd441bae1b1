"""A scripted model: a stream function that plays back prepared responses, for tests and demos.

``ScriptedModel`` is a ``StreamFn``. Each call records the request (``requests``) and streams the
next scripted response as a real provider would, through ``AssistantMessageEventStream``:
``start``, then per block ``*_start``/``*_delta``.../``*_end``, then ``done`` (or ``error``).
It yields to the event loop before each block, each delta and the terminal event, and checks the
abort signal there, so an abort raised by a listener is seen at the next step and ends the
stream as ``aborted`` with the content so far. This is the model the conformance scenarios
describe (``reference/conformance/README.md``, "The scripted model").

    model = ScriptedModel([
        reply(tool_call("echo", {"text": "hi"})),
        reply("done"),
    ])
    await run_agent_loop(prompts, context, AgentLoopConfig(model=model.model), emit, stream_fn=model)
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Generator, Iterable, Mapping
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Any, ClassVar, TypeVar, cast, get_args

import jiter

from tether.agent.validation import js_number_text
from tether.ai.abort import AbortSignal
from tether.ai.event_stream import (
    ABORTED_MESSAGE,
    WAIT,
    AssistantMessageEventStream,
    fail,
    new_assistant_message,
)
from tether.ai.types import Context, SimpleStreamOptions
from tether.wire import (
    AssistantMessage,
    AssistantMessageEvent,
    ModelInfo,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
)
from tether.wire.json_line import replace_lone_surrogates

T = TypeVar("T")

NO_RESPONSE_LEFT = "No scripted response left"

SCRIPTED_MODEL: ModelInfo = {
    "id": "scripted",
    "name": "scripted",
    "api": "scripted",
    "provider": "scripted",
    "baseUrl": "",
    "reasoning": False,
    "input": ["text"],
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    "contextWindow": 100000,
    "maxTokens": 1000,
}


@dataclass(frozen=True, slots=True)
class TextBlock:
    chunks: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ThinkingBlock:
    chunks: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ToolCallBlock:
    name: str
    arguments: Mapping[str, Any]
    id: str | None = None
    """``None``: the model makes one up (``call_<n>``, counting from 1 per model)."""


ScriptedBlock = TextBlock | ThinkingBlock | ToolCallBlock


@dataclass(frozen=True, slots=True)
class ScriptedResponse:
    """One model response: its blocks, then ``done`` with ``stop_reason`` or ``error`` with ``error``."""

    content: tuple[ScriptedBlock, ...] = ()
    stop_reason: StopReason | None = None
    """Default: ``toolUse`` when a tool call is present, else ``stop``."""
    error: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScriptedResponse:
        """A response in the conformance scenario format (``content``, ``stopReason``, ``error``).

        Every value is type-checked here, where the script enters, so the messages the model
        plays are valid by construction (a session stores them unchecked: ``ScriptedModel.builtin``).
        """
        blocks: list[ScriptedBlock] = []
        content: object = data.get("content", [])
        for raw in cast(list[object], _checked(content, list, "content")):
            block = cast(dict[str, Any], _checked(raw, dict, "content block"))
            kind = block.get("type")
            if kind == "toolCall":
                call_id = block.get("id")
                blocks.append(
                    ToolCallBlock(
                        _checked(block.get("name"), str, "toolCall name"),
                        cast(
                            dict[str, Any], _checked(block.get("arguments", {}), dict, "toolCall arguments")
                        ),
                        None if call_id is None else _checked(call_id, str, "toolCall id"),
                    )
                )
            elif kind in ("text", "thinking"):
                chunks: object = block.get("chunks", [block.get(kind, "")])
                checked = cast(list[object], _checked(chunks, list, f"{kind} chunks"))
                typed = tuple(_checked(c, str, f"{kind} chunk") for c in checked)
                blocks.append(TextBlock(typed) if kind == "text" else ThinkingBlock(typed))
            else:
                raise ValueError(f"unknown scripted block type {kind!r}")
        stop_reason, error = data.get("stopReason"), data.get("error")
        if stop_reason is not None and stop_reason not in get_args(StopReason):
            raise ValueError(f"unknown stopReason {stop_reason!r}")
        return cls(tuple(blocks), stop_reason, None if error is None else _checked(error, str, "error"))


def _checked(value: object, kind: type[T], what: str) -> T:
    if not isinstance(value, kind):
        raise ValueError(f"{what} must be a {kind.__name__}, not {type(value).__name__}")
    return value


def text(*chunks: str) -> TextBlock:
    """A text block streamed as these deltas."""
    return TextBlock(chunks)


def thinking(*chunks: str) -> ThinkingBlock:
    """A thinking block streamed as these deltas."""
    return ThinkingBlock(chunks)


def tool_call(
    name: str, arguments: Mapping[str, Any] | None = None, *, id: str | None = None
) -> ToolCallBlock:
    """A tool call; its arguments arrive in one ``toolcall_delta``."""
    return ToolCallBlock(name, arguments or {}, id)


def reply(
    *blocks: ScriptedBlock | str, stop_reason: StopReason | None = None, error: str | None = None
) -> ScriptedResponse:
    """A response of these blocks; a plain string is a text block with one chunk."""
    content = tuple(TextBlock((b,)) if isinstance(b, str) else b for b in blocks)
    return ScriptedResponse(content, stop_reason, error)


@dataclass(slots=True)
class ScriptedRequest:
    """What one model call received."""

    model: ModelInfo
    context: Context
    options: SimpleStreamOptions | None


class ScriptedModel:
    """A ``StreamFn`` that answers each call with the next scripted response.

    ``model`` is the ``ModelInfo`` to configure the loop with; ``requests`` records every call,
    unless ``keep_requests`` is false: each record holds a copy of the transcript sent, so a run
    of ``n`` calls keeps O(n²) messages' worth of lists alive (6% of the P2 benchmark's CPU time,
    whose floor and reference models keep nothing).
    """

    builtin: ClassVar[bool] = True
    """tether's own stream function: its replies are built from typed blocks, so a session
    stores them without checking them again (``AgentSession._checked``)."""

    def __init__(
        self,
        responses: Iterable[ScriptedResponse] = (),
        model: ModelInfo | None = None,
        *,
        keep_requests: bool = True,
    ) -> None:
        self.responses: deque[ScriptedResponse] = deque(responses)
        self.model: ModelInfo = model if model is not None else SCRIPTED_MODEL.copy()
        self.keep_requests = keep_requests
        self.requests: list[ScriptedRequest] = []
        self._call_ids = 0

    def push(self, *responses: ScriptedResponse) -> None:
        """Script more responses (after those already queued)."""
        self.responses.extend(responses)

    def __call__(
        self, model: ModelInfo, context: Context, options: SimpleStreamOptions | None = None
    ) -> AssistantMessageEventStream:
        if self.keep_requests:
            request_context = cast(Context, dict(context))
            request_context["messages"] = list(context["messages"])
            self.requests.append(ScriptedRequest(model, request_context, options))
        script = self.responses.popleft() if self.responses else None
        signal = options.signal if options is not None else None
        message = new_assistant_message(model)
        return AssistantMessageEventStream.of_steps(
            model, self._play(message, script, signal), signal, message=message
        )

    def _play(
        self, message: AssistantMessage, script: ScriptedResponse | None, signal: AbortSignal | None
    ) -> Generator[AssistantMessageEvent | None]:
        """The events of one response, building ``message``, and a ``TICK`` (``WAIT``) where the
        stream passes once through the event loop (a steps source that builds its message:
        ``AssistantMessageEventStream.of_steps``): it ends by returning, the message final. Each
        tick is a point where another task (or a listener that just ran) may have aborted; the
        signal is checked right after."""
        content = message["content"]
        has_call = False
        yield TICK
        if script is None:
            fail(message, NO_RESPONSE_LEFT)
            return
        if signal is not None and signal.aborted:
            fail(message, ABORTED_MESSAGE, aborted=True)
            return
        yield {"type": "start", "partial": message}
        for index, block in enumerate(script.content):
            yield TICK
            if signal is not None and signal.aborted:
                fail(message, ABORTED_MESSAGE, aborted=True)
                return
            if isinstance(block, ToolCallBlock):
                has_call = True
                self._call_ids += 1
                call: ToolCall = {
                    "type": "toolCall",
                    "id": block.id if block.id is not None else f"call_{self._call_ids}",
                    "name": block.name,
                    "arguments": {},
                }
                content.append(call)
                yield {"type": "toolcall_start", "contentIndex": index, "partial": message}
                yield TICK
                if signal is not None and signal.aborted:
                    fail(message, ABORTED_MESSAGE, aborted=True)
                    return
                # A lone surrogate (no UTF-8 form) is sent as U+FFFD, as a provider's arguments
                # are parsed (``tether.ai.partial_json``): ``encode`` raised on it.
                delta = replace_lone_surrogates(canonical_json(block.arguments))
                call["arguments"] = jiter.from_json(
                    delta.encode()
                )  # what the model "sent", never the script's dict
                # Delta and end come together: no tick between them.
                yield {"type": "toolcall_delta", "contentIndex": index, "delta": delta, "partial": message}
                yield {
                    "type": "toolcall_end",
                    "contentIndex": index,
                    "toolCall": call.copy(),
                    "partial": message,
                }
            elif isinstance(block, TextBlock):
                text_part: TextContent = {"type": "text", "text": ""}
                content.append(text_part)
                yield {"type": "text_start", "contentIndex": index, "partial": message}
                for chunk in block.chunks:
                    yield TICK
                    if signal is not None and signal.aborted:
                        fail(message, ABORTED_MESSAGE, aborted=True)
                        return
                    text_part["text"] += chunk
                    yield {"type": "text_delta", "contentIndex": index, "delta": chunk, "partial": message}
                yield {
                    "type": "text_end",
                    "contentIndex": index,
                    "content": text_part["text"],
                    "partial": message,
                }
            else:
                thinking_part: ThinkingContent = {"type": "thinking", "thinking": ""}
                content.append(thinking_part)
                yield {"type": "thinking_start", "contentIndex": index, "partial": message}
                for chunk in block.chunks:
                    yield TICK
                    if signal is not None and signal.aborted:
                        fail(message, ABORTED_MESSAGE, aborted=True)
                        return
                    thinking_part["thinking"] += chunk
                    yield {
                        "type": "thinking_delta",
                        "contentIndex": index,
                        "delta": chunk,
                        "partial": message,
                    }
                yield {
                    "type": "thinking_end",
                    "contentIndex": index,
                    "content": thinking_part["thinking"],
                    "partial": message,
                }
        yield TICK
        if signal is not None and signal.aborted:
            fail(message, ABORTED_MESSAGE, aborted=True)
            return
        if script.error is not None:
            fail(message, script.error)
            return
        # A scripted "error"/"aborted" stop reason is played as the reference's scripted model
        # does: a plain ``done`` with that reason and no error text (a misbehaving provider).
        message["stopReason"] = script.stop_reason or ("toolUse" if has_call else "stop")


TICK = WAIT
"""What ``ScriptedModel._play`` yields where the stream passes once through the event loop."""


def canonical_json(value: object) -> str:
    """Keys sorted, no whitespace, numbers as JavaScript prints them (``2.0`` is ``2``, ``1e-7``
    not ``1e-07``): the conformance format for echoed arguments and tool-call deltas."""
    if isinstance(value, str):  # the most common value first: one check instead of five
        return encode_basestring(value)
    if isinstance(value, dict):
        node: dict[str, object] = value  # pyright: ignore[reportUnknownVariableType] (no cast: a call)
        parts: list[str] = []
        for key in sorted(node):  # a loop, not a generator: no frame per member
            parts.append(f"{encode_basestring(key)}:{canonical_json(node[key])}")
        return "{" + ",".join(parts) + "}"
    if isinstance(value, list):
        return "[" + ",".join(canonical_json(item) for item in cast(list[object], value)) + "]"
    if isinstance(value, bool) or value is None:
        return "true" if value is True else "false" if value is False else "null"
    if isinstance(value, int | float):
        return js_number_text(value) if math.isfinite(value) else "null"
    return _string(value)


def _string(value: object) -> str:
    # ``json.dumps(value, ensure_ascii=False)`` builds a new encoder on every call (its options
    # are not the defaults); the escaping function alone is the same text at a tenth of the cost.
    return encode_basestring(value) if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
