"""``openai-responses``: the OpenAI Responses API, streamed, with ``store: false``.

Output items become content blocks, tracked by their ``output_index`` (so an item that finishes
after the next one started, as OpenRouter sends them, still closes its own block):

- ``reasoning`` → thinking. Summary parts (``reasoning_summary_text``) or raw reasoning text
  (``reasoning_text``, DeepSeek/OpenRouter/Bedrock) stream as deltas. As in pi-ai, every finished
  summary part streams a ``\\n\\n`` delta and raw reasoning parts stream no separator; the
  final thinking is the item's parts joined by ``\\n\\n`` (so the summary deltas end with one
  ``\\n\\n`` more than it). At ``output_item.done`` the whole item (with ``encrypted_content``)
  becomes the ``thinkingSignature``: that JSON is sent back verbatim as the reasoning item on the
  next turn.
- ``message`` → text (``output_text`` and ``refusal`` deltas). ``textSignature`` records the item
  id and ``phase`` as ``{"v":1,"id":...,"phase":...}`` so the next turn can replay the message item.
- ``function_call`` → toolCall with id ``call_id|item_id``; argument deltas go through
  ``PartialJson``; ``function_call_arguments.done`` overrides what the deltas accumulated.

``response.completed``/``response.incomplete`` carry usage (cached and reasoning tokens; total as
reported) and the status (``incomplete`` → ``length``); the service tier the response reports
scales the cost (flex ×0.5, priority ×2). ``response.failed`` and ``error`` events end the stream
as ``error`` with the provider's message.

One API, one file (the recipe of ``tether.ai.provider``: request builder, stream parser): it runs
past our usual ~600 lines because the Responses event set is that large, and splitting it would
separate each event from the state it updates.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, cast

from tether.ai.api_provider import ApiProvider
from tether.ai.event_stream import AssistantMessageEventStream
from tether.ai.handoff import is_same_model, transform_messages
from tether.ai.jsonish import as_dict, as_index, as_int, as_list, as_str
from tether.ai.message_builder import Part
from tether.ai.partial_json import PartialJson, parse_arguments
from tether.ai.provider import StreamParser, stream_http
from tether.ai.sanitize import strip_surrogates
from tether.ai.simple_options import base_fields
from tether.ai.thinking import clamp_thinking_level, thinking_effort
from tether.ai.transport import HttpRequest, arguments_text
from tether.ai.types import Context, SimpleStreamOptions, StreamOptions
from tether.ai.usage import set_usage
from tether.wire import (
    AssistantMessage,
    AssistantMessageEvent,
    ModelInfo,
    StopReason,
    TextContent,
    ThinkingContent,
    UserContent,
)

API = "openai-responses"
SERVICE_TIER_MULTIPLIERS = {"flex": 0.5, "priority": 2.0}
"""Price factor of the tier a response reports it ran on (``auto``/``default``: 1)."""


@dataclass(slots=True)
class OpenAIResponsesOptions(StreamOptions):
    reasoning_effort: str | None = None
    """Wire effort (``none``, ``minimal`` … ``xhigh``); ``None`` sends no ``reasoning`` field."""
    reasoning_summary: str | None = "auto"
    """``auto``/``concise``/``detailed`` summary of the reasoning, when ``reasoning_effort`` is set."""


# -- request -----------------------------------------------------------------------------------


def build_request(
    model: ModelInfo, context: Context, options: StreamOptions, api_key: str | None
) -> HttpRequest:
    opts = options if isinstance(options, OpenAIResponsesOptions) else OpenAIResponsesOptions()
    body: dict[str, Any] = {
        "model": model["id"],
        "input": convert_input(model, context),
        "stream": True,
        "store": False,
    }
    if options.session_id and options.cache_retention != "none":
        body["prompt_cache_key"] = options.session_id
        if options.cache_retention == "long" and model["provider"] == "openai":
            body["prompt_cache_retention"] = "24h"
    if options.max_tokens:
        body["max_output_tokens"] = options.max_tokens
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.service_tier is not None:
        body["service_tier"] = options.service_tier
    tools = context.get("tools") or []
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "name": tool["name"],
                "description": tool["description"],
                "parameters": tool["parameters"],
                "strict": False,
            }
            for tool in tools
        ]
    if options.tool_choice is not None:
        body["tool_choice"] = options.tool_choice
    if model["reasoning"] and opts.reasoning_effort is not None:
        reasoning: dict[str, Any] = {"effort": opts.reasoning_effort}
        if opts.reasoning_effort != "none":
            if opts.reasoning_summary:
                reasoning["summary"] = opts.reasoning_summary
            # With store: false the encrypted reasoning is the only way to replay it next turn.
            body["include"] = ["reasoning.encrypted_content"]
        body["reasoning"] = reasoning
    body.update(options.extra)
    headers = dict(cast("dict[str, str]", model.get("headers") or {}))
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return HttpRequest(model["baseUrl"].rstrip("/") + "/responses", headers, body)


def instruction_role(model: ModelInfo) -> str:
    """``developer`` for a reasoning model unless its ``compat`` says the server refuses the role
    (the Responses API is OpenAI's own, which takes it), as pi 1.6 decides."""
    compat = model.get("compat") or {}
    return (
        "developer" if model["reasoning"] and compat.get("supportsDeveloperRole") is not False else "system"
    )


def convert_input(model: ModelInfo, context: Context) -> list[dict[str, Any]]:
    """Our transcript as Responses ``input`` items (after the cross-provider handoff)."""
    items: list[dict[str, Any]] = []
    role = instruction_role(model)
    system = context.get("systemPrompt")
    if system:
        items.append({"role": role, "content": strip_surrogates(system)})
    accepts_images = "image" in model["input"]
    for message in transform_messages(context["messages"], model):
        if message["role"] == "user":
            content = message["content"]
            if isinstance(content, str):
                parts = [{"type": "input_text", "text": strip_surrogates(content)}]
            else:
                parts = _input_parts(content)
            if parts:
                items.append({"role": "user", "content": parts})
        elif message["role"] == "assistant":
            items.extend(_assistant_items(message, model))
        else:
            call_id = message["toolCallId"].partition("|")[0]
            text = "\n".join(b["text"] for b in message["content"] if b["type"] == "text" and b["text"])
            has_images = any(b["type"] == "image" for b in message["content"])
            output: str | list[dict[str, Any]] = strip_surrogates(text)
            if has_images and accepts_images:
                output = _input_parts(message["content"])
            elif has_images and not text:
                output = "(see attached image)"
            items.append({"type": "function_call_output", "call_id": call_id, "output": output})
    volatile = context.get("volatileContext")
    if volatile:
        # Last, so it never invalidates the cached prefix of everything before it.
        items.append({"role": role, "content": strip_surrogates(volatile)})
    return items


def _input_parts(content: list[UserContent]) -> list[dict[str, Any]]:
    """Text and image parts (the handoff already replaced images for models without image input)."""
    parts: list[dict[str, Any]] = []
    for block in content:
        if block["type"] == "text":
            parts.append({"type": "input_text", "text": strip_surrogates(block["text"])})
        else:
            url = f"data:{block['mimeType']};base64,{block['data']}"
            parts.append({"type": "input_image", "detail": block.get("detail", "auto"), "image_url": url})
    return parts


def _assistant_items(message: AssistantMessage, model: ModelInfo) -> list[dict[str, Any]]:
    same = is_same_model(message, model)
    items: list[dict[str, Any]] = []
    for block in message["content"]:
        if block["type"] == "thinking":
            item = _reasoning_item(block)
            if item is not None:
                items.append(item)
        elif block["type"] == "text":
            items.append(_message_item(block))
        elif block["type"] == "toolCall":
            call_id, _, item_id = block["id"].partition("|")
            call: dict[str, Any] = {
                "type": "function_call",
                "call_id": call_id,
                "name": block["name"],
                "arguments": arguments_text(block["arguments"]),
            }
            # Only the model that made the call knows its item id (and pairs it with its reasoning).
            if same and item_id.startswith("fc"):
                call["id"] = item_id
            items.append(call)
    return items


def _reasoning_item(block: ThinkingContent) -> dict[str, Any] | None:
    """The stored reasoning item, verbatim; unsigned thinking cannot be replayed as reasoning."""
    signature = block.get("thinkingSignature")
    if not signature:
        return None
    try:
        item = as_dict(json.loads(signature))
    except ValueError:
        return None
    return item if item is not None and item.get("type") == "reasoning" else None


def _message_item(block: TextContent) -> dict[str, Any]:
    text = strip_surrogates(block["text"])
    message_id, phase = _parse_text_signature(block.get("textSignature"))
    if message_id is None:
        return {"role": "assistant", "content": text}
    if len(message_id) > 64:  # the API's limit on item ids
        message_id = "msg_" + hashlib.blake2b(message_id.encode(), digest_size=16).hexdigest()
    item: dict[str, Any] = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
        "status": "completed",
        "id": message_id,
    }
    if phase:
        item["phase"] = phase
    return item


def encode_text_signature(item_id: str, phase: str | None) -> str:
    payload: dict[str, Any] = {"v": 1, "id": item_id}
    if phase:
        payload["phase"] = phase
    return json.dumps(payload, separators=(",", ":"))


def _parse_text_signature(signature: str | None) -> tuple[str | None, str | None]:
    """(message item id, phase) from a ``textSignature``; a bare string is a legacy plain id."""
    if not signature:
        return None, None
    if signature.startswith("{"):
        try:
            payload = as_dict(json.loads(signature))
        except ValueError:
            return None, None
        if payload is not None and payload.get("v") == 1 and isinstance(payload.get("id"), str):
            data = payload
            phase = data.get("phase")
            return data["id"], phase if phase in ("commentary", "final_answer") else None
        return None, None
    return signature, None


# -- response ----------------------------------------------------------------------------------

_STATUS: dict[str, StopReason] = {
    "completed": "stop",
    "incomplete": "length",
    "failed": "error",
    "cancelled": "error",
    "in_progress": "stop",
    "queued": "stop",
}


class OpenAIResponsesParser(StreamParser):
    """Responses stream events → the message builder; items are keyed by ``output_index``."""

    def __init__(self, model: ModelInfo, output: AssistantMessage) -> None:
        super().__init__(model, output)
        self.last: Part | None = None
        """The item opened last: events without an ``output_index`` extend it."""
        self.summary_parts: dict[int, int] = {}
        """Reasoning summary parts started so far, by content position (a part's end streams a
        separator)."""
        self.finished = False

    def feed(self, event: str, data: Any) -> list[AssistantMessageEvent]:
        payload = as_dict(data)
        if payload is None:
            return []
        if payload.get("error"):
            # The OpenAI SDK pi-ai reads through raises on any event whose data has a truthy
            # ``error``, before the event's type is looked at.
            return self.fail(_api_error_text(payload["error"]))
        kind = payload.get("type")
        if not kind or not isinstance(kind, str):
            kind = event
        block_type = _DELTAS.get(kind)
        if block_type is not None:
            return self._delta(block_type, payload)
        if kind == "response.output_item.added":
            return self._added(payload)
        if kind == "response.output_item.done":
            return self._done(payload)
        if kind == "response.reasoning_summary_part.added":
            return self._summary_part(payload, done=False)
        if kind == "response.reasoning_summary_part.done":
            return self._summary_part(payload, done=True)
        if kind == "response.function_call_arguments.done":
            return self._arguments_done(payload)
        if kind in ("response.created", "response.in_progress"):
            self._response_meta(as_dict(payload.get("response")) or {}, created=kind == "response.created")
        elif kind in ("response.completed", "response.incomplete"):
            self._completed(as_dict(payload.get("response")) or {})
        elif kind == "response.failed":
            response = as_dict(payload.get("response")) or {}
            self._response_meta(response)
            self._usage(response)
            return self.fail(_failure_text(response))
        elif kind == "error" or event == "error":
            return self.fail(_error_text(payload))
        return []

    def end(self) -> list[AssistantMessageEvent]:
        if not self.finished:
            return self.fail("The stream ended before the response was complete")
        events = self.parts.end_all()
        reason = self.output["stopReason"]
        if reason == "error" or reason == "aborted":
            return [*events, *self.fail(self.output.get("errorMessage") or "The response failed")]
        events.append({"type": "done", "reason": reason, "message": self.output})
        return events

    # -- items ----------------------------------------------------------------------------------

    def _item(self, payload: dict[str, Any]) -> Part | None:
        index = payload.get("output_index")
        return self.parts.open.get(index) if isinstance(index, int) else self.last

    def _added(self, payload: dict[str, Any]) -> list[AssistantMessageEvent]:
        item = as_dict(payload.get("item")) or {}
        block = _new_block(item)
        if block is None:
            return []  # web search, file search, ...: not content we represent
        arguments = (as_str(item.get("arguments")) or "") if block["type"] == "toolCall" else ""
        # Without an output_index (never seen in practice) the item gets a key no real index has.
        index = as_index(payload.get("output_index"))
        key = index if index is not None else -len(self.parts.content) - 1
        events = self.parts.start(key, block, arguments)
        self.last = self.parts.open[key]
        return events

    def _summary_part(self, payload: dict[str, Any], *, done: bool) -> list[AssistantMessageEvent]:
        """Count summary parts; a finished one streams the ``\n\n`` that pi-ai streams."""
        part = self._item(payload)
        if part is None or part.block["type"] != "thinking":
            return []
        started = self.summary_parts.get(part.position, 0)
        if not done:
            self.summary_parts[part.position] = started + 1
            return []
        return self.parts.delta(part, "\n\n") if started else []

    def _delta(self, block_type: str, payload: dict[str, Any]) -> list[AssistantMessageEvent]:
        part = self._item(payload)
        delta = payload.get("delta")
        if part is None or not delta or not isinstance(delta, str) or part.block["type"] != block_type:
            return []
        return self.parts.delta(part, delta)

    def _arguments_done(self, payload: dict[str, Any]) -> list[AssistantMessageEvent]:
        part = self._item(payload)
        final = as_str(payload.get("arguments"))
        if part is None or part.block["type"] != "toolCall" or final is None:
            return []
        previous = part.args.text
        part.args = PartialJson(final)
        part.block["arguments"] = part.args.value
        if final.startswith(previous) and len(final) > len(previous):
            return self.parts.delta_event(part, final[len(previous) :])
        return []

    def _done(self, payload: dict[str, Any]) -> list[AssistantMessageEvent]:
        item = as_dict(payload.get("item")) or {}
        part = self._item(payload)
        if part is not None:
            return self._close(part, item)
        if _new_block(item) is None:
            return []
        # An item that was never announced: open it now so it still has a start and an end.
        events = self._added(payload)
        part = self._item(payload)
        return [*events, *self._close(part, item)] if part is not None else events

    def _close(self, part: Part, item: dict[str, Any]) -> list[AssistantMessageEvent]:
        """Finish a block with the final output item the stream sent for it."""
        block = part.block
        if self.last is part:
            self.last = None
        if block["type"] == "thinking":
            text = _joined(item.get("summary"), "\n\n") or _joined(item.get("content"), "\n\n")
            if text:
                block["thinking"] = text
            block["thinkingSignature"] = json.dumps(item, separators=(",", ":"), ensure_ascii=False)
        elif block["type"] == "text":
            parts = [as_dict(p) or {} for p in as_list(item.get("content"))]
            if parts:
                block["text"] = "".join(
                    as_str(p.get("text")) or as_str(p.get("refusal")) or "" for p in parts
                )
            item_id = as_str(item.get("id"))
            if item_id:
                block["textSignature"] = encode_text_signature(item_id, as_str(item.get("phase")))
        elif not part.args.text:
            block["arguments"] = parse_arguments(as_str(item.get("arguments")) or "")
        return self.parts.end(part)

    # -- response -------------------------------------------------------------------------------

    def _response_meta(self, response: dict[str, Any], *, created: bool = False) -> None:
        """Response id and reported model. ``response.created`` sets the id even when it is empty
        (the reference keeps ""); later events only replace it with a non-empty one."""
        response_id = as_str(response.get("id"))
        if response_id or (created and response_id is not None):
            self.output["responseId"] = response_id
        reported = as_str(response.get("model"))
        if reported and reported != self.model["id"]:
            cast("dict[str, Any]", self.output)["responseModel"] = reported

    def _completed(self, response: dict[str, Any]) -> None:
        self.finished = True
        self._response_meta(response)
        self._usage(response)
        status = as_str(response.get("status")) or "completed"
        reason = _STATUS.get(status, "stop")
        if reason == "stop" and any(b["type"] == "toolCall" for b in self.parts.content):
            reason = "toolUse"
        self.output["stopReason"] = reason
        if reason == "error":
            self.output["errorMessage"] = _failure_text(response)

    def _usage(self, response: dict[str, Any]) -> None:
        usage = as_dict(response.get("usage"))
        if usage is None:
            return
        cached = as_int((as_dict(usage.get("input_tokens_details")) or {}).get("cached_tokens"))
        reasoning = as_int((as_dict(usage.get("output_tokens_details")) or {}).get("reasoning_tokens"))
        target = self.output["usage"]
        set_usage(
            self.model,
            target,
            input=max(0, as_int(usage.get("input_tokens")) - cached),
            output=as_int(usage.get("output_tokens")),
            cache_read=cached,
            total=as_int(usage.get("total_tokens")),
            reasoning=reasoning,
        )
        multiplier = SERVICE_TIER_MULTIPLIERS.get(as_str(response.get("service_tier")) or "", 1.0)
        if multiplier != 1.0:
            cost = target["cost"]
            for key in ("input", "output", "cacheRead", "cacheWrite"):
                cost[key] *= multiplier
            cost["total"] = cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]


_DELTAS: dict[str, str] = {
    "response.output_text.delta": "text",
    "response.refusal.delta": "text",
    "response.reasoning_summary_text.delta": "thinking",
    "response.reasoning_text.delta": "thinking",
    "response.function_call_arguments.delta": "toolCall",
}
"""Delta event → the block type it extends."""


def _new_block(item: dict[str, Any]) -> dict[str, Any] | None:
    """The block an output item streams into; ``None`` for items we do not represent."""
    kind = item.get("type")
    if kind == "reasoning":
        return {"type": "thinking", "thinking": ""}
    if kind == "message":
        return {"type": "text", "text": ""}
    if kind == "function_call":
        call_id = as_str(item.get("call_id")) or ""
        item_id = as_str(item.get("id")) or ""
        block: dict[str, Any] = {
            "type": "toolCall",
            "id": f"{call_id}|{item_id}",
            "name": as_str(item.get("name")) or "",
            "arguments": {},
        }
        return block
    return None


def _joined(parts: object, separator: str) -> str:
    return separator.join(as_str((as_dict(p) or {}).get("text")) or "" for p in as_list(parts))


def _failure_text(response: dict[str, Any]) -> str:
    error = as_dict(response.get("error"))
    if error is not None:
        code = as_str(error.get("code")) or "unknown"
        return f"{code}: {as_str(error.get('message')) or 'no message'}"
    details = as_dict(response.get("incomplete_details"))
    reason = as_str((details or {}).get("reason"))
    if reason:
        return f"incomplete: {reason}"
    return "The response failed without error details"


def _error_text(payload: dict[str, Any]) -> str:
    """An ``error`` event's text as pi-ai words it: ``Error Code <code>: <message>``.

    Without a code pi-ai writes ``Error Code undefined: ...``; we give the message alone.
    """
    message = as_str(payload.get("message")) or json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    code = payload.get("code")
    return f"Error Code {code}: {message}" if isinstance(code, str | int) and code != "" else message


def _api_error_text(error: object) -> str:
    """The SDK's error text for a payload's ``error``: its message, else the JSON of it."""
    message = (as_dict(error) or {}).get("message")
    if isinstance(message, str) and message:
        return message
    return json.dumps(message or error, separators=(",", ":"), ensure_ascii=False)


# -- entry points ------------------------------------------------------------------------------


def stream_openai_responses(
    model: ModelInfo, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    opts = options or OpenAIResponsesOptions()
    return stream_http(
        model, opts, lambda key: build_request(model, context, opts, key), OpenAIResponsesParser
    )


def responses_options(model: ModelInfo, options: SimpleStreamOptions | None) -> OpenAIResponsesOptions:
    """The provider options ``stream_simple`` uses: the level clamped to the model, as its effort.

    ``off`` (or no level) on a model that can stop reasoning sends effort ``none``; on one that
    cannot, the clamp picks its lowest effort. ``clamp_thinking_level`` gives the same answer.
    """
    effort: str | None = None
    if model["reasoning"]:
        level = clamp_thinking_level(model, options.reasoning if options and options.reasoning else "off")
        effort = "none" if level == "off" else thinking_effort(model, level)
    return OpenAIResponsesOptions(**base_fields(model, options), reasoning_effort=effort)


def stream_simple_openai_responses(
    model: ModelInfo, context: Context, options: SimpleStreamOptions | None = None
) -> AssistantMessageEventStream:
    return stream_openai_responses(model, context, responses_options(model, options))


PROVIDER = ApiProvider(API, stream_openai_responses, stream_simple_openai_responses, max_tools=128)
"""``max_tools``: as Chat Completions, 128 (the same 400 ``array_above_max_length`` past it)."""
