"""Property tests of the handoff rules (tether.ai.handoff): random transcripts written by a mix of
models, replayed on every target. Each test states one rule of issue 7; the last, that every
provider's request is the transcript as it is when the request is built."""

from __future__ import annotations

import copy
import marshal
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from narrowing import block_text
from tether.ai import Context, StreamOptions, encode_request
from tether.ai.handoff import NO_RESULT_TEXT, is_same_model, transform_messages
from tether.ai.providers import anthropic, gemini, openai_completions, openai_responses
from tether.wire import (
    AssistantContent,
    AssistantMessage,
    ImageContent,
    Message,
    ModelInfo,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
)

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def model(provider: str, api: str, model_id: str, base_url: str = "https://example.invalid") -> ModelInfo:
    return {
        "id": model_id,
        "name": model_id,
        "api": api,
        "provider": provider,
        "baseUrl": base_url,
        "reasoning": True,
        "input": ["text", "image"],
        "cost": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 100000,
        "maxTokens": 8000,
    }


MODELS = [
    model("anthropic", "anthropic-messages", "claude-sonnet-4-5"),
    model("anthropic", "anthropic-messages", "claude-opus-4-1"),
    model("openai", "openai-responses", "gpt-5"),
    model("openai", "openai-responses", "gpt-5-mini"),
    model("openai", "openai-completions", "gpt-4.1"),
    model("google", "google-generative-ai", "gemini-2.5-pro"),
    model("google", "google-generative-ai", "gemini-3-pro-preview"),
    model("mistral", "openai-completions", "mistral-large-latest", "https://api.mistral.ai/v1"),
    model("openrouter", "openai-completions", "moonshotai/kimi-k2"),
]

ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
WEIRD = ALNUM + "+/=.:|-_ "
STOP_REASONS: list[StopReason] = ["stop", "toolUse", "toolUse", "length", "error", "aborted"]

ID_RULES = {
    "anthropic-messages": re.compile(r"[A-Za-z0-9_-]{1,64}"),
    "google-generative-ai": re.compile(r"[A-Za-z0-9_-]{1,64}"),
    "openai-responses": re.compile(r"[A-Za-z0-9_-]{1,64}\|fc[A-Za-z0-9_-]{0,62}"),
    "openai-completions": re.compile(r"[A-Za-z0-9_-]{1,40}"),
    "mistral": re.compile(r"[A-Za-z0-9]{9}"),
}


def id_rule(target: ModelInfo) -> re.Pattern[str]:
    return ID_RULES["mistral" if target["provider"] == "mistral" else target["api"]]


@st.composite
def natural_id(draw: st.DrawFn, source: ModelInfo) -> str:
    """A tool-call id shaped like the ones ``source`` really issues (some are hostile to others)."""
    api, provider = source["api"], source["provider"]
    if provider == "mistral":
        return draw(st.text(ALNUM, min_size=9, max_size=9))
    if api == "anthropic-messages":
        return "toolu_" + draw(st.text(ALNUM, min_size=1, max_size=24))
    if api == "openai-responses":
        item = draw(st.sampled_from(["fc_", "fc_", "rs_weird+/"])) + draw(
            st.text(WEIRD, min_size=1, max_size=120)
        )
        return "call_" + draw(st.text(ALNUM, min_size=1, max_size=24)) + "|" + item
    if api == "google-generative-ai":
        return (
            draw(st.sampled_from(["get_weather", "search"])) + "_" + draw(st.text("0123456789_", max_size=20))
        )
    if provider == "openrouter":
        return (
            "functions."
            + draw(st.sampled_from(["get", "put"]))
            + ":"
            + draw(st.text("0123456789", max_size=3))
        )
    return "call_" + draw(st.text(ALNUM, min_size=1, max_size=60))


@st.composite
def assistant_turn(draw: st.DrawFn, timestamp: int) -> tuple[AssistantMessage, list[ToolResultMessage]]:
    """An assistant message plus the tool results that follow it (some missing, some stray)."""
    source = draw(st.sampled_from(MODELS))
    content: list[AssistantContent] = []
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["text", "thinking", "redacted", "redactedThinking", "toolCall"]))
        sig = draw(st.one_of(st.none(), st.just(""), st.text(WEIRD, min_size=1, max_size=20)))
        if kind == "text":
            text: TextContent = {"type": "text", "text": draw(st.text(max_size=20))}
            if sig is not None:
                text["textSignature"] = sig
            content.append(text)
        elif kind == "thinking":
            thinking: ThinkingContent = {
                "type": "thinking",
                "thinking": draw(st.sampled_from(["", "  ", "hmm", "plan: x"])),
            }
            if sig is not None:
                thinking["thinkingSignature"] = sig
            content.append(thinking)
        elif kind == "redacted":
            # how the Anthropic parser records a redacted block: the open record's extra
            # `redacted` key, which ThinkingContent does not declare (hence the ignore)
            content.append(
                {
                    "type": "thinking",
                    "thinking": "[Reasoning redacted]",
                    "thinkingSignature": "opaque",
                    "redacted": True,  # type: ignore[typeddict-unknown-key]
                }
            )
        elif kind == "redactedThinking":
            content.append({"type": "redactedThinking", "data": "opaque"})
        else:
            call: ToolCall = {
                "type": "toolCall",
                "id": draw(natural_id(source)),
                "name": draw(st.sampled_from(["get", "put"])),
                "arguments": {"n": draw(st.integers(0, 3))},
            }
            if sig is not None:
                call["thoughtSignature"] = sig
            content.append(call)
    # A provider never repeats an id inside one message.
    seen: set[str] = set()
    content = [b for b in content if b["type"] != "toolCall" or not (b["id"] in seen or seen.add(b["id"]))]
    message: AssistantMessage = {
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
        "stopReason": draw(st.sampled_from(STOP_REASONS)),
        "timestamp": timestamp,
    }
    results: list[ToolResultMessage] = []
    for call in [b for b in content if b["type"] == "toolCall"]:
        if draw(st.booleans()):
            results.append(tool_result(call["id"], call["name"], timestamp + 1))
    if draw(st.integers(0, 9)) == 0:
        results.append(tool_result("stray_" + str(timestamp), "get", timestamp + 1))
    return message, draw(st.permutations(results))


def tool_result(call_id: str, name: str, timestamp: int) -> ToolResultMessage:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": f"result of {call_id}"}],
        "isError": False,
        "timestamp": timestamp,
    }


@st.composite
def transcripts(draw: st.DrawFn) -> list[Message]:
    messages: list[Message] = [{"role": "user", "content": "hi", "timestamp": 0}]
    for turn in range(draw(st.integers(1, 6))):
        message, results = draw(assistant_turn(timestamp=10 * (turn + 1)))
        messages.append(message)
        messages.extend(results)
        if draw(st.booleans()):
            messages.append({"role": "user", "content": "next", "timestamp": 10 * (turn + 1) + 5})
    return messages


targets = st.sampled_from(MODELS)


def tool_calls(message: AssistantMessage) -> list[ToolCall]:
    return [b for b in message["content"] if b["type"] == "toolCall"]


def kept_turns(messages: list[Message]) -> list[AssistantMessage]:
    """The assistant turns a handoff keeps: every one that did not fail."""
    return [m for m in messages if m["role"] == "assistant" and m["stopReason"] not in ("error", "aborted")]


def transform(messages: list[Message], target: ModelInfo) -> list[Message]:
    return transform_messages(messages, target)


def same_model(message: AssistantMessage, target: ModelInfo) -> bool:
    return is_same_model(message, target)


# -- the rules: each gets a random transcript, the target and the transform's output ------------


def output_is_deterministic(messages: list[Message], target: ModelInfo, out: list[Message]) -> None:
    assert transform(copy.deepcopy(messages), target) == out


def failed_turns_are_dropped(messages: list[Message], target: ModelInfo, out: list[Message]) -> None:
    got = [m for m in out if m["role"] == "assistant"]
    assert [m["timestamp"] for m in got] == [m["timestamp"] for m in kept_turns(messages)]


def every_tool_call_gets_exactly_one_result_before_the_next_turn(
    messages: list[Message], target: ModelInfo, out: list[Message]
) -> None:
    open_calls: dict[str, int] = {}
    end: Message = {"role": "user", "content": "end", "timestamp": 10**9}
    for message in [*out, end]:
        if message["role"] == "toolResult":
            assert open_calls.get(message["toolCallId"]) == 0, "result without a pending call, or twice"
            open_calls[message["toolCallId"]] = 1
        else:
            assert all(n == 1 for n in open_calls.values()), "a tool call was left without a result"
            open_calls = {}
            if message["role"] == "assistant":
                open_calls = {c["id"]: 0 for c in tool_calls(message)}


def missing_results_are_synthetic_errors_and_real_results_keep_their_content(
    messages: list[Message], target: ModelInfo, out: list[Message]
) -> None:
    real = {block_text(m["content"][0]) for m in messages if m["role"] == "toolResult"}
    for message in out:
        if message["role"] != "toolResult":
            continue
        text = block_text(message["content"][0])
        if message["isError"]:
            assert text == NO_RESULT_TEXT
        else:
            assert text in real


def tool_call_ids_fit_the_target_api(messages: list[Message], target: ModelInfo, out: list[Message]) -> None:
    rule = id_rule(target)
    for message in out:
        if message["role"] == "assistant" and not same_model(message, target):
            for call in tool_calls(message):
                assert rule.fullmatch(call["id"]), (target["api"], call["id"])


def results_follow_their_call_through_the_id_rewrite(
    messages: list[Message], target: ModelInfo, out: list[Message]
) -> None:
    """A real result for original call X answers the rewritten id of X (and no other call)."""
    # Pair original and rewritten calls turn by turn (turns keep their order and calls theirs).
    kept_out = [m for m in out if m["role"] == "assistant"]
    renamed: dict[tuple[float, str], str] = {}
    for m_in, m_out in zip(kept_turns(messages), kept_out, strict=True):
        for c_in, c_out in zip(tool_calls(m_in), tool_calls(m_out), strict=True):
            assert (c_in["name"], c_in["arguments"]) == (c_out["name"], c_out["arguments"])
            renamed[(m_in["timestamp"], c_in["id"])] = c_out["id"]
    for message in out:
        if message["role"] == "toolResult" and not message["isError"]:
            original = block_text(message["content"][0]).removeprefix("result of ")
            turn = message["timestamp"] - 1
            assert renamed[(turn, original)] == message["toolCallId"]


def rewritten_ids_are_unique_across_the_conversation(
    messages: list[Message], target: ModelInfo, out: list[Message]
) -> None:
    rewritten = [
        c["id"] for m in out if m["role"] == "assistant" and not same_model(m, target) for c in tool_calls(m)
    ]
    assert len(rewritten) == len(set(rewritten))


def same_model_content_is_replayed_verbatim(
    messages: list[Message], target: ModelInfo, out: list[Message]
) -> None:
    """Everything from the same model survives unchanged, except unsigned thinking with no text."""
    by_time = {m["timestamp"]: m for m in out if m["role"] == "assistant"}
    for message in kept_turns(messages):
        if not same_model(message, target):
            continue
        expected = [
            b
            for b in message["content"]
            if not (
                b["type"] == "thinking"
                and not b.get("thinkingSignature")
                and not b.get("redacted")
                and not b["thinking"].strip()
            )
        ]
        assert by_time[message["timestamp"]]["content"] == expected


def foreign_content_loses_signatures_and_thinking(
    messages: list[Message], target: ModelInfo, out: list[Message]
) -> None:
    """Another model's text goes without its signature; its thinking not at all (pi 1.6)."""
    by_time = {m["timestamp"]: m for m in out if m["role"] == "assistant"}
    for message in kept_turns(messages):
        if same_model(message, target):
            continue
        got = by_time[message["timestamp"]]["content"]
        for block in got:
            assert block["type"] in ("text", "toolCall")
            assert not {"textSignature", "thinkingSignature", "thoughtSignature"} & block.keys()
        expected_texts = [b["text"] for b in message["content"] if b["type"] == "text"]
        assert [b["text"] for b in got if b["type"] == "text"] == expected_texts


def a_longer_history_rewrites_its_prefix_the_same_way(
    messages: list[Message], target: ModelInfo, out: list[Message]
) -> None:
    """Ids depend only on what came before, so a cached prompt prefix stays byte-identical."""
    cut = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
    prefix = transform(messages[:cut], target)

    def ids(ms: list[Message]) -> list[str]:
        return [c["id"] for m in ms if m["role"] == "assistant" for c in tool_calls(m)]

    assert ids(out)[: len(ids(prefix))] == ids(prefix)


Rule = Callable[[list[Message], ModelInfo, list[Message]], None]
RULES: list[Rule] = [
    output_is_deterministic,
    failed_turns_are_dropped,
    every_tool_call_gets_exactly_one_result_before_the_next_turn,
    missing_results_are_synthetic_errors_and_real_results_keep_their_content,
    tool_call_ids_fit_the_target_api,
    results_follow_their_call_through_the_id_rewrite,
    rewritten_ids_are_unique_across_the_conversation,
    same_model_content_is_replayed_verbatim,
    foreign_content_loses_signatures_and_thinking,
    a_longer_history_rewrites_its_prefix_the_same_way,
]


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.__name__)
@SETTINGS
@given(messages=transcripts(), target=targets)
def test_handoff_rule(rule: Rule, messages: list[Message], target: ModelInfo) -> None:
    """Each rule on its own random transcripts; no rule may modify the caller's input."""
    before = copy.deepcopy(messages)
    out = transform(messages, target)
    assert messages == before
    rule(messages, target, out)


def test_images_become_placeholders_for_a_text_only_model() -> None:
    target: ModelInfo = {**MODELS[0], "input": ["text"]}
    image: ImageContent = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    messages: list[Message] = [
        {"role": "user", "content": [{"type": "text", "text": "look"}, image, image], "timestamp": 1},
    ]
    out = transform_messages(messages, target)
    assert out[0]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "text", "text": "(image omitted: model does not support images)"},
    ]
    assert transform_messages(messages, MODELS[0])[0]["content"] == messages[0]["content"]


# -- every request from the transcript as it is now ---------------------------------------------
# The loop sends the whole transcript with every request, and the transcript changes between
# requests in place: a ``transform_context`` hook or a caller edits messages, a turn is replaced,
# the model switches. A request built from anything kept from an earlier one (a cache of converted
# messages, say) would send what the transcript said then: no error, just another conversation.
# So each request of a growing, edited transcript must be, byte for byte, the request built from
# a deep copy of it, and building one must leave the transcript as it was.

BUILDERS = {
    "anthropic-messages": anthropic.build_request,
    "openai-responses": openai_responses.build_request,
    "openai-completions": openai_completions.build_request,
    "google-generative-ai": gemini.build_request,
}
TEXT_ONLY: ModelInfo = {**MODELS[4], "input": ["text"]}  # images become placeholders
REQUEST_TARGETS = [
    *MODELS,
    TEXT_ONLY,
    model("openrouter", "openai-completions", "anthropic/claude-sonnet-4-5"),  # marks cache breakpoints
]


def request_bytes(target: ModelInfo, messages: list[Message]) -> bytes:
    context: Context = {"systemPrompt": "be brief", "messages": messages, "tools": []}
    return encode_request(BUILDERS[target["api"]](target, context, StreamOptions(), "key")).content


def edit_in_place(data: st.DataObject, messages: list[Message]) -> None:
    """Change one thing in one message of ``messages`` in place, as a hook or a caller may: one of
    every edit that applies to the transcript, each as likely (a tool call's arguments, for one,
    are edited as often as a whole message is)."""
    edits: list[Callable[[], None]] = []
    for message in messages:
        if message["role"] == "user":
            edits.append(lambda m=message: m.update(content=[{"type": "text", "text": "edited"}, IMAGE]))
            edits.append(lambda m=message: m.update(content=str(m["content"]) + "!"))
        elif message["role"] == "toolResult":
            edits.append(lambda m=message: m["content"].append(data.draw(st.sampled_from(RESULT_BLOCKS))))
            edits.append(lambda m=message: m.update(isError=not m["isError"]))
        else:
            edits.append(
                lambda m=message: m.update(stopReason="error" if m["stopReason"] != "error" else "stop")
            )
            edits.append(lambda m=message: m["content"].append({"type": "text", "text": "appended"}))
            edits.append(lambda m=message: switch_source(m, data.draw(st.sampled_from(MODELS))))
            for block in message["content"]:
                if block["type"] == "toolCall":
                    edits.append(lambda b=block: edit_arguments(b["arguments"], data))
                elif block["type"] == "text":
                    edits.append(lambda b=block: b.update(text=b["text"] + "!"))
    data.draw(st.sampled_from(edits))()


def edit_arguments(arguments: dict[str, Any], data: st.DataObject) -> None:
    old = arguments["n"]  # 1 -> True, 1 -> 1.0: equal in Python, not in JSON
    arguments["n"] = data.draw(
        st.sampled_from([float(old), *([bool(old)] if old in (0, 1) else []), old + 1])
    )


def switch_source(message: AssistantMessage, source: ModelInfo) -> None:
    message["provider"], message["api"], message["model"] = source["provider"], source["api"], source["id"]


IMAGE: ImageContent = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
RESULT_BLOCKS: list[TextContent | ImageContent] = [{"type": "text", "text": "more"}, IMAGE]


@settings(SETTINGS, max_examples=300)
@given(messages=transcripts(), data=st.data())
def test_each_request_is_built_from_the_transcript_as_it_is_then(
    messages: list[Message], data: st.DataObject
) -> None:
    """The transcript grows as the loop's does (by the same message objects); after each request
    some of its messages are edited and the request built again; now and then the model switches."""
    live: list[Message] = []
    target = data.draw(st.sampled_from(REQUEST_TARGETS))
    if data.draw(st.booleans()):  # the target wrote the whole conversation: its turns go as they are
        for message in messages:
            if message["role"] == "assistant":
                switch_source(message, target)
    for index, message in enumerate(messages):
        live.append(message)
        if index < len(messages) - 1 and not data.draw(st.booleans()):
            continue
        request_is_the_transcript_now(target, live)
        for _ in range(data.draw(st.integers(0, 3))):
            edit_in_place(data, live)
            request_is_the_transcript_now(target, live)
        if data.draw(st.integers(0, 3)) == 0:
            target = data.draw(st.sampled_from(REQUEST_TARGETS))


def request_is_the_transcript_now(target: ModelInfo, live: list[Message]) -> None:
    before = marshal.dumps(live, 2)  # version 2: types and values only (True is not 1)
    sent = request_bytes(target, live)
    assert marshal.dumps(live, 2) == before
    assert sent == request_bytes(target, copy.deepcopy(live))
