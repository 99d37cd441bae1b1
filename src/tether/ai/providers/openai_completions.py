"""``openai-completions``: OpenAI Chat Completions and every server that speaks it.

OpenAI, OpenRouter, Groq, Cerebras, xAI, DeepSeek, Together, Mistral, Z.ai, and local servers
(Ollama, llama.cpp server, vLLM, LM Studio) share this wire format but differ in details; those
are the ``Compat`` settings, auto-detected from provider and base URL and overridable per model
through ``model["compat"]`` (camelCase keys, e.g. ``{"maxTokensField": "max_tokens"}``).

The parser tolerates what real servers send: reasoning as ``reasoning_content``/``reasoning``/
``reasoning_text``; parallel tool calls that all say ``index: 0`` but carry different ids
(Ollama); fragments repeating id and name (llama.cpp); missing tool-call ids (we generate them);
the deprecated ``function_call`` delta; usage in ``choice.usage``; errors inside the stream; a
missing ``[DONE]``. Like the reference, blocks are closed only when the stream ends. Local servers
get every ``content`` as a string (``requiresStringContent``): their chat templates concatenate it.

One API, one file (the recipe of ``tether.ai.provider``): past our usual ~600 lines because the
compatible servers' quirks (usage placement, reasoning fields, tool-call ids) sit beside the
chunk handling they change.
"""

from __future__ import annotations

import functools
import json
import uuid
from dataclasses import dataclass, fields
from typing import Any, Literal, cast

from tether.ai.api_provider import ApiProvider
from tether.ai.event_stream import AssistantMessageEventStream, error_event
from tether.ai.handoff import transform_messages
from tether.ai.jsonish import as_dict, as_int, as_list, as_str
from tether.ai.message_builder import Part
from tether.ai.provider import StreamParser, stream_http
from tether.ai.sanitize import strip_surrogates
from tether.ai.simple_options import default_max_tokens, effective_effort
from tether.ai.transport import HttpRequest, arguments_text
from tether.ai.types import Context, SimpleStreamOptions, StreamOptions
from tether.ai.usage import set_usage
from tether.wire import (
    AssistantMessage,
    AssistantMessageEvent,
    ModelInfo,
    StopReason,
    ThinkingContent,
    ToolCall,
)

API = "openai-completions"
REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
_REASONING_KEYS = frozenset(REASONING_FIELDS)
_RARE_DELTA_KEYS = frozenset((*REASONING_FIELDS, "tool_calls", "function_call", "reasoning_details"))
"""The delta fields besides ``content`` a chunk can carry something in: most chunks have none."""

ThinkingFormat = Literal["openai", "openrouter", "deepseek", "zai", "qwen"]


@dataclass(frozen=True, slots=True)
class Compat:
    """How a server deviates from OpenAI's own Chat Completions."""

    supportsStore: bool = True
    supportsDeveloperRole: bool = True
    """Send the system prompt as ``developer`` to reasoning models. Detected only for OpenAI's own
    API, as pi 1.6 does: the role is OpenAI's, other hosts' chat templates often reject it, and
    every host accepts ``system``."""
    supportsReasoningEffort: bool = True
    supportsUsageInStreaming: bool = True
    """Ask for ``stream_options.include_usage``."""
    maxTokensField: Literal["max_completion_tokens", "max_tokens"] = "max_completion_tokens"
    requiresToolResultName: bool = False
    requiresAssistantAfterToolResult: bool = False
    requiresThinkingAsText: bool = False
    requiresReasoningContentOnAssistantMessages: bool = False
    thinkingFormat: ThinkingFormat = "openai"
    supportsStrictMode: bool = True
    anthropicCacheControl: bool = False
    """OpenRouter's Anthropic models take ``cache_control`` marks like the Messages API."""
    requiresStringContent: bool = False
    """Every message's ``content`` a string: text-only user content joined, ``""`` for an assistant
    turn of only tool calls. Servers that render the model's chat template by concatenating
    strings (llama-cpp-python's server, with SmolLM2 and most GGUF templates) fail mid-stream on a
    list of parts or on ``null``."""


def detect_compat(model: ModelInfo) -> Compat:
    """Settings for known providers, from ``provider`` first and the base URL second."""
    return _detected(model["provider"], model["baseUrl"], model["id"])


@functools.lru_cache(maxsize=64)
def _detected(provider: str, url: str, model_id: str) -> Compat:
    """``detect_compat``'s answer, worked out once per model: every request asks, and the work
    is a dozen substring searches in the URL and a frozen ``Compat`` built field by field."""
    zai = provider == "zai" or "api.z.ai" in url
    xai = provider == "xai" or "api.x.ai" in url
    deepseek = provider == "deepseek" or "deepseek.com" in url
    openrouter = provider == "openrouter" or "openrouter.ai" in url
    mistral = provider == "mistral" or "api.mistral.ai" in url
    local = provider in ("ollama", "llama.cpp", "llamacpp", "vllm", "lmstudio", "local")
    openai = provider == "openai" or "api.openai.com" in url
    nonstandard = (
        provider in ("cerebras", "groq", "together")
        or any(host in url for host in ("cerebras.ai", "groq.com", "together.xyz", "chutes.ai"))
        or xai
        or zai
        or deepseek
        or mistral
        or local
    )
    thinking: ThinkingFormat = "openai"
    if deepseek:
        thinking = "deepseek"
    elif zai:
        thinking = "zai"
    elif openrouter:
        thinking = "openrouter"
    return Compat(
        supportsStore=not nonstandard,
        supportsDeveloperRole=openai,
        supportsReasoningEffort=not (xai or zai or mistral),
        maxTokensField="max_tokens" if (mistral or local or "chutes.ai" in url) else "max_completion_tokens",
        requiresToolResultName=mistral,
        requiresReasoningContentOnAssistantMessages=deepseek,
        thinkingFormat=thinking,
        supportsStrictMode=not (mistral or local),
        anthropicCacheControl=openrouter and model_id.startswith("anthropic/"),
        requiresStringContent=local,
    )


def resolve_compat(model: ModelInfo) -> Compat:
    """Detected settings overridden by the model's own ``compat`` entries (unknown keys ignored)."""
    detected = detect_compat(model)
    overrides = model.get("compat") or {}
    if not overrides:
        return detected
    values = {f.name: overrides.get(f.name, getattr(detected, f.name)) for f in fields(Compat)}
    return Compat(**values)


@dataclass(slots=True)
class OpenAICompletionsOptions(StreamOptions):
    reasoning_effort: str | None = None
    """``minimal``..``xhigh``; ``None`` asks for no reasoning where the API can say so."""


# -- request -----------------------------------------------------------------------------------


def build_request(
    model: ModelInfo, context: Context, options: StreamOptions, api_key: str | None
) -> HttpRequest:
    effort = options.reasoning_effort if isinstance(options, OpenAICompletionsOptions) else None
    return _request(model, context, options, api_key, effort, options.max_tokens)


def _request(
    model: ModelInfo,
    context: Context,
    options: StreamOptions,
    api_key: str | None,
    effort: str | None,
    max_tokens: int | None,
) -> HttpRequest:
    """``build_request`` with the effort and the token limit given apart from ``options``: so
    ``stream_simple`` sends its caller's options as they are, with no provider options copied
    from them field by field on every request."""
    compat = resolve_compat(model)
    body: dict[str, Any] = {
        "model": model["id"],
        "messages": convert_messages(model, context, compat),
        "stream": True,
    }
    if compat.supportsUsageInStreaming:
        body["stream_options"] = {"include_usage": True}
    if compat.supportsStore:
        body["store"] = False
    if max_tokens:
        body[compat.maxTokensField] = max_tokens
    if options.temperature is not None:
        body["temperature"] = options.temperature
    tools = context.get("tools") or []
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool["name"],
                    "description": tool["description"],
                    "parameters": tool["parameters"],
                    **({"strict": False} if compat.supportsStrictMode else {}),
                },
            }
            for tool in tools
        ]
    elif _has_tool_history(context):
        body["tools"] = []  # proxies in front of Anthropic reject tool history without tools
    if options.tool_choice is not None:
        body["tool_choice"] = options.tool_choice
    if options.session_id and options.cache_retention != "none" and "api.openai.com" in model["baseUrl"]:
        body["prompt_cache_key"] = options.session_id
    if compat.anthropicCacheControl and options.cache_retention != "none":
        _mark_cache_breakpoints(body)
    _apply_reasoning(body, model, compat, effort)
    body.update(options.extra)
    headers = dict(cast("dict[str, str]", model.get("headers") or {}))
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return HttpRequest(model["baseUrl"].rstrip("/") + "/chat/completions", headers, body)


def _apply_reasoning(body: dict[str, Any], model: ModelInfo, compat: Compat, effort: str | None) -> None:
    if not model["reasoning"]:
        return
    if compat.thinkingFormat in ("zai", "qwen"):
        body["enable_thinking"] = effort is not None
    elif compat.thinkingFormat == "deepseek":
        body["thinking"] = {"type": "enabled" if effort else "disabled"}
        if effort:
            body["reasoning_effort"] = effort
    elif compat.thinkingFormat == "openrouter":
        body["reasoning"] = {"effort": effort or "none"}
    elif effort and compat.supportsReasoningEffort:
        body["reasoning_effort"] = effort


def _has_tool_history(context: Context) -> bool:
    for message in context["messages"]:
        if message["role"] == "toolResult":
            return True
        if message["role"] == "assistant" and any(b["type"] == "toolCall" for b in message["content"]):
            return True
    return False


def _mark_cache_breakpoints(body: dict[str, Any]) -> None:
    """Anthropic-style caching through OpenRouter: system prompt, last tool, last user/assistant text."""
    mark = {"type": "ephemeral"}
    messages: list[dict[str, Any]] = body["messages"]
    for message in messages:
        if message["role"] in ("system", "developer"):
            _mark_text(message, mark)
            break
    tools = as_list(body.get("tools"))
    if tools:
        tools[-1]["cache_control"] = mark
    for message in reversed(messages):
        if message["role"] in ("user", "assistant") and _mark_text(message, mark):
            break


def _mark_text(message: dict[str, Any], mark: dict[str, str]) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            return False
        message["content"] = [{"type": "text", "text": content, "cache_control": mark}]
        return True
    for part in reversed(as_list(content)):
        if part.get("type") == "text":
            part["cache_control"] = mark
            return True
    return False


def convert_messages(model: ModelInfo, context: Context, compat: Compat) -> list[dict[str, Any]]:
    """Our transcript as Chat Completions ``messages``."""
    out: list[dict[str, Any]] = []
    system = context.get("systemPrompt")
    if system:
        role = "developer" if model["reasoning"] and compat.supportsDeveloperRole else "system"
        out.append({"role": role, "content": strip_surrogates(system)})
    volatile = context.get("volatileContext")
    if volatile:  # a message of its own, so a cached system prompt stays byte-identical
        role = "developer" if model["reasoning"] and compat.supportsDeveloperRole else "system"
        out.append({"role": role, "content": strip_surrogates(volatile)})
    messages = transform_messages(context["messages"], model)  # cross-provider handoff
    last_role = ""
    images: list[dict[str, Any]] = []  # of the tool results since the last other message
    # One ``for`` over the messages (every request converts every turn): a run of tool results
    # is one message at a time too, its images sent after it in a user turn, added when the
    # next other message (or the end) comes.
    for message in messages:
        if message["role"] == "toolResult":
            # One pass over the result's blocks: its texts, and its images for the user turn.
            texts: list[str] = []
            seen_images = len(images)
            for block in message["content"]:
                if block["type"] == "text":
                    texts.append(block["text"])
                elif block["type"] == "image":  # any other block was never sent
                    url = f"data:{block['mimeType']};base64,{block['data']}"
                    images.append({"type": "image_url", "image_url": {"url": url}})
            text = "\n".join(texts)
            if not text and len(images) > seen_images:
                text = "(see attached image)"
            tool_message: dict[str, Any] = {
                "role": "tool",
                "content": strip_surrogates(text),
                "tool_call_id": message["toolCallId"],
            }
            if compat.requiresToolResultName and message["toolName"]:
                tool_message["name"] = message["toolName"]
            out.append(tool_message)
            last_role = "toolResult"
            continue
        if images:
            last_role = _tool_images(out, images, compat)
            images = []
        if message["role"] == "user":
            if compat.requiresAssistantAfterToolResult and last_role == "toolResult":
                out.append({"role": "assistant", "content": "I have processed the tool results."})
            content = message["content"]
            if isinstance(content, str):
                out.append({"role": "user", "content": strip_surrogates(content)})
            else:
                parts: list[dict[str, Any]] = []
                for block in content:
                    if block["type"] == "text":
                        parts.append({"type": "text", "text": strip_surrogates(block["text"])})
                    else:  # the handoff already replaced images for models without image input
                        url = f"data:{block['mimeType']};base64,{block['data']}"
                        parts.append({"type": "image_url", "image_url": {"url": url}})
                if parts and compat.requiresStringContent and all(p["type"] == "text" for p in parts):
                    out.append({"role": "user", "content": "\n".join(p["text"] for p in parts)})
                elif parts:
                    out.append({"role": "user", "content": parts})
            last_role = "user"
        else:
            converted = _assistant(model, message, compat)
            if converted is not None:
                out.append(converted)
            last_role = "assistant"
    if images:
        _tool_images(out, images, compat)
    return out


def _tool_images(out: list[dict[str, Any]], images: list[dict[str, Any]], compat: Compat) -> str:
    """The images of a run of tool results, as a user turn after it (Chat Completions takes
    images in user turns only); the role now last."""
    if compat.requiresAssistantAfterToolResult:
        out.append({"role": "assistant", "content": "I have processed the tool results."})
    out.append(
        {
            "role": "user",
            "content": [{"type": "text", "text": "Attached image(s) from tool result:"}, *images],
        }
    )
    return "user"


def _assistant(model: ModelInfo, message: AssistantMessage, compat: Compat) -> dict[str, Any] | None:
    texts: list[str] = []
    thinking: list[ThinkingContent] = []
    calls: list[ToolCall] = []
    for b in message["content"]:  # one pass, not one per kind: every request converts every turn
        if b["type"] == "text":
            if b["text"].strip():
                texts.append(strip_surrogates(b["text"]))
        elif b["type"] == "thinking":
            if b["thinking"].strip():
                thinking.append(b)
        elif b["type"] == "toolCall":
            calls.append(b)
    out: dict[str, Any] = {
        "role": "assistant",
        "content": "" if compat.requiresAssistantAfterToolResult or compat.requiresStringContent else None,
    }
    if thinking and compat.requiresThinkingAsText:
        joined = "\n\n".join(strip_surrogates(b["thinking"]) for b in thinking)
        if compat.requiresStringContent:
            out["content"] = "\n\n".join((joined, *texts))
        else:
            out["content"] = [{"type": "text", "text": t} for t in (joined, *texts)]
    else:
        if texts:
            out["content"] = "".join(texts)
        field = thinking[0].get("thinkingSignature") if thinking else None
        if field in REASONING_FIELDS:
            # The reasoning goes back in the field it came in (llama.cpp + gpt-oss, DeepSeek).
            out[field] = "\n".join(strip_surrogates(b["thinking"]) for b in thinking)
    if calls:
        out["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": arguments_text(call["arguments"]),
                },
            }
            for call in calls
        ]
        details: list[Any] = []
        for call in calls:
            signature = call.get("thoughtSignature")
            if signature:
                try:
                    details.append(json.loads(signature))
                except ValueError:
                    continue
        if details:
            out["reasoning_details"] = details
    if (
        compat.requiresReasoningContentOnAssistantMessages
        and model["reasoning"]
        and "reasoning_content" not in out
    ):
        out["reasoning_content"] = ""
    if not out["content"] and not calls:
        return None  # e.g. an aborted answer with no content: APIs reject empty assistant turns
    return out


# -- response ----------------------------------------------------------------------------------

_STOP_REASONS: dict[str, StopReason] = {
    "stop": "stop",
    "end": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
}


class OpenAICompletionsParser(StreamParser):
    """Chat Completions chunks → the message builder. One text and one thinking part stay open
    for the whole answer; tool calls are told apart by id, else by their stream ``index``."""

    def __init__(self, model: ModelInfo, output: AssistantMessage) -> None:
        super().__init__(model, output)
        self.tools: list[tuple[Part, int | None]] = []
        """Each tool call's part and its ``index`` in the stream (``None`` when it had none)."""
        self.finished = False
        """A ``finish_reason`` arrived: the answer is complete even if ``[DONE]`` never comes."""
        self.extra = cast("dict[str, Any]", output)
        self.text: Part | None = None
        """The text part, once the answer has text."""
        self.seen: tuple[object, object, object] | None = None
        """The last chunk's id, model and provider: a chunk repeating them (every chunk after the
        first, as servers send them) has no metadata to read."""

    def feed(self, event: str, data: Any) -> list[AssistantMessageEvent]:
        # The per-chunk path of every Chat Completions stream: the shape checks of ``jsonish``
        # are written out here (a call each was a third of the parser's cost per chunk); each
        # ignore says what ``as_dict`` says (a JSON object's keys are strings).
        if not isinstance(data, dict):
            return []
        chunk: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
        if event == "error" or chunk.get("error"):
            # As in pi-ai, the error ends the answer before any other field of the chunk is read
            # (so the usage an OpenRouter error chunk carries is not counted).
            code: Any = (as_dict(chunk.get("error")) or {}).get("code")
            self.retryable = code in (429, 500, 502, 503, 504, 529, "server_error", "rate_limit_exceeded")
            return self.fail(_error_text(chunk))
        seen = (chunk.get("id"), chunk.get("model"), chunk.get("provider"))
        if seen != self.seen:
            self.seen = seen
            self._metadata(*seen)
        choices = chunk.get("choices")
        first: Any = choices[0] if choices and isinstance(choices, list) else None  # pyright: ignore[reportUnknownVariableType]
        choice: dict[str, Any] | None = first if isinstance(first, dict) else None  # pyright: ignore[reportUnknownVariableType]
        usage = chunk.get("usage")
        if usage is None and choice is not None:
            usage = choice.get("usage")
        if usage is not None and isinstance(usage, dict):
            self._usage(usage)
        if choice is None:
            return []
        reason = choice.get("finish_reason")
        if reason and isinstance(reason, str):
            self.finished = True
            mapped = _STOP_REASONS.get(reason)
            output = self.output
            if mapped is None:
                output["stopReason"] = "error"
                output["errorMessage"] = f"Provider finish_reason: {reason}"
            else:
                output["stopReason"] = mapped
        found = choice.get("delta")
        if not isinstance(found, dict):
            return []
        delta: dict[str, Any] = found  # pyright: ignore[reportUnknownVariableType]
        events: list[AssistantMessageEvent] = []
        content = delta.get("content")
        if content and isinstance(content, str):
            part = self.text
            if part is None:
                events = self.parts.start("text", {"type": "text", "text": ""})
                part = self.text = self.parts.open["text"]
                events += self.parts.delta(part, content)
            else:
                events = self.parts.delta(part, content)
            if len(delta) == 1:
                return events  # most chunks: a piece of text and nothing else to look for
        if _RARE_DELTA_KEYS.isdisjoint(delta):
            return events  # a role, a null or empty content, nothing: one look, not six
        if not _REASONING_KEYS.isdisjoint(delta):
            for name in REASONING_FIELDS:
                value = delta.get(name)
                if value and isinstance(value, str):
                    # The "signature" names the field, so a replay can send the reasoning back in it.
                    events += self._grow(
                        "thinking", {"type": "thinking", "thinking": "", "thinkingSignature": name}, value
                    )
                    break
        calls = delta.get("tool_calls")
        if calls and isinstance(calls, list):
            for call in calls:  # pyright: ignore[reportUnknownVariableType]
                if isinstance(call, dict):
                    events += self._tool_call(call)  # pyright: ignore[reportUnknownArgumentType]
        else:  # the deprecated single call, read only when there is no list of them
            legacy = delta.get("function_call")
            if legacy and isinstance(legacy, dict):
                events += self._tool_call({"function": legacy})
        details = delta.get("reasoning_details")
        if details and self.tools:
            self._reasoning_details(as_list(details))
        return events

    def end(self) -> list[AssistantMessageEvent]:
        output = self.output
        for part, _ in self.tools:
            if not part.block["id"]:
                part.block["id"] = f"call_{uuid.uuid4().hex[:24]}"
        events = self.parts.end_all()
        if output["stopReason"] == "error":
            events.append(error_event(output, output.get("errorMessage") or "Provider returned an error"))
        elif not (self.finished or self.done_marker):  # neither finish_reason nor [DONE]: cut off
            events.append(error_event(output, "The stream ended before the response was complete"))
        else:
            reason = output["stopReason"]
            assert reason in ("stop", "length", "toolUse")
            events.append({"type": "done", "reason": reason, "message": output})
        return events

    def _metadata(self, chunk_id: object, chunk_model: object, upstream: object) -> None:
        """Response id, reported model and upstream provider, read as the reference reads them: the
        first non-empty id (an empty one is kept until a real one comes), the first reported model
        that differs from ours, and the provider a router (OpenRouter) says served us."""
        output = self.output
        if isinstance(chunk_id, str) and not output.get("responseId"):
            output["responseId"] = chunk_id
        if not isinstance(chunk_model, str):
            chunk_model = None
        elif chunk_model and chunk_model != self.model["id"] and "responseModel" not in self.extra:
            self.extra["responseModel"] = chunk_model
        if upstream and isinstance(upstream, str) and "upstreamProvider" not in output:
            output["upstreamProvider"] = upstream
            if chunk_model:
                output["upstreamModel"] = chunk_model

    def _grow(self, key: str, new_block: dict[str, Any], text: str) -> list[AssistantMessageEvent]:
        """Append to the open text or thinking part (``key``), opening it with ``new_block`` first."""
        part = self.parts.open.get(key)
        if part is not None:
            return self.parts.delta(part, text)
        events = self.parts.start(key, new_block)
        part = self.parts.open[key]
        return events + self.parts.delta(part, text)

    def _reasoning_details(self, details: list[Any]) -> None:
        """OpenRouter's encrypted reasoning for a tool call rides along as its signature."""
        for detail in details:
            detail_object = as_dict(detail)
            if (
                detail_object
                and detail_object.get("type") == "reasoning.encrypted"
                and detail_object.get("data")
            ):
                for part, _ in self.tools:
                    if part.block["id"] and part.block["id"] == detail_object.get("id"):
                        part.block["thoughtSignature"] = json.dumps(detail_object, separators=(",", ":"))

    def _tool_call(self, call: dict[str, Any]) -> list[AssistantMessageEvent]:
        # Every fragment of a streamed call comes here: the shape checks written out, as in feed.
        found = call.get("function")
        function: dict[str, Any] = found if isinstance(found, dict) else {}  # pyright: ignore[reportUnknownVariableType]
        call_id = call.get("id")
        if not (call_id and isinstance(call_id, str)):
            call_id = ""
        stream_index = call.get("index")
        if not isinstance(stream_index, int) or isinstance(stream_index, bool):
            stream_index = None
        part = self._find_tool(call_id, stream_index)
        events: list[AssistantMessageEvent] = []
        if part is None:
            key = ("tool", len(self.tools))
            events = self.parts.start(key, {"type": "toolCall", "id": call_id, "name": "", "arguments": {}})
            part = self.parts.open[key]
            self.tools.append((part, stream_index))
        block = part.block
        if call_id and not block["id"]:
            block["id"] = call_id
        name = function.get("name")
        if name and isinstance(name, str) and not block["name"]:
            block["name"] = name
        arguments = function.get("arguments")
        return events + self.parts.delta(part, arguments if arguments and isinstance(arguments, str) else "")

    def _find_tool(self, call_id: str, stream_index: int | None) -> Part | None:
        if call_id:
            for part, _ in self.tools:
                if part.block["id"] == call_id:
                    return part
        if stream_index is not None:
            for part, index in reversed(self.tools):
                if index == stream_index:
                    # Same index but another id: a new parallel call (Ollama numbers them all 0).
                    if call_id and part.block["id"] and part.block["id"] != call_id:
                        return None
                    return part
            return None
        if not call_id and self.tools:
            return self.tools[-1][0]  # legacy function_call fragments, or index-less continuations
        return None

    def _usage(self, usage: Any) -> None:
        # Every answer's last chunk: a count that is absent is 0 without an ``as_int`` call, and
        # the details are read only when there are some (many servers send none).
        cached = written = reasoning = 0
        details: Any = usage.get("prompt_tokens_details")
        if details and isinstance(details, dict):
            cached = as_int(details.get("cached_tokens"))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
            written = as_int(details.get("cache_write_tokens"))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        if not cached and "prompt_cache_hit_tokens" in usage:
            cached = as_int(usage["prompt_cache_hit_tokens"])
        # Some servers (OpenRouter) count this request's cache writes inside cached_tokens.
        cache_read = max(0, cached - written) if written else cached
        completion: Any = usage.get("completion_tokens_details")
        if completion and isinstance(completion, dict):
            reasoning = as_int(completion.get("reasoning_tokens"))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        set_usage(
            self.model,
            self.output["usage"],
            input=max(0, as_int(usage.get("prompt_tokens")) - cache_read - written),
            output=as_int(usage.get("completion_tokens")),
            cache_read=cache_read,
            cache_write=written,
            reasoning=reasoning,
        )


def _error_text(chunk: dict[str, Any]) -> str:
    error: Any = chunk.get("error")
    error_object = as_dict(error)
    if error_object is None:
        text = as_str(chunk.get("message")) or json.dumps(chunk, separators=(",", ":"), ensure_ascii=False)
        return text
    message: Any = error_object.get("message")
    if isinstance(message, str) and message:
        text = message
    elif message:
        text = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
    else:
        text = json.dumps(error_object, separators=(",", ":"), ensure_ascii=False)
    raw = as_str((as_dict(error_object.get("metadata")) or {}).get("raw"))
    return f"{text}\n{raw}" if raw else text


# -- entry points ------------------------------------------------------------------------------


def stream_openai_completions(
    model: ModelInfo, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    opts = options or OpenAICompletionsOptions()
    return stream_http(
        model, opts, lambda key: build_request(model, context, opts, key), OpenAICompletionsParser
    )


def stream_simple_openai_completions(
    model: ModelInfo, context: Context, options: SimpleStreamOptions | None = None
) -> AssistantMessageEventStream:
    effort = effective_effort(model, options.reasoning if options else None)
    if effort == "max":
        effort = "xhigh"
    opts = options or SimpleStreamOptions()
    max_tokens = default_max_tokens(model, opts)
    return stream_http(
        model,
        opts,
        lambda key: _request(model, context, opts, key, effort, max_tokens),
        OpenAICompletionsParser,
    )


PROVIDER = ApiProvider(API, stream_openai_completions, stream_simple_openai_completions, max_tools=128)
"""``max_tools``: the API reference's ``tools``: "A max of 128 functions are supported"; more is a
400 ``array_above_max_length``."""
