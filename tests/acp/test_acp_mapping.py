"""The pure parts of the ACP mode: stop reasons, tool presentation, prompt input, history replay,
and which raw messages the transport refuses.

Stop reasons come from real recorded provider streams replayed through tether's providers (see
``reference/fixtures``); the refusal, ``length`` and content-filter variants are those recordings
with their one stop field changed, since no recording of them exists.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest
from acp.schema import (
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from reference_paths import FIXTURE_STREAMS as FIXTURES
from tether.acp.server import prompt_input
from tether.acp.transport import message_problem
from tether.acp.updates import TurnFailed, history_updates, stop_reason, tool_view
from tether.testing.replay import replay
from tether.wire import AgentMessage, AssistantMessage


def fixture(api: str, name: str, replace: tuple[str, str] | None = None) -> dict[str, Any]:
    data = json.loads((FIXTURES / api / f"{name}.json").read_text())
    if replace is not None:
        old, new = replace
        body: str = data["response"]["body"]
        assert body.count(old) == 1, f"{old!r} must occur once in {name}"
        data["response"]["body"] = body.replace(old, new)
    return data


async def final_message(data: dict[str, Any]) -> AssistantMessage:
    return cast(AssistantMessage, (await replay(data))["message"])


async def test_stop_reasons_of_real_streams() -> None:
    anthropic_text = fixture("anthropic-messages", "text")
    assert stop_reason(await final_message(anthropic_text), cancelled=False) == "end_turn"
    openai_text = fixture("openai-completions", "openai-text")
    assert stop_reason(await final_message(openai_text), cancelled=False) == "end_turn"

    refusal = fixture("anthropic-messages", "text", ('"stop_reason":"end_turn"', '"stop_reason":"refusal"'))
    assert stop_reason(await final_message(refusal), cancelled=False) == "refusal"
    filtered = fixture(
        "openai-completions", "openai-text", ('"finish_reason":"stop"', '"finish_reason":"content_filter"')
    )
    assert stop_reason(await final_message(filtered), cancelled=False) == "refusal"
    cut = fixture("openai-completions", "openai-text", ('"finish_reason":"stop"', '"finish_reason":"length"'))
    assert stop_reason(await final_message(cut), cancelled=False) == "max_tokens"

    failed = await final_message(fixture("openai-completions", "groq-error-event"))
    with pytest.raises(TurnFailed, match="Tool call validation failed"):
        stop_reason(failed, cancelled=False)
    # Once the client cancelled, the answer is "cancelled" whatever the model did.
    assert stop_reason(failed, cancelled=True) == "cancelled"


def test_stop_reason_of_an_aborted_message_is_cancelled() -> None:
    aborted = cast(AssistantMessage, {"role": "assistant", "content": [], "stopReason": "aborted"})
    assert stop_reason(aborted, cancelled=False) == "cancelled"
    assert stop_reason(None, cancelled=False) == "end_turn"


@pytest.mark.parametrize(
    ("name", "arguments", "title", "kind", "locations"),
    [
        (
            "read",
            {"path": "src/a.py", "offset": 40},
            "Read src/a.py from line 40",
            "read",
            [("src/a.py", 40)],
        ),
        ("read", {"path": "/etc/hosts"}, "Read /etc/hosts", "read", [("/etc/hosts", None)]),
        (
            "edit",
            {"path": "a.py", "old_string": "x", "new_string": "y"},
            "Edit a.py",
            "edit",
            [("a.py", None)],
        ),
        ("write", {"path": "../up.txt", "content": ""}, "Write ../up.txt", "edit", [("../up.txt", None)]),
        ("bash", {"command": "make test\necho done"}, "`make test`", "execute", []),
        ("grep", {"pattern": "TODO", "path": "src"}, "Search for 'TODO' in src", "search", [("src", None)]),
        ("find", {"pattern": "*.py"}, "Find '*.py' in .", "search", [(".", None)]),
        ("ls", {}, "List .", "read", [(".", None)]),
        ("mystery", {"path": 3}, "mystery", "other", []),
    ],
)
def test_tool_view(
    name: str, arguments: dict[str, Any], title: str, kind: str, locations: list[tuple[str, int | None]]
) -> None:
    cwd = Path("/work/project")
    view = tool_view(name, arguments, cwd)
    assert (view.title, view.kind) == (title, kind)
    expected = [
        (str((cwd / path).resolve()) if not path.startswith("/") else path, line) for path, line in locations
    ]
    assert [(loc.path, loc.line) for loc in view.locations] == expected


def test_prompt_input_inlines_context_and_keeps_images() -> None:
    text, images = prompt_input(
        [
            TextContentBlock(type="text", text="Explain "),
            ResourceContentBlock(type="resource_link", name="main.py", uri="file:///p/main.py"),
            EmbeddedResourceContentBlock(
                type="resource",
                resource=TextResourceContents(
                    uri="file:///p/util.py", text="def f(): pass", mime_type="text/x-python"
                ),
            ),
            ImageContentBlock(type="image", data="aGk=", mime_type="image/png"),
            EmbeddedResourceContentBlock(
                type="resource",
                resource=BlobResourceContents(uri="file:///p/logo.gif", blob="R0lG", mime_type="image/gif"),
            ),
        ]
    )
    assert (
        text
        == 'Explain [@main.py](file:///p/main.py)\n<context ref="file:///p/util.py">\ndef f(): pass\n</context>\n'
    )
    assert images == [
        {"type": "image", "data": "aGk=", "mimeType": "image/png"},
        {"type": "image", "data": "R0lG", "mimeType": "image/gif"},
    ]


def test_history_replays_every_turn_in_order() -> None:
    messages = cast(
        list[AgentMessage],
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image", "data": "aGk=", "mimeType": "image/png"},
                ],
                "timestamp": 1,
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm"},
                    {"type": "text", "text": "Reading."},
                    {"type": "toolCall", "id": "c1", "name": "edit", "arguments": {"path": "a.py"}},
                ],
                "stopReason": "toolUse",
            },
            {
                "role": "toolResult",
                "toolCallId": "c1",
                "toolName": "edit",
                "content": [{"type": "text", "text": "Edited a.py"}],
                "details": {"path": "a.py", "firstChangedLine": 7},
                "isError": False,
                "timestamp": 2,
            },
            {"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "rate limited"},
            {"role": "compactionSummary", "summary": "Earlier: setup.", "tokensBefore": 10, "timestamp": 3},
        ],
    )
    updates = [
        u.model_dump(mode="json", by_alias=True, exclude_none=True)
        for u in history_updates(messages, Path("/p"))
    ]
    assert [u["sessionUpdate"] for u in updates] == [
        "user_message_chunk",
        "user_message_chunk",
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
        "agent_message_chunk",
    ]
    assert updates[1]["content"] == {"type": "image", "data": "aGk=", "mimeType": "image/png"}
    assert updates[5]["status"] == "completed" and updates[5]["locations"] == [{"path": "/p/a.py", "line": 7}]
    assert "rate limited" in updates[6]["content"]["text"]
    assert "Earlier: setup." in updates[7]["content"]["text"]


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}, None),
        ({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}}, None),
        ({"jsonrpc": "2.0", "id": "a", "result": {}}, None),
        ({"jsonrpc": "2.0", "id": None, "error": {"code": 1, "message": "x"}}, None),
        ([{"jsonrpc": "2.0"}], "batches"),
        ("text", "JSON object"),
        ({"id": 1, "method": "initialize"}, "jsonrpc"),
        ({"jsonrpc": "2.0", "id": True, "method": "initialize"}, '"id"'),
        ({"jsonrpc": "2.0", "id": 1, "method": ["initialize"]}, '"method"'),
        ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": "x"}, '"params"'),
        ({"jsonrpc": "2.0", "id": 1}, "neither"),
    ],
)
def test_message_problem(message: object, problem: str | None) -> None:
    found = message_problem(message)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found
