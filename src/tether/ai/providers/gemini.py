"""``google-generative-ai``: Gemini's ``streamGenerateContent?alt=sse`` (Gemini API and Vertex AI).

Each SSE event is a whole ``GenerateContentResponse`` chunk. Parts of the first candidate become
blocks: a part with a ``text`` key (even ``""``) opens or extends a text block, or a thinking
block when it says ``thought: true``; a ``functionCall`` part is a complete tool call (Gemini
sends whole arguments), emitted as start/delta/end at once, with a generated id when Gemini gave
none. Other parts (``executableCode``, ``codeExecutionResult``, ...) are skipped.

``thoughtSignature`` stays on the block whose part carried it (text, thinking or tool call); a
text or thinking block made of several parts keeps the last non-empty signature, as pi-ai does
(consecutive parts of one kind are one block there, signed or not). For Gemini 3, a model turn
with tool calls but no signature (written by another model) gets Google's documented placeholder
signature, without which Gemini 3 rejects the history.

``finishReason``: toolUse whenever the answer has tool calls; otherwise ``STOP`` → stop,
``MAX_TOKENS`` → length, anything else (``SAFETY``, ``RECITATION``, ``MALFORMED_FUNCTION_CALL``,
...) → error naming the reason. Usage comes from the last ``usageMetadata``, counted as pi-ai
does: input = prompt − cached, output = candidates + thoughts, total as reported (so it also
holds ``toolUsePromptTokenCount``, which input leaves out).
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import quote

from tether.ai.api_provider import ApiProvider
from tether.ai.event_stream import AssistantMessageEventStream
from tether.ai.handoff import is_same_model, transform_messages
from tether.ai.jsonish import as_dict, as_int, as_list, as_str
from tether.ai.message_builder import Part
from tether.ai.provider import StreamParser, stream_http
from tether.ai.providers.gemini_schema import gemini_schema
from tether.ai.sanitize import strip_surrogates
from tether.ai.simple_options import base_fields
from tether.ai.thinking import clamp_thinking_level, thinking_budget, thinking_config, thinking_effort
from tether.ai.transport import HttpRequest
from tether.ai.types import Context, SimpleStreamOptions, StreamOptions
from tether.ai.usage import calculate_cost
from tether.wire import AssistantMessage, AssistantMessageEvent, ModelInfo, ToolResultMessage

API = "google-generative-ai"
SKIP_SIGNATURE = "skip_thought_signature_validator"
"""Google's placeholder ``thoughtSignature`` for tool calls Gemini 3 did not make itself."""
TOOL_CHOICES = {"auto": "AUTO", "none": "NONE", "any": "ANY", "required": "ANY"}


@dataclass(slots=True)
class GeminiOptions(StreamOptions):
    thinking_level: str | None = None
    """Gemini 3 ``thinkingLevel`` (``MINIMAL``/``LOW``/``MEDIUM``/``HIGH``)."""
    thinking_budget: int | None = None
    """Gemini 2.5 ``thinkingBudget`` in tokens (``0`` turns thinking off where allowed)."""
    include_thoughts: bool = False
    """Stream thought summaries as thinking blocks."""


# -- request -----------------------------------------------------------------------------------


def build_request(
    model: ModelInfo, context: Context, options: StreamOptions, api_key: str | None
) -> HttpRequest:
    opts = options if isinstance(options, GeminiOptions) else GeminiOptions()
    body: dict[str, Any] = {"contents": convert_contents(model, context)}
    system = context.get("systemPrompt")
    if system:
        body["systemInstruction"] = {"parts": [{"text": strip_surrogates(system)}]}
    generation: dict[str, Any] = {}
    if options.temperature is not None:
        generation["temperature"] = options.temperature
    if options.max_tokens:
        generation["maxOutputTokens"] = options.max_tokens
    if model["reasoning"] and (opts.thinking_level is not None or opts.thinking_budget is not None):
        thinking: dict[str, Any] = {}
        if opts.include_thoughts:
            thinking["includeThoughts"] = True
        if opts.thinking_level is not None:
            thinking["thinkingLevel"] = opts.thinking_level
        else:
            thinking["thinkingBudget"] = opts.thinking_budget
        generation["thinkingConfig"] = thinking
    if generation:
        body["generationConfig"] = generation
    tools = context.get("tools") or []
    if tools:
        declarations: list[dict[str, Any]] = []
        for tool in tools:
            declaration: dict[str, Any] = {"name": tool["name"], "description": tool["description"]}
            parameters = gemini_schema(tool["parameters"])
            if parameters is not None:
                declaration["parameters"] = parameters
            declarations.append(declaration)
        body["tools"] = [{"functionDeclarations": declarations}]
        choice = options.tool_choice
        if isinstance(choice, str) and choice in TOOL_CHOICES:
            body["toolConfig"] = {"functionCallingConfig": {"mode": TOOL_CHOICES[choice]}}
        elif isinstance(choice, dict):
            body["toolConfig"] = choice
    body.update(options.extra)
    headers = dict(cast("dict[str, str]", model.get("headers") or {}))
    if api_key:
        headers["x-goog-api-key"] = api_key
    url = f"{model['baseUrl'].rstrip('/')}/models/{quote(model['id'], safe='')}:streamGenerateContent?alt=sse"
    return HttpRequest(url, headers, body)


def gemini_major_version(model_id: str) -> int | None:
    found = re.match(r"(?:.*/)?gemini(?:-live)?-(\d+)", model_id.lower())
    return int(found.group(1)) if found else None


def requires_tool_call_ids(model: ModelInfo) -> bool:
    """Claude and gpt-oss behind Google's API match results by id; Gemini itself by order."""
    return model["id"].startswith(("claude-", "gpt-oss-"))


def convert_contents(model: ModelInfo, context: Context) -> list[dict[str, Any]]:
    """Our transcript as Gemini ``contents`` (after the cross-provider handoff)."""
    contents: list[dict[str, Any]] = []
    messages = transform_messages(context["messages"], model)
    i = 0
    while i < len(messages):
        message = messages[i]
        if message["role"] == "user":
            content = message["content"]
            if isinstance(content, str):
                parts: list[dict[str, Any]] = [{"text": strip_surrogates(content)}]
            else:
                parts = [_user_part(block) for block in content]
            if parts:
                contents.append({"role": "user", "parts": parts})
        elif message["role"] == "assistant":
            parts = _model_parts(message, model)
            if parts:
                contents.append({"role": "model", "parts": parts})
        else:
            results: list[ToolResultMessage] = []
            while i < len(messages) and (result := messages[i])["role"] == "toolResult":
                results.append(result)
                i += 1
            i -= 1
            contents.extend(_function_responses(results, model))
        i += 1
    volatile = context.get("volatileContext")
    if volatile:
        # Last, so it never invalidates the cached prefix of everything before it.
        contents.append({"role": "user", "parts": [{"text": strip_surrogates(volatile)}]})
    return contents


def _user_part(block: Any) -> dict[str, Any]:
    """A text or inline image part (the handoff already replaced images the model cannot take)."""
    if block["type"] == "text":
        return {"text": strip_surrogates(block["text"])}
    return {"inlineData": {"mimeType": block["mimeType"], "data": block["data"]}}


def _model_parts(message: AssistantMessage, model: ModelInfo) -> list[dict[str, Any]]:
    same = is_same_model(message, model)
    parts: list[dict[str, Any]] = []
    for block in message["content"]:
        if block["type"] == "text":
            signature = block.get("textSignature") if same else None
            if not block["text"].strip() and not signature:
                continue
            part: dict[str, Any] = {"text": strip_surrogates(block["text"])}
            if signature:
                part["thoughtSignature"] = signature
            parts.append(part)
        elif block["type"] == "thinking":
            # The handoff leaves thinking only for the same model; others arrive as text.
            signature = block.get("thinkingSignature")
            if not block["thinking"].strip() and not signature:
                continue
            part = {"thought": True, "text": strip_surrogates(block["thinking"])}
            if signature:
                part["thoughtSignature"] = signature
            parts.append(part)
        elif block["type"] == "toolCall":
            call: dict[str, Any] = {"name": block["name"], "args": block["arguments"]}
            if requires_tool_call_ids(model):
                call["id"] = block["id"]
            part = {"functionCall": call}
            signature = block.get("thoughtSignature")
            if signature:
                part["thoughtSignature"] = signature
            parts.append(part)
    calls = [p for p in parts if "functionCall" in p]
    version = gemini_major_version(model["id"])
    if calls and version is not None and version >= 3 and not any("thoughtSignature" in p for p in calls):
        calls[0]["thoughtSignature"] = SKIP_SIGNATURE
    return parts


def _function_responses(results: list[ToolResultMessage], model: ModelInfo) -> list[dict[str, Any]]:
    """One user turn answering every call; images nested (Gemini 3) or in a turn of their own."""
    accepts_images = "image" in model["input"]
    version = gemini_major_version(model["id"])
    nested_images = version is None or version >= 3
    parts: list[dict[str, Any]] = []
    loose_images: list[dict[str, Any]] = []
    for result in results:
        text = "\n".join(b["text"] for b in result["content"] if b["type"] == "text" and b["text"])
        images = [_user_part(b) for b in result["content"] if b["type"] == "image"] if accepts_images else []
        value = strip_surrogates(text) if text else ("(see attached image)" if images else "")
        response: dict[str, Any] = {
            "name": result["toolName"],
            "response": {"error": value} if result["isError"] else {"output": value},
        }
        if requires_tool_call_ids(model):
            response["id"] = result["toolCallId"]
        if images and nested_images:
            response["parts"] = images
        elif images:
            loose_images.extend(images)
        parts.append({"functionResponse": response})
    contents: list[dict[str, Any]] = [{"role": "user", "parts": parts}]
    if loose_images:
        contents.append({"role": "user", "parts": [{"text": "Tool result image:"}, *loose_images]})
    return contents


# -- response ----------------------------------------------------------------------------------


class GeminiParser(StreamParser):
    """``GenerateContentResponse`` chunks → the message builder. One text or thinking part is open
    at a time (a part of the other kind, or a call, closes it); a call opens and closes at once."""

    def __init__(self, model: ModelInfo, output: AssistantMessage) -> None:
        super().__init__(model, output)
        self.current: Part | None = None
        """The open text or thinking part."""
        self.calls = 0
        self.finished = False
        self._usage_metadata: dict[str, Any] | None = None
        """The latest ``usageMetadata`` not yet counted: ``settle`` prices it (once per read, not
        per chunk: it changes on almost every chunk)."""
        self._last_counts: tuple[object, ...] = ()
        self._version: object = None

    def feed(self, event: str, data: Any) -> list[AssistantMessageEvent]:
        chunk = as_dict(data)
        if chunk is None:
            return []
        error = chunk.get("error")
        if error:
            return self.fail(_error_text(error))
        output = self.output
        if not output.get("responseId"):  # the first non-empty id; an empty one until then
            response_id = as_str(chunk.get("responseId"))
            if response_id is not None and (response_id or "responseId" not in output):
                output["responseId"] = response_id
        version = chunk.get("modelVersion")
        if version != self._version and isinstance(version, str):
            self._version = version
            if version != self.model["id"]:
                cast("dict[str, Any]", output)["responseModel"] = version
        usage = chunk.get("usageMetadata")
        if usage is not None and (counts := as_dict(usage)) is not None:
            self._usage_metadata = counts
        candidates = as_list(chunk.get("candidates"))
        candidate = as_dict(candidates[0]) if candidates else None
        if candidate is None:
            blocked = as_str((as_dict(chunk.get("promptFeedback")) or {}).get("blockReason"))
            if blocked:
                self.finished = True
                output["stopReason"] = "error"
                output["errorMessage"] = f"Gemini blocked the prompt: {blocked}"
            return []
        events: list[AssistantMessageEvent] = []
        content = as_dict(candidate.get("content"))
        for part in as_list(content.get("parts")) if content is not None else ():
            fields = as_dict(part)
            if fields is None:
                continue
            signature = fields.get("thoughtSignature")
            if not isinstance(signature, str):
                signature = None
            text = fields.get("text")
            if isinstance(text, str):
                events += self._text(text, fields.get("thought") is True, signature)
            call = fields.get("functionCall")
            if call is not None and (call_fields := as_dict(call)) is not None:
                events += self._call(call_fields, signature)
        reason = candidate.get("finishReason")
        if reason and isinstance(reason, str):
            self.finished = True
            self._finish_reason(reason, as_str(candidate.get("finishMessage")))
        return events

    def end(self) -> list[AssistantMessageEvent]:
        output = self.output
        failed = output["stopReason"] == "error"
        if not failed and not self.finished:
            return self.fail("The stream ended before the response was complete")
        events = self._close()  # as pi-ai, also before reporting a finishReason that is an error
        if failed:
            return events + self.fail(output.get("errorMessage") or "Gemini returned an error")
        reason = output["stopReason"]
        assert reason in ("stop", "length", "toolUse")
        events.append({"type": "done", "reason": reason, "message": output})
        return events

    def _text(self, text: str, thought: bool, signature: str | None) -> list[AssistantMessageEvent]:
        kind = "thinking" if thought else "text"
        part = self.current
        events: list[AssistantMessageEvent] = []
        if part is None or part.block["type"] != kind:
            events = self._close()
            events += self.parts.start(kind, {"type": kind, kind: ""})
            part = self.current = self.parts.open[kind]
        if signature:
            part.block["thinkingSignature" if thought else "textSignature"] = signature
        if events:
            return events + self.parts.delta(part, text)
        return self.parts.delta(part, text)  # the usual chunk: more of the open part

    def _close(self) -> list[AssistantMessageEvent]:
        part = self.current
        if part is None:
            return []
        self.current = None
        return self.parts.end(part)

    def _call(self, call: dict[str, Any], signature: str | None) -> list[AssistantMessageEvent]:
        events = self._close()
        given = as_str(call.get("id"))
        taken = {b["id"] for b in self.parts.content if b["type"] == "toolCall"}
        arguments = as_dict(call.get("args")) or {}
        block: dict[str, Any] = {
            "type": "toolCall",
            "id": given if given and given not in taken else f"call_{uuid.uuid4().hex[:24]}",
            "name": as_str(call.get("name")) or "",
            "arguments": arguments,
        }
        if signature:
            block["thoughtSignature"] = signature
        self.calls += 1
        events += self.parts.start(("call", self.calls), block)
        part = self.parts.open["call", self.calls]
        # The arguments arrive whole: the delta shows them as text, the block keeps the object.
        events += self.parts.delta_event(
            part, json.dumps(arguments, separators=(",", ":"), ensure_ascii=False)
        )
        return events + self.parts.end(part)

    def _finish_reason(self, reason: str, message: str | None) -> None:
        output = self.output
        if any(b["type"] == "toolCall" for b in self.parts.content):
            output["stopReason"] = "toolUse"
        elif reason == "STOP":
            output["stopReason"] = "stop"
        elif reason == "MAX_TOKENS":
            output["stopReason"] = "length"
        else:
            output["stopReason"] = "error"
            text = f"Gemini stopped the response: finishReason {reason}"
            output["errorMessage"] = f"{text} ({message})" if message else text

    def settle(self) -> None:
        usage = self._usage_metadata
        if usage is not None:
            self._usage_metadata = None
            self._usage(usage)

    def _usage(self, usage: dict[str, Any]) -> None:
        get = usage.get
        counts = (
            get("promptTokenCount"),
            get("cachedContentTokenCount"),
            get("candidatesTokenCount"),
            get("thoughtsTokenCount"),
            get("totalTokenCount"),
        )
        if counts == self._last_counts:
            return  # only fields we do not count changed
        self._last_counts = counts
        prompt, cached, candidates, thoughts, total = [as_int(c) for c in counts]
        # Written in place rather than through usage.set_usage: this runs on every network read.
        target = self.output["usage"]
        target["input"] = max(0, prompt - cached)
        target["output"] = candidates + thoughts
        target["cacheRead"] = cached
        target["cacheWrite"] = 0
        target["totalTokens"] = total
        if thoughts:
            target["reasoningTokens"] = thoughts
        calculate_cost(self.model, target)


def _error_text(error: object) -> str:
    detail = as_dict(error)
    if detail is None:
        return str(error)
    message = as_str(detail.get("message")) or json.dumps(detail, separators=(",", ":"), ensure_ascii=False)
    status = as_str(detail.get("status"))
    return f"{status}: {message}" if status else message


# -- entry points ------------------------------------------------------------------------------


def stream_gemini(
    model: ModelInfo, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    opts = options or GeminiOptions()
    return stream_http(model, opts, lambda key: build_request(model, context, opts, key), GeminiParser)


def gemini_options(model: ModelInfo, options: SimpleStreamOptions | None) -> GeminiOptions:
    """The provider options ``stream_simple`` uses for the requested thinking level.

    The level is clamped to the model (``clamp_thinking_level``). Gemini 3 gets a
    ``thinkingLevel``; Gemini 2.5 (and unknown models) a ``thinkingBudget``, ``0`` for ``off``.
    A model that cannot stop thinking (Gemini 3, 2.5 Pro) asked for ``off`` thinks at its lowest
    level and its thoughts are not streamed.
    """
    fields = base_fields(model, options)
    if not model["reasoning"]:
        return GeminiOptions(**fields)
    requested = options.reasoning if options and options.reasoning else "off"
    level = clamp_thinking_level(model, requested)
    show = requested != "off"
    if level == "off":
        return GeminiOptions(**fields, thinking_budget=0)
    config = thinking_config(model)
    if config is not None and config["mode"] == "google-level":
        wire = thinking_effort(model, level) or level
        return GeminiOptions(**fields, thinking_level=wire.upper(), include_thoughts=show)
    return GeminiOptions(**fields, thinking_budget=thinking_budget(model, level), include_thoughts=show)


def stream_simple_gemini(
    model: ModelInfo, context: Context, options: SimpleStreamOptions | None = None
) -> AssistantMessageEventStream:
    return stream_gemini(model, context, gemini_options(model, options))


PROVIDER = ApiProvider(API, stream_gemini, stream_simple_gemini, max_tools=512)
"""``max_tools``: ``Tool.functionDeclarations`` of Google's Gen AI SDK (made from the API's own
definitions): "Maximum 512 function declarations can be provided" (the older Vertex AI SDKs
said 64); the request sends every tool in one ``Tool``."""
