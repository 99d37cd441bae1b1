"""The Chat Completions parser as a pure state machine, against quirks of real servers."""

from __future__ import annotations

import json
from typing import Any, cast

from tether.ai import new_assistant_message
from tether.ai.providers.openai_completions import OpenAICompletionsParser
from tether.ai.sse import SSEDecoder
from tether.wire import AssistantMessageEvent, ModelInfo

MODEL: ModelInfo = {
    "id": "llama3",
    "name": "llama3",
    "api": "openai-completions",
    "provider": "ollama",
    "baseUrl": "http://localhost:11434/v1",
    "reasoning": False,
    "input": ["text"],
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    "contextWindow": 8000,
    "maxTokens": 2000,
}


def run(*chunks: dict[str, Any]) -> tuple[list[AssistantMessageEvent], dict[str, Any]]:
    parser = OpenAICompletionsParser(MODEL, new_assistant_message(MODEL))
    events: list[AssistantMessageEvent] = []
    for chunk in chunks:
        events += parser.feed("message", chunk)
    events += parser.end()
    return events, cast("dict[str, Any]", parser.output)


def delta(finish: str | None = None, usage: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "delta": fields, "finish_reason": finish}
    if usage is not None:
        choice["usage"] = usage
    return {"id": "chat-1", "model": "llama3", "choices": [choice]}


def call(
    index: int | None = None, id: str | None = None, name: str | None = None, args: str | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"function": {}}
    if index is not None:
        out["index"] = index
    if id is not None:
        out["id"] = id
    if name is not None:
        out["function"]["name"] = name
    if args is not None:
        out["function"]["arguments"] = args
    return out


def calls(message: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(b["id"], b["name"], b["arguments"]) for b in message["content"] if b["type"] == "toolCall"]


def test_ollama_parallel_calls_all_at_index_0_with_different_ids() -> None:
    _, message = run(
        delta(tool_calls=[call(0, "call_a", "read", '{"path": "a"}')]),
        delta(tool_calls=[call(0, "call_b", "read", '{"path": "b"}')]),
        delta(finish="tool_calls"),
    )
    assert calls(message) == [("call_a", "read", {"path": "a"}), ("call_b", "read", {"path": "b"})]
    assert message["stopReason"] == "toolUse"


def test_llama_cpp_repeats_id_and_name_in_every_fragment() -> None:
    _, message = run(
        delta(tool_calls=[call(0, "c1", "write", '{"text": "he')]),
        delta(tool_calls=[call(0, "c1", "write", 'llo"}')]),
        delta(finish="tool_calls"),
    )
    assert calls(message) == [("c1", "write", {"text": "hello"})]


def test_missing_ids_are_generated_unique_and_stable() -> None:
    events, message = run(
        delta(tool_calls=[call(0, None, "a", "{}")]),
        delta(tool_calls=[call(1, None, "b", "{}")]),
        delta(finish="tool_calls"),
    )
    ids = [c[0] for c in calls(message)]
    assert all(ids) and len(set(ids)) == 2
    ends = [e["toolCall"]["id"] for e in events if e["type"] == "toolcall_end"]
    assert ends == ids


def test_arguments_only_in_the_last_chunk() -> None:
    _, message = run(
        delta(tool_calls=[call(0, "c1", "f")]),
        delta(tool_calls=[call(0, None, None, '{"x": [1, 2]}')], finish="tool_calls"),
    )
    assert calls(message) == [("c1", "f", {"x": [1, 2]})]


def test_deprecated_function_call_delta() -> None:
    _, message = run(
        delta(function_call={"name": "lookup", "arguments": '{"q": '}),
        delta(function_call={"arguments": '"tea"}'}),
        delta(finish="function_call"),
    )
    assert [(c[1], c[2]) for c in calls(message)] == [("lookup", {"q": "tea"})]


def test_usage_inside_the_choice_and_reasoning_fields() -> None:
    events, message = run(
        delta(reasoning="think "),
        delta(reasoning_content="more"),  # first non-empty field per chunk, one thinking block
        delta(content="answer"),
        delta(
            finish="stop",
            usage={
                "prompt_tokens": 10,
                "completion_tokens": 4,
                "completion_tokens_details": {"reasoning_tokens": 3},
            },
        ),
    )
    assert [b["type"] for b in message["content"]] == ["thinking", "text"]
    assert message["content"][0]["thinking"] == "think more"
    assert message["usage"]["input"] == 10 and message["usage"]["output"] == 4
    assert message["usage"]["reasoningTokens"] == 3
    # Like the reference, blocks close only at the end of the stream.
    assert [e["type"] for e in events][-3:] == ["thinking_end", "text_end", "done"]


def test_unknown_finish_reason_is_an_error_after_closing_blocks() -> None:
    events, message = run(delta(content="partial"), delta(finish="content_filter"))
    assert message["stopReason"] == "error"
    assert message["errorMessage"] == "Provider finish_reason: content_filter"
    assert [e["type"] for e in events][-2:] == ["text_end", "error"]


def test_openrouter_error_with_raw_metadata() -> None:
    chunk = {
        "id": "x",
        "error": {"message": "Provider returned error", "metadata": {"raw": "upstream said no"}},
    }
    _, message = run(chunk)
    assert message["errorMessage"] == "Provider returned error\nupstream said no"


def test_keep_alive_comments_between_events() -> None:
    decoder = SSEDecoder()
    body = b': keep-alive\n\ndata: {"a":1}\n\n: keep-alive\n\n'
    assert [e.data for e in decoder.feed(body)] == ['{"a":1}']


def test_an_emoji_cut_between_two_argument_deltas_reaches_the_tool_whole() -> None:
    """Each event's JSON is decoded alone, so a UTF-16 pair its escapes cut in two (``\\ud83d``,
    then ``\\ude00``) comes as two lone surrogates: the arguments' parse raised
    UnicodeEncodeError and the reply failed, its call's arguments ``{}``."""
    first = json.loads(r'"{\"text\": \"smile \ud83d"')
    second = json.loads(r'"\ude00!\"}"')
    _, message = run(
        delta(tool_calls=[call(0, "c1", "write", first)]),
        delta(tool_calls=[call(0, args=second)]),
        delta(finish="tool_calls"),
    )
    assert message["stopReason"] == "toolUse"
    assert calls(message) == [("c1", "write", {"text": "smile \U0001f600!"})]
