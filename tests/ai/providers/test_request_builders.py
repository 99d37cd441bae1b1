"""Request builders of openai-responses and google-generative-ai (pure functions: no network)."""

from __future__ import annotations

import json
from typing import Any, cast

from tether.ai.handoff import TOOL_IMAGE_PLACEHOLDER, USER_IMAGE_PLACEHOLDER
from tether.ai.providers import gemini, openai_responses
from tether.ai.providers.gemini_schema import gemini_schema
from tether.ai.types import Context, StreamOptions
from tether.wire import Message, ModelInfo

PNG = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}


def model(
    api: str, model_id: str, provider: str, *, reasoning: bool = True, vision: bool = True
) -> ModelInfo:
    return {
        "id": model_id,
        "name": model_id,
        "api": api,
        "provider": provider,
        "baseUrl": "https://api.example.test/v1",
        "reasoning": reasoning,
        "input": ["text", "image"] if vision else ["text"],
        "cost": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 1000,
        "maxTokens": 100,
    }


GPT = model("openai-responses", "gpt-5", "openai")
GEMINI3 = model("google-generative-ai", "gemini-3-pro-preview", "google")
GEMINI25 = model("google-generative-ai", "gemini-2.5-flash", "google")


def assistant(source: ModelInfo, content: list[dict[str, Any]], stop: str = "toolUse") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "api": source["api"],
        "provider": source["provider"],
        "model": source["id"],
        "usage": {
            "input": 0,
            "output": 0,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 0,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
        "stopReason": stop,
        "timestamp": 1,
    }


def result(call_id: str, text: str, *, error: bool = False, images: int = 0) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": "look",
        "content": [{"type": "text", "text": text}, *[PNG] * images],
        "isError": error,
        "timestamp": 2,
    }


def context(*messages: dict[str, Any], **extra: Any) -> Context:
    return cast(Context, {"messages": cast(list[Message], list(messages)), **extra})


USER = {"role": "user", "content": [{"type": "text", "text": "look"}, PNG], "timestamp": 0}
TOOL = {
    "name": "look",
    "description": "Look.",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
}


# -- openai-responses -------------------------------------------------------------------------------


def test_responses_body_basics() -> None:
    options = StreamOptions(
        session_id="sess-1", max_tokens=50, temperature=0.2, service_tier="flex", tool_choice="auto"
    )
    ctx = context(USER, systemPrompt="Be brief.", volatileContext="Now: Monday.", tools=[TOOL])
    request = openai_responses.build_request(GPT, ctx, options, "key")
    body = request.body
    assert request.url == "https://api.example.test/v1/responses"
    assert request.headers["authorization"] == "Bearer key"
    assert (body["store"], body["stream"], body["prompt_cache_key"]) == (False, True, "sess-1")
    assert (body["max_output_tokens"], body["temperature"], body["service_tier"]) == (50, 0.2, "flex")
    assert body["tools"] == [
        {
            "type": "function",
            "name": "look",
            "description": "Look.",
            "parameters": TOOL["parameters"],
            "strict": False,
        }
    ]
    assert body["tool_choice"] == "auto"
    assert body["input"][0] == {"role": "developer", "content": "Be brief."}
    assert body["input"][1]["content"][1] == {
        "type": "input_image",
        "detail": "auto",
        "image_url": "data:image/png;base64,iVBORw0KGgo=",
    }
    assert body["input"][-1] == {"role": "developer", "content": "Now: Monday."}  # after the cacheable prefix


def test_responses_prompt_cache_options() -> None:
    ctx = context(USER)
    assert "prompt_cache_key" not in openai_responses.build_request(GPT, ctx, StreamOptions(), None).body
    off = StreamOptions(session_id="s", cache_retention="none")
    assert "prompt_cache_key" not in openai_responses.build_request(GPT, ctx, off, None).body
    long = StreamOptions(session_id="s", cache_retention="long")
    assert openai_responses.build_request(GPT, ctx, long, None).body["prompt_cache_retention"] == "24h"


def test_responses_replays_its_own_items_and_not_others() -> None:
    reasoning: dict[str, Any] = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [],
        "encrypted_content": "gAAA",
    }
    own = assistant(
        GPT,
        [
            {"type": "thinking", "thinking": "", "thinkingSignature": json.dumps(reasoning)},
            {
                "type": "text",
                "text": "Let me look.",
                "textSignature": '{"v":1,"id":"msg_1","phase":"commentary"}',
            },
            {"type": "toolCall", "id": "call_1|fc_1", "name": "look", "arguments": {"q": "x"}},
        ],
    )
    other = assistant(
        model("openai-responses", "gpt-5-mini", "openai"),
        [
            {
                "type": "thinking",
                "thinking": "hmm",
                "thinkingSignature": json.dumps({**reasoning, "id": "rs_2"}),
            },
            {"type": "toolCall", "id": "call_2|fc_2", "name": "look", "arguments": {}},
        ],
    )
    ctx = context(USER, own, result("call_1|fc_1", "seen", images=1), other, result("call_2|fc_2", "x"))
    items = openai_responses.build_request(GPT, ctx, StreamOptions(), None).body["input"]
    assert items[1] == reasoning
    assert items[2] == {
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "id": "msg_1",
        "phase": "commentary",
        "content": [{"type": "output_text", "text": "Let me look.", "annotations": []}],
    }
    assert items[3] == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "look",
        "arguments": '{"q": "x"}',
        "id": "fc_1",
    }
    assert items[4]["type"] == "function_call_output" and items[4]["call_id"] == "call_1"
    assert [p["type"] for p in items[4]["output"]] == ["input_text", "input_image"]
    # Another model's reasoning is not sent (pi 1.6) and its call carries no item id.
    assert items[5] == {"type": "function_call", "call_id": "call_2", "name": "look", "arguments": "{}"}


def test_images_for_a_text_only_model_are_placeholders() -> None:
    blind = model("openai-responses", "gpt-blind", "openai", vision=False)
    own = assistant(blind, [{"type": "toolCall", "id": "call_1|fc_1", "name": "look", "arguments": {}}])
    ctx = context(USER, own, result("call_1|fc_1", "", images=1))
    items = openai_responses.build_request(blind, ctx, StreamOptions(), None).body["input"]
    placeholder = {"type": "input_text", "text": USER_IMAGE_PLACEHOLDER}
    assert items[0]["content"] == [{"type": "input_text", "text": "look"}, placeholder]
    assert items[-1]["output"] == TOOL_IMAGE_PLACEHOLDER
    gemini_blind = model("google-generative-ai", "gemini-2.5-flash", "google", vision=False)
    contents = gemini.build_request(gemini_blind, ctx, StreamOptions(), None).body["contents"]
    assert contents[0]["parts"][1] == {"text": USER_IMAGE_PLACEHOLDER}
    assert contents[2]["parts"][0]["functionResponse"]["response"] == {"output": TOOL_IMAGE_PLACEHOLDER}


# -- gemini ------------------------------------------------------------------------------------------


def test_gemini_body_basics() -> None:
    options = StreamOptions(max_tokens=50, temperature=0.3, tool_choice="required")
    ctx = context(USER, systemPrompt="Be brief.", tools=[TOOL])
    request = gemini.build_request(GEMINI3, ctx, options, "key")
    body = request.body
    assert (
        request.url == "https://api.example.test/v1/models/gemini-3-pro-preview:streamGenerateContent?alt=sse"
    )
    assert request.headers["x-goog-api-key"] == "key"
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert body["generationConfig"] == {"temperature": 0.3, "maxOutputTokens": 50}
    assert body["contents"][0] == {
        "role": "user",
        "parts": [{"text": "look"}, {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}],
    }
    assert body["tools"] == [
        {"functionDeclarations": [{"name": "look", "description": "Look.", "parameters": TOOL["parameters"]}]}
    ]
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}


def test_gemini_signatures_stay_on_their_parts_and_foreign_calls_get_the_placeholder() -> None:
    own = assistant(
        GEMINI3,
        [
            {"type": "thinking", "thinking": "plan", "thinkingSignature": "c2lnMQ=="},
            {"type": "text", "text": "", "textSignature": "c2lnMg=="},
            {
                "type": "toolCall",
                "id": "a",
                "name": "look",
                "arguments": {"q": 1},
                "thoughtSignature": "c2lnMw==",
            },
            {"type": "toolCall", "id": "b", "name": "look", "arguments": {"q": 2}},
        ],
    )
    foreign = assistant(
        GPT,
        [
            {
                "type": "toolCall",
                "id": "call_9|fc_9",
                "name": "look",
                "arguments": {},
                "thoughtSignature": "x",
            },
            {"type": "toolCall", "id": "call_8|fc_8", "name": "look", "arguments": {}},
        ],
    )
    ctx = context(
        USER, own, result("a", "1"), result("b", "2", error=True), foreign, result("call_9|fc_9", "9")
    )
    contents = gemini.build_request(GEMINI3, ctx, StreamOptions(), None).body["contents"]
    assert contents[1]["parts"] == [
        {"thought": True, "text": "plan", "thoughtSignature": "c2lnMQ=="},
        {"text": "", "thoughtSignature": "c2lnMg=="},
        {"functionCall": {"name": "look", "args": {"q": 1}}, "thoughtSignature": "c2lnMw=="},
        {"functionCall": {"name": "look", "args": {"q": 2}}},
    ]
    # Both results answer in one user turn; an error result says so.
    assert contents[2] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "look", "response": {"output": "1"}}},
            {"functionResponse": {"name": "look", "response": {"error": "2"}}},
        ],
    }
    assert contents[3]["parts"][0]["thoughtSignature"] == gemini.SKIP_SIGNATURE
    assert "thoughtSignature" not in contents[3]["parts"][1]
    # The unanswered foreign call got the handoff's synthetic error result.
    assert contents[4]["parts"][1] == {
        "functionResponse": {"name": "look", "response": {"error": "No result provided"}}
    }


def test_gemini_2_5_gets_tool_images_in_a_turn_of_their_own_and_no_placeholder_signature() -> None:
    call = assistant(GPT, [{"type": "toolCall", "id": "call_1|fc_1", "name": "look", "arguments": {}}])
    contents = gemini.build_request(
        GEMINI25, context(USER, call, result("call_1|fc_1", "pic", images=1)), StreamOptions(), None
    ).body["contents"]
    assert "thoughtSignature" not in contents[1]["parts"][0]
    assert contents[2]["parts"] == [{"functionResponse": {"name": "look", "response": {"output": "pic"}}}]
    assert contents[3] == {
        "role": "user",
        "parts": [
            {"text": "Tool result image:"},
            {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
        ],
    }
    nested = gemini.build_request(
        GEMINI3, context(USER, call, result("call_1|fc_1", "pic", images=1)), StreamOptions(), None
    ).body["contents"]
    assert nested[2]["parts"][0]["functionResponse"]["parts"] == [
        {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}
    ]


# -- gemini tool schemas -------------------------------------------------------------------------------


def test_schema_keeps_what_gemini_accepts() -> None:
    schema = {
        "type": "object",
        "title": "Args",
        "properties": {
            "path": {"type": "string", "description": "File.", "minLength": 1},
            "when": {"type": "string", "format": "date-time"},
            "mode": {"type": "string", "enum": ["r", "w"]},
            "count": {"type": "integer", "format": "int64", "minimum": 0, "maximum": 9},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        },
        "required": ["path"],
    }
    assert gemini_schema(schema) == schema


def test_schema_drops_and_rewrites_what_gemini_rejects() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
        "properties": {
            "at": {"$ref": "#/$defs/Point", "description": "Where."},
            "name": {"type": ["string", "null"], "format": "uuid"},
            "kind": {"const": "circle"},
            "size": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "level": {"enum": [1, 2, "three"]},
            "both": {
                "allOf": [
                    {"$ref": "#/$defs/Point"},
                    {"properties": {"y": {"type": "number"}}, "required": ["y"]},
                ]
            },
        },
        "required": ["at", "missing"],
    }
    assert gemini_schema(schema) == {
        "type": "object",
        "properties": {
            "at": {
                "type": "object",
                "properties": {"x": {"type": "number"}},
                "required": ["x"],
                "description": "Where.",
            },
            "name": {"type": "string", "nullable": True},
            "kind": {"enum": ["circle"], "type": "string"},
            "size": {"type": "integer", "nullable": True, "default": None},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "level": {"enum": ["three"]},
            "both": {
                "type": "object",
                "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                "required": ["x", "y"],
            },
        },
        "required": ["at"],
    }


def test_schema_recursion_and_empty_parameters() -> None:
    tree = {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
            }
        },
        "$ref": "#/$defs/Node",
    }
    reduced = gemini_schema(tree)
    assert reduced == {
        "type": "object",
        "properties": {"kids": {"type": "array", "items": {"type": "object"}}},
    }
    assert gemini_schema({"type": "object", "properties": {}, "additionalProperties": False}) is None
    assert gemini_schema({"type": "object"}) is None
