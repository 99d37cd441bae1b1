"""The local provider's text-to-events state machine (pure: runs without llama-cpp)."""

from __future__ import annotations

from typing import Any

import pytest

from tether.ai.event_stream import new_assistant_message
from tether.ai.providers.local_output import LocalOutput, parse_tool_call
from tether.wire import AssistantMessageEvent, ModelInfo

MODEL: ModelInfo = {
    "id": "m",
    "name": "m",
    "api": "local",
    "provider": "local",
    "baseUrl": "/m.gguf",
    "reasoning": False,
    "input": ["text"],
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    "contextWindow": 4096,
    "maxTokens": 1024,
}
TOOLS = frozenset({"read", "bash"})


def run(
    pieces: list[str], tools: frozenset[str] = frozenset(), forced: str | None = None
) -> tuple[list[AssistantMessageEvent], list[Any]]:
    output = new_assistant_message(MODEL)
    parser = LocalOutput(output, tools, forced)
    events: list[AssistantMessageEvent] = []
    for piece in pieces:
        events += parser.feed(piece)
    events += parser.finish()
    return events, output["content"]


def check_well_formed(events: list[AssistantMessageEvent]) -> None:
    """Every block is started once, ended once, and deltas only arrive in between."""
    open_blocks: set[int] = set()
    closed: set[int] = set()
    for event in events:
        if "contentIndex" not in event:  # start, done, error: no block
            continue
        kind, index = event["type"], event["contentIndex"]
        if kind.endswith("_start"):
            assert index not in open_blocks and index not in closed
            open_blocks.add(index)
        elif kind.endswith("_delta"):
            assert index in open_blocks
        elif kind.endswith("_end"):
            open_blocks.remove(index)
            closed.add(index)
    assert not open_blocks


def every_split(text: str) -> list[list[str]]:
    """The text cut into pieces at every pair of positions (tags split every possible way)."""
    splits = [[text]]
    for i in range(1, len(text)):
        for j in range(i + 1, len(text), 3):
            splits.append([text[:i], text[i:j], text[j:]])
    return splits


def test_plain_text_streams_as_it_comes() -> None:
    events, content = run(["Hel", "lo", " world"])
    check_well_formed(events)
    assert [e["delta"] for e in events if e["type"] == "text_delta"] == ["Hel", "lo", " world"]
    assert content == [{"type": "text", "text": "Hello world"}]


@pytest.mark.parametrize("pieces", every_split("<think>hmm, ok</think>\n\nAnswer."))
def test_think_tags_become_thinking_whatever_the_split(pieces: list[str]) -> None:
    events, content = run(pieces)
    check_well_formed(events)
    assert content == [{"type": "thinking", "thinking": "hmm, ok"}, {"type": "text", "text": "Answer."}]


def test_unclosed_think_ends_with_the_stream() -> None:
    events, content = run(["<think>still thinking"])
    check_well_formed(events)
    assert content == [{"type": "thinking", "thinking": "still thinking"}]


@pytest.mark.parametrize(
    "answer",
    [
        '{"name": "read", "arguments": {"path": "a.txt"}}',
        ' \n```json\n{"name": "read", "arguments": {"path": "a.txt"}}\n```',
        '<tool_call>\n{"name": "read", "arguments": {"path": "a.txt"}}\n</tool_call>',
        '<tool_call>[{"name": "read", "arguments": "{\\"path\\": \\"a.txt\\"}"}]</tool_call>',
    ],
)
def test_a_valid_tool_call_answer_becomes_a_tool_call(answer: str) -> None:
    events, content = run([answer[i : i + 4] for i in range(0, len(answer), 4)], TOOLS)
    check_well_formed(events)
    assert [e["type"] for e in events] == ["toolcall_start", "toolcall_delta", "toolcall_end"]
    (block,) = content
    assert block["name"] == "read" and block["arguments"] == {"path": "a.txt"}
    assert block["id"].startswith("call_")


@pytest.mark.parametrize(
    "answer",
    [
        '{"name": "telnet", "arguments": {}}',  # unknown tool
        '{"name": "read", "arguments": {"path": "a"}} and more',  # not only a call
        "{not json",
        "Sure, here you go.",
    ],
)
def test_anything_else_is_text(answer: str) -> None:
    events, content = run([answer], TOOLS)
    check_well_formed(events)
    assert content == [{"type": "text", "text": answer}]


def test_text_streams_early_when_it_clearly_is_not_a_call() -> None:
    output = new_assistant_message(MODEL)
    parser = LocalOutput(output, TOOLS, None)
    assert [e["type"] for e in parser.feed("Hi")] == ["text_start", "text_delta"]
    assert [e["type"] for e in parser.feed(" {")] == ["text_delta"]  # the answer has begun: no more holding
    assert output["content"] == [{"type": "text", "text": "Hi {"}]
    held = LocalOutput(new_assistant_message(MODEL), TOOLS, None)
    assert held.feed(' {"name"') == []  # may be a call: wait for the whole answer


def test_forced_tool_streams_argument_deltas() -> None:
    events, content = run(['{"pa', 'th": "x', '.py"}'], TOOLS, forced="read")
    check_well_formed(events)
    assert [e["delta"] for e in events if e["type"] == "toolcall_delta"] == ['{"pa', 'th": "x', '.py"}']
    assert content[0]["name"] == "read" and content[0]["arguments"] == {"path": "x.py"}


def test_parse_tool_call_rejects_non_objects() -> None:
    assert parse_tool_call("[1, 2]", TOOLS) is None
    assert parse_tool_call('{"name": "read", "arguments": 3}', TOOLS) is None
    assert parse_tool_call('{"name": "read", "parameters": {"path": "p"}}', TOOLS) == ("read", {"path": "p"})
