"""Where messages are validated: at the edge where they enter the runtime.

What ``AgentSession`` builds (a text prompt), what it checked on the way in (a caller's message
objects and images) and the replies of tether's own models are stored as they are; the replies
of a program's own stream function and every tool result are checked as they are stored, so the
store never holds a message a later load would refuse.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, cast

import pytest

from tether import Agent, AgentSession, ScriptedModel, reply, tool_call
from tether.agent import AgentTool, AgentToolResult
from tether.ai.event_stream import AssistantMessageEventStream
from tether.ai.registry import ApiProvider, get_provider, is_builtin, register_provider
from tether.session import SessionManager
from tether.testing.scripted import ScriptedResponse
from tether.wire import AgentMessage, WireError, dumpb


def _core(manager: SessionManager, stream_fn: Any, tools: list[AgentTool] | None = None) -> AgentSession:
    model = ScriptedModel().model
    core = AgentSession(Agent(model=model, stream_fn=stream_fn, tools=tools or []), sessions=manager)
    core.new_session()
    return core


def _stored(manager: SessionManager, core: AgentSession) -> list[AgentMessage]:
    assert core.session_id is not None
    with manager.open(core.session_id, readonly=True) as session:
        return session.messages


async def test_a_callers_malformed_message_fails_at_the_call_and_nothing_is_stored(
    manager: SessionManager,
) -> None:
    core = _core(manager, ScriptedModel([reply("never asked")]))
    bad = cast(AgentMessage, {"role": "user", "content": [{"type": "video", "url": "x"}]})
    with pytest.raises(WireError, match=r"messages\[0\]\.content\[0\]"):
        core.prompt(bad)
    with pytest.raises(WireError, match=r"prompt\.content\[1\]"):
        core.prompt("look", [cast(Any, {"type": "image", "data": 42, "mimeType": "image/png"})])
    assert manager.list() == []  # not even an empty session: it is stored with its first message


async def test_a_callers_content_block_missing_a_required_field_fails_at_the_call(
    manager: SessionManager,
) -> None:
    """Decoding leaves fields out for messages stored before they were required; a block made now
    without one (an image without ``data``) was stored, and every later request of the session
    failed building it ("Could not build the request: 'data'")."""
    core = _core(manager, ScriptedModel([reply("never asked")]))
    with pytest.raises(WireError, match=r"^prompt\.content\[1\]\.data: required field is missing$"):
        core.prompt("look", [cast(Any, {"type": "image", "mimeType": "image/png"})])
    bad = cast(AgentMessage, {"role": "user", "content": [{"type": "text"}], "timestamp": 0})
    with pytest.raises(WireError, match=r"^messages\[0\]\.content\[0\]\.text: required field is missing$"):
        core.prompt(bad)
    with pytest.raises(
        WireError, match=r"^messages\[0\]\.content\[0\]\.mimeType: required field is missing$"
    ):
        core.steer(cast(AgentMessage, {"role": "user", "content": [{"type": "image", "data": "aGk="}]}))
    assert manager.list() == []


async def test_a_callers_valid_message_is_stored_as_checked(manager: SessionManager) -> None:
    core = _core(manager, ScriptedModel([reply("seen")]))
    given = cast(AgentMessage, {"role": "user", "content": "hi", "timestamp": 1, "note": "kept"})
    await core.prompt(given)
    stored = _stored(manager, core)
    assert stored[0] == given  # an open record: the unknown key is kept
    assert [m["role"] for m in stored] == ["user", "assistant"]


async def test_a_programs_stream_function_is_checked_before_its_reply_is_stored(
    manager: SessionManager,
) -> None:
    def own(model_info: Any, context: Any, options: Any = None) -> AssistantMessageEventStream:
        """Not tether's: a program's stream function whose reply breaks the wire shape."""
        message: Any = {
            "role": "assistant",
            "content": [{"type": "text", "text": 7}],
            "api": model_info["api"],
            "provider": model_info["provider"],
            "model": model_info["id"],
            "usage": ScriptedModel().model["cost"] | {"input": 0, "output": 0, "totalTokens": 0},
            "stopReason": "stop",
            "timestamp": 1,
        }

        async def events() -> AsyncIterator[Any]:
            yield {"type": "start", "partial": message}
            yield {"type": "done", "reason": "stop", "message": message}

        return AssistantMessageEventStream(model_info, events(), None)

    core = _core(manager, own)
    added = await core.prompt("hi")
    stored = _stored(manager, core)
    assert stored == added and [m["role"] for m in stored] == ["user", "assistant"]
    refused = cast(dict[str, Any], stored[-1])  # the run ends as an error naming what was wrong
    assert refused["stopReason"] == "error" and refused["content"] == []
    assert "message.content[0].text: expected a string (got 7)" in refused["errorMessage"]


async def test_a_tools_malformed_content_is_refused_before_it_is_stored(manager: SessionManager) -> None:
    async def execute(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
        return AgentToolResult(content=[cast(Any, {"type": "video"})])

    broken = AgentTool("broken", "broken", "returns a block the wire has no type for", {}, execute)
    core = _core(manager, ScriptedModel([reply(tool_call("broken")), reply("after")]), [broken])
    await core.prompt("go")
    stored = _stored(manager, core)
    assert [m["role"] for m in stored] == ["user", "assistant", "assistant"]  # no tool result
    refused = cast(dict[str, Any], stored[-1])
    assert refused["stopReason"] == "error" and "message.content[0].type" in refused["errorMessage"]


def test_a_replaced_builtin_provider_is_not_builtin_any_more() -> None:
    original = get_provider("openai-completions")
    assert original is not None and is_builtin("openai-completions")
    replacement = ApiProvider("openai-completions", original.stream, original.stream_simple)
    register_provider(replacement)
    try:
        assert not is_builtin("openai-completions")
    finally:
        register_provider(original)
    assert is_builtin("openai-completions") and not is_builtin("no-such-api")


BAD_SCRIPTS: list[tuple[dict[str, Any], str]] = [
    ({"content": [{"type": "text", "chunks": ["a", 1]}]}, "text chunk must be a str, not int"),
    ({"content": [{"type": "toolCall", "name": 3}]}, "toolCall name must be a str, not int"),
    (
        {"content": [{"type": "toolCall", "name": "x", "arguments": []}]},
        "toolCall arguments must be a dict",
    ),
    ({"content": "hello"}, "content must be a list, not str"),
    ({"content": [], "stopReason": "done"}, "unknown stopReason 'done'"),
    ({"content": [], "error": {"why": "x"}}, "error must be a str, not dict"),
]


@pytest.mark.parametrize(("response", "problem"), BAD_SCRIPTS)
def test_a_script_is_type_checked_where_it_is_read(response: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        ScriptedResponse.from_json(response)


async def test_details_json_has_no_type_for_are_stored_as_the_wire_encoder_would(
    manager: SessionManager,
) -> None:
    """The store encodes with the standard library; a set, bytes or a dataclass in a tool's
    ``details`` is converted as ``tether.wire.dumpb`` converts it."""

    @dataclass
    class Hit:
        line: int

    async def execute(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
        details = {"tags": {"a"}, "raw": b"xy", "hit": Hit(3), "tiny": 1e-05}
        return AgentToolResult(content=[{"type": "text", "text": "ok"}], details=details)

    odd = AgentTool("odd", "odd", "details of every kind", {}, execute)
    core = _core(manager, ScriptedModel([reply(tool_call("odd")), reply("after")]), [odd])
    await core.prompt("go")
    result = cast(dict[str, Any], _stored(manager, core)[2])
    assert result["role"] == "toolResult"
    assert result["details"] == json.loads(dumpb(result["details"]))
    assert result["details"] == {"tags": ["a"], "raw": "xy", "hit": {"line": 3}, "tiny": 1e-05}
