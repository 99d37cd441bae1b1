"""``anthropic-messages``: the Anthropic Messages API, streamed.

Content blocks are tracked by Anthropic's own ``index``: text, thinking (``signature_delta``
makes it signed), ``redacted_thinking`` (kept opaque: a thinking block reading
``[Reasoning redacted]`` whose signature is the encrypted payload, sent back verbatim), and
``tool_use`` (``input_json_delta`` through ``PartialJson``). Server-side tool blocks
(``server_tool_use``, ``*_tool_result``, ``mcp_*``, ``compaction``) are skipped, as the
reference does. Usage from ``message_start`` is overridden field by field by ``message_delta``.

Requests mark prompt-cache breakpoints (``cache_control``) on the system prompt, the last tool and
the last user block. Auth is ``x-api-key``, or a bearer token for OAuth (``sk-ant-oat…`` keys or
``ANTHROPIC_OAUTH_TOKEN``), which also needs the Claude Code identity and beta headers.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Literal, cast

from tether.ai.api_provider import ApiProvider
from tether.ai.append import append_text
from tether.ai.event_stream import AssistantMessageEventStream
from tether.ai.handoff import transform_messages
from tether.ai.jsonish import as_dict, as_int, as_str
from tether.ai.provider import StreamParser, stream_http
from tether.ai.sanitize import strip_surrogates
from tether.ai.simple_options import base_fields, effective_effort
from tether.ai.thinking import plan_thinking_budget, thinking_config
from tether.ai.transport import HttpRequest, provider_error_text
from tether.ai.types import Context, SimpleStreamOptions, StreamOptions
from tether.ai.usage import calculate_cost
from tether.wire import AssistantMessage, AssistantMessageEvent, ModelInfo, StopReason, UserContent

API = "anthropic-messages"
ANTHROPIC_VERSION = "2023-06-01"
REDACTED_TEXT = "[Reasoning redacted]"
CLAUDE_CODE_IDENTITY = "You are Claude Code, Anthropic's official CLI for Claude."
OAUTH_BETAS = ("claude-code-20250219", "oauth-2025-04-20")
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
FINE_GRAINED_TOOL_STREAMING_BETA = "fine-grained-tool-streaming-2025-05-14"
MIN_BUDGET_TOKENS = 1024
"""The API's smallest ``budget_tokens``; per-level budgets come from ``tether.ai.thinking``."""


@dataclass(slots=True)
class AnthropicOptions(StreamOptions):
    thinking_enabled: bool | None = None
    """``True`` asks for thinking; ``False`` disables it explicitly; ``None`` leaves the API default."""
    thinking_budget_tokens: int | None = None
    """Budget for models with budget-based thinking (before the 4.6 generation)."""
    effort: str | None = None
    """``low``/``medium``/``high``/``xhigh``/``max`` for models with adaptive thinking."""
    thinking_display: Literal["summarized", "omitted"] | None = None
    interleaved_thinking: bool = True


def is_oauth_token(key: str) -> bool:
    return "sk-ant-oat" in key


def supports_adaptive_thinking(model: ModelInfo) -> bool:
    """Opus 4.6+/Sonnet 4.6 decide how much to think themselves (``thinking.type: adaptive``).

    The model's thinking configuration (its own or its family's, ``tether.ai.thinking``) decides;
    ids are the fallback for models it does not know.
    """
    config = thinking_config(model)
    if config is not None:
        return config["mode"] == "anthropic-adaptive"
    model_id = model["id"]
    return any(
        tag in model_id
        for tag in ("opus-4-6", "opus-4.6", "opus-4-7", "opus-4.7", "sonnet-4-6", "sonnet-4.6")
    )


# -- request -----------------------------------------------------------------------------------


def build_request(
    model: ModelInfo, context: Context, options: StreamOptions, api_key: str | None
) -> HttpRequest:
    opts = options if isinstance(options, AnthropicOptions) else AnthropicOptions()
    oauth = bool(api_key) and (is_oauth_token(api_key or "") or _from_oauth_env(api_key))
    compat = model.get("compat") or {}
    retention = options.cache_retention
    mark: dict[str, str] | None = None
    if retention != "none":
        mark = {"type": "ephemeral"}
        if retention == "long" and compat.get("supportsLongCacheRetention", True):
            mark["ttl"] = "1h"
    body: dict[str, Any] = {
        "model": model["id"],
        "messages": convert_messages(model, context, mark),
        "max_tokens": options.max_tokens or max((model["maxTokens"] or 0) // 3, 1024),
        "stream": True,
    }
    system: list[dict[str, Any]] = []
    if oauth:
        system.append(_text_block(CLAUDE_CODE_IDENTITY, mark))
    prompt = context.get("systemPrompt")
    if prompt:
        system.append(_text_block(strip_surrogates(prompt), mark))
    volatile = context.get("volatileContext")
    if volatile:
        system.append({"type": "text", "text": strip_surrogates(volatile)})  # after the breakpoint
    if system:
        body["system"] = system
    thinking = opts.thinking_enabled and model["reasoning"]
    if options.temperature is not None and not thinking:
        body["temperature"] = options.temperature  # incompatible with extended thinking
    eager = bool(compat.get("supportsEagerToolInputStreaming", True))
    tools = context.get("tools") or []
    if tools:
        converted: list[dict[str, Any]] = []
        for tool in tools:
            schema = tool["parameters"]
            entry: dict[str, Any] = {
                "name": tool["name"],
                "description": tool["description"],
                "input_schema": {
                    "type": "object",
                    "properties": schema.get("properties", {}),
                    "required": schema.get("required", []),
                },
            }
            if eager:
                entry["eager_input_streaming"] = True
            converted.append(entry)
        if mark:
            converted[-1]["cache_control"] = mark
        body["tools"] = converted
    if model["reasoning"]:
        if thinking:
            display = opts.thinking_display or "summarized"
            if supports_adaptive_thinking(model):
                body["thinking"] = {"type": "adaptive", "display": display}
                if opts.effort:
                    body["output_config"] = {"effort": opts.effort}
            else:
                budget = opts.thinking_budget_tokens or 1024
                body["thinking"] = {"type": "enabled", "budget_tokens": budget, "display": display}
        elif opts.thinking_enabled is False:
            body["thinking"] = {"type": "disabled"}
    if options.tool_choice is not None:
        choice = options.tool_choice
        body["tool_choice"] = {"type": choice} if isinstance(choice, str) else choice
    body.update(options.extra)

    betas: list[str] = list(OAUTH_BETAS) if oauth else []
    if tools and not eager:
        betas.append(FINE_GRAINED_TOOL_STREAMING_BETA)
    if thinking and opts.interleaved_thinking and not supports_adaptive_thinking(model):
        betas.append(INTERLEAVED_THINKING_BETA)
    headers: dict[str, str] = {"anthropic-version": ANTHROPIC_VERSION}
    if betas:
        headers["anthropic-beta"] = ",".join(betas)
    if api_key:
        if oauth:
            headers["authorization"] = f"Bearer {api_key}"
            headers["x-app"] = "cli"
        else:
            headers["x-api-key"] = api_key
    headers.update(cast("dict[str, str]", model.get("headers") or {}))
    return HttpRequest(model["baseUrl"].rstrip("/") + "/v1/messages", headers, body)


def _from_oauth_env(key: str | None) -> bool:
    token = os.environ.get("ANTHROPIC_OAUTH_TOKEN")
    return bool(token) and token == key


def _text_block(text: str, mark: dict[str, str] | None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if mark:
        block["cache_control"] = mark
    return block


def _user_blocks(content: list[UserContent]) -> list[dict[str, Any]]:
    """Text and image blocks (the handoff already replaced images for models without image input)."""
    blocks: list[dict[str, Any]] = []
    for item in content:
        if item["type"] == "text":
            if item["text"].strip():
                blocks.append({"type": "text", "text": strip_surrogates(item["text"])})
        else:
            source = {"type": "base64", "media_type": item["mimeType"], "data": item["data"]}
            blocks.append({"type": "image", "source": source})
    return blocks


def _tool_result_content(content: list[UserContent]) -> str | list[dict[str, Any]]:
    if not any(item["type"] == "image" for item in content):
        return strip_surrogates("\n".join(item["text"] for item in content if item["type"] == "text"))
    blocks = _user_blocks(content)
    if not any(b["type"] == "text" for b in blocks):
        blocks.insert(0, {"type": "text", "text": "(see attached image)"})
    return blocks


def convert_messages(model: ModelInfo, context: Context, mark: dict[str, str] | None) -> list[dict[str, Any]]:
    """Our transcript as Messages API ``messages`` (consecutive tool results share one user turn)."""
    out: list[dict[str, Any]] = []
    messages = transform_messages(context["messages"], model)  # cross-provider handoff
    i = 0
    while i < len(messages):
        message = messages[i]
        if message["role"] == "user":
            content = message["content"]
            if isinstance(content, str):
                if content.strip():
                    out.append({"role": "user", "content": strip_surrogates(content)})
            else:
                blocks = _user_blocks(content)
                if blocks:
                    out.append({"role": "user", "content": blocks})
        elif message["role"] == "assistant":
            blocks = _assistant_blocks(message)
            if blocks:
                out.append({"role": "assistant", "content": blocks})
        else:
            results: list[dict[str, Any]] = []
            while i < len(messages) and (result := messages[i])["role"] == "toolResult":
                results.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": result["toolCallId"],
                        "content": _tool_result_content(result["content"]),
                        "is_error": result["isError"],
                    }
                )
                i += 1
            i -= 1
            out.append({"role": "user", "content": results})
        i += 1
    if mark and out and out[-1]["role"] == "user":
        last = out[-1]
        if isinstance(last["content"], str):
            last["content"] = [{"type": "text", "text": last["content"], "cache_control": mark}]
        elif last["content"]:
            last["content"][-1]["cache_control"] = mark
    return out


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in message["content"]:
        if block["type"] == "text":
            if block["text"].strip():
                blocks.append({"type": "text", "text": strip_surrogates(block["text"])})
        elif block["type"] == "thinking":
            signature = block.get("thinkingSignature") or ""
            if cast("dict[str, Any]", block).get("redacted"):
                blocks.append({"type": "redacted_thinking", "data": signature})
            elif not signature.strip():
                # Unsigned thinking (an aborted stream) cannot be replayed as thinking: plain text.
                if block["thinking"].strip():
                    blocks.append({"type": "text", "text": strip_surrogates(block["thinking"])})
            else:
                blocks.append(
                    {
                        "type": "thinking",
                        "thinking": strip_surrogates(block["thinking"]),
                        "signature": signature,
                    }
                )
        elif block["type"] == "redactedThinking":
            blocks.append({"type": "redacted_thinking", "data": block["data"]})
        elif block["type"] == "toolCall":
            blocks.append(
                {"type": "tool_use", "id": block["id"], "name": block["name"], "input": block["arguments"]}
            )
    return blocks


# -- response ----------------------------------------------------------------------------------

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "toolUse",
}


class AnthropicParser(StreamParser):
    """Messages stream events → the message builder; blocks are keyed by Anthropic's ``index``."""

    def __init__(self, model: ModelInfo, output: AssistantMessage) -> None:
        super().__init__(model, output)
        self.started = False
        self.stopped = False

    def feed(self, event: str, data: Any) -> list[AssistantMessageEvent]:
        payload = as_dict(data)
        if payload is None:
            return []
        kind = payload.get("type")
        if not isinstance(kind, str):
            kind = event
        if kind == "content_block_delta":
            return self._delta(payload)
        if kind == "error":  # an error payload without an ``event: error`` line
            self.retryable = _retryable(payload)
            return self.fail(_error_text(payload))
        if kind == "content_block_start":
            return self._start(payload)
        if kind == "content_block_stop":
            part = self.parts.open.get(_block_index(payload))
            return self.parts.end(part) if part is not None else []
        if kind == "message_start":
            self.started = True
            message = as_dict(payload.get("message")) or {}
            message_id = as_str(message.get("id"))
            if message_id is not None:  # an empty id is kept as "", as the reference does
                self.output["responseId"] = message_id
            reported = as_str(message.get("model"))
            if reported and reported != self.model["id"]:
                cast("dict[str, Any]", self.output)["responseModel"] = reported
            self._usage(as_dict(message.get("usage")) or {}, replace=True)
        elif kind == "message_delta":
            delta = as_dict(payload.get("delta")) or {}
            reason = as_str(delta.get("stop_reason"))
            if reason:
                mapped = _STOP_REASONS.get(reason)
                if mapped is None:
                    self.output["stopReason"] = "error"
                    self.output["errorMessage"] = _stop_reason_message(reason)
                else:
                    self.output["stopReason"] = mapped
            self._usage(as_dict(payload.get("usage")) or {}, replace=False)
        elif kind == "message_stop":
            self.stopped = True
        return []

    def feed_text(self, event: str, data: str) -> list[AssistantMessageEvent] | None:
        """``event: error`` ends the answer with its data verbatim as the message, as pi-ai reports it."""
        if event != "error":
            return None
        try:
            payload = json.loads(data)
        except ValueError:
            payload = None
        self.retryable = isinstance(payload, dict) and _retryable(cast("dict[str, Any]", payload))
        return self.fail(data)

    def end(self) -> list[AssistantMessageEvent]:
        output = self.output
        if self.started and not self.stopped:
            return self.fail("Anthropic stream ended before message_stop")
        if output["stopReason"] == "error":
            return self.fail(output.get("errorMessage") or "Provider returned an error")
        if not self.started:
            return self.fail("The Anthropic stream ended without a message")
        reason = output["stopReason"]
        assert reason in ("stop", "length", "toolUse")
        # A block the body never stopped (a proxy dropping content_block_stop) is closed here: a
        # tool call's arguments are parsed whole only when closed (they lag while streaming).
        return [*self.parts.end_all(), {"type": "done", "reason": reason, "message": output}]

    def _start(self, payload: dict[str, Any]) -> list[AssistantMessageEvent]:
        block_data = as_dict(payload.get("content_block")) or {}
        index = _block_index(payload)
        kind = block_data.get("type")
        # A start on an index still open (its content_block_stop dropped): the first block is
        # closed here, or it would stay open for good, a tool call's arguments the lagging parse;
        # whatever kind starts (a server tool's input deltas went into the open call's arguments).
        still_open = self.parts.open.get(index)
        closed = self.parts.end(still_open) if still_open is not None else []
        if kind == "text":
            block: dict[str, Any] = {"type": "text", "text": ""}
        elif kind == "thinking":
            block = {"type": "thinking", "thinking": "", "thinkingSignature": ""}
        elif kind == "redacted_thinking":
            data = as_str(block_data.get("data")) or ""
            block = {
                "type": "thinking",
                "thinking": REDACTED_TEXT,
                "thinkingSignature": data,
                "redacted": True,
            }
        elif kind == "tool_use":
            block = {
                "type": "toolCall",
                "id": as_str(block_data.get("id")) or "",
                "name": as_str(block_data.get("name")) or "",
                "arguments": as_dict(block_data.get("input")) or {},
            }
        else:
            return closed  # server tools, their results, compaction: not ours to show
        return closed + self.parts.start(index, block)

    def _delta(self, payload: dict[str, Any]) -> list[AssistantMessageEvent]:
        """The per-token event: its text, when it fits the block its ``index`` names."""
        index = payload.get("index")
        part = self.parts.open.get(index) if isinstance(index, int) else None
        delta = as_dict(payload.get("delta"))
        if part is None or delta is None:
            return []
        kind = delta.get("type")
        block_type = part.block["type"]
        if kind == "text_delta" and block_type == "text":
            text = delta.get("text")
        elif kind == "thinking_delta" and block_type == "thinking":
            text = delta.get("thinking")
        elif kind == "input_json_delta" and block_type == "toolCall":
            text = delta.get("partial_json")
            text = text if isinstance(text, str) else ""
        else:
            if kind == "signature_delta" and block_type == "thinking":
                append_text(part.block, "thinkingSignature", as_str(delta.get("signature")) or "")
            return []
        return self.parts.delta(part, text) if isinstance(text, str) else []

    def _usage(self, usage: dict[str, Any], *, replace: bool) -> None:
        """``message_start`` sets every count; ``message_delta`` overrides only those it states."""
        target = self.output["usage"]
        for ours, theirs in (
            ("input", "input_tokens"),
            ("output", "output_tokens"),
            ("cacheRead", "cache_read_input_tokens"),
            ("cacheWrite", "cache_creation_input_tokens"),
        ):
            value = usage.get(theirs)
            if replace or value is not None:
                target[ours] = as_int(value)
        target["totalTokens"] = (
            target["input"] + target["output"] + target["cacheRead"] + target["cacheWrite"]
        )
        calculate_cost(self.model, target)


def _stop_reason_message(reason: str) -> str:
    if reason == "refusal":
        return "The model refused to answer (stop_reason: refusal)"
    if reason == "sensitive":
        return "The answer was stopped by a safety filter (stop_reason: sensitive)"
    return f"Unhandled stop reason: {reason}"


def _retryable(payload: dict[str, Any]) -> bool:
    """An error that waiting may fix (overloaded, rate limit, server error)."""
    error_type = (as_dict(payload.get("error")) or {}).get("type")
    return error_type in ("overloaded_error", "api_error", "rate_limit_error")


def _error_text(payload: dict[str, Any]) -> str:
    text = provider_error_text(json.dumps(payload))
    error = as_dict(payload.get("error")) or {}
    kind = as_str(error.get("type"))
    return f"{kind}: {text}" if kind and kind not in text else text


# -- entry points ------------------------------------------------------------------------------


def stream_anthropic(
    model: ModelInfo, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    opts = options or AnthropicOptions()
    return stream_http(model, opts, lambda key: build_request(model, context, opts, key), AnthropicParser)


def stream_simple_anthropic(
    model: ModelInfo, context: Context, options: SimpleStreamOptions | None = None
) -> AssistantMessageEventStream:
    fields = base_fields(model, options)
    effort = effective_effort(model, options.reasoning if options else None)
    if effort is None:
        return stream_anthropic(model, context, AnthropicOptions(**fields, thinking_enabled=False))
    if supports_adaptive_thinking(model):
        mapped = {"minimal": "low", "low": "low"}.get(effort, effort)
        return stream_anthropic(
            model, context, AnthropicOptions(**fields, thinking_enabled=True, effort=mapped)
        )
    # Budget-based thinking: the budget comes out of max_tokens, so leave room for the answer.
    plan = plan_thinking_budget(model, effort, fields.get("max_tokens") or 0)
    fields["max_tokens"] = plan.max_tokens
    if plan.budget_tokens < MIN_BUDGET_TOKENS:  # no room to think within the model's limit
        return stream_anthropic(model, context, AnthropicOptions(**fields, thinking_enabled=False))
    return stream_anthropic(
        model,
        context,
        AnthropicOptions(**fields, thinking_enabled=True, thinking_budget_tokens=plan.budget_tokens),
    )


PROVIDER = ApiProvider(API, stream_anthropic, stream_simple_anthropic)


def _block_index(payload: dict[str, Any]) -> int:
    """A block's ``index`` as the deltas read it (any int), 0 when it is none."""
    index = payload.get("index")
    return index if type(index) is int else 0
