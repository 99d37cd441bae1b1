"""The scripted model streams like a provider and records what it was asked."""

from __future__ import annotations

from tether.ai.abort import AbortController
from tether.ai.types import Context, SimpleStreamOptions
from tether.testing.scripted import (
    NO_RESPONSE_LEFT,
    ScriptedModel,
    ScriptedResponse,
    reply,
    text,
    thinking,
    tool_call,
)

CONTEXT: Context = {"systemPrompt": "s", "messages": [{"role": "user", "content": "hi", "timestamp": 0}]}


async def test_stream_events_and_final_message() -> None:
    model = ScriptedModel([reply(thinking("a", "b"), text("x"), tool_call("echo", {"v": 1}, id="c1"))])
    stream = model(model.model, CONTEXT, SimpleStreamOptions())
    kinds = [event["type"] async for event in stream]
    assert kinds == [
        "start",
        "thinking_start", "thinking_delta", "thinking_delta", "thinking_end",
        "text_start", "text_delta", "text_end",
        "toolcall_start", "toolcall_delta", "toolcall_end",
        "done",
    ]  # fmt: skip
    final = await stream.result()
    assert final["stopReason"] == "toolUse"
    assert final["content"] == [
        {"type": "thinking", "thinking": "ab"},
        {"type": "text", "text": "x"},
        {"type": "toolCall", "id": "c1", "name": "echo", "arguments": {"v": 1}},
    ]
    assert model.requests[0].context.get("systemPrompt") == "s"


async def test_a_lone_surrogate_in_scripted_arguments_is_played_as_u_fffd() -> None:
    """Arguments holding a lone surrogate (a file name that is not UTF-8, a ``"\\ud800"``
    escape) are parsed as a provider's are (``tether.ai.partial_json``): the surrogate becomes
    U+FFFD, in the delta and the arguments alike. The stream ended in error (a
    UnicodeEncodeError from encoding the delta to parse it), the call never played."""
    model = ScriptedModel([reply(tool_call("f", {"path": "a\udcff.txt"}, id="c1"))])
    stream = model(model.model, CONTEXT, SimpleStreamOptions())
    deltas = [e["delta"] async for e in stream if e["type"] == "toolcall_delta"]
    final = await stream.result()
    assert final["stopReason"] == "toolUse"
    assert final["content"] == [
        {"type": "toolCall", "id": "c1", "name": "f", "arguments": {"path": "a\ufffd.txt"}}
    ]
    assert deltas == ['{"path":"a\ufffd.txt"}']


async def test_requests_are_snapshots_unless_not_kept() -> None:
    kept, unkept = ScriptedModel([reply("a"), reply("b")]), ScriptedModel([reply("a")], keep_requests=False)
    messages = list(CONTEXT["messages"])
    context: Context = {"systemPrompt": "s", "messages": messages}
    await kept(kept.model, context).result()
    messages.append({"role": "user", "content": "more", "timestamp": 1})
    await kept(kept.model, context).result()
    assert [len(request.context["messages"]) for request in kept.requests] == [1, 2]

    final = await unkept(unkept.model, context).result()
    assert final["content"] == [{"type": "text", "text": "a"}]
    assert unkept.requests == []


async def test_generated_tool_call_ids_and_stop_reason_override() -> None:
    model = ScriptedModel([reply(tool_call("a"), tool_call("b"), stop_reason="length")])
    final = await model(model.model, CONTEXT).result()
    assert [b.get("id") for b in final["content"]] == ["call_1", "call_2"]
    assert final["stopReason"] == "length"


async def test_errors_aborts_and_exhaustion() -> None:
    model = ScriptedModel([reply("partial", error="429 rate limited")])
    failed = await model(model.model, CONTEXT).result()
    assert (failed["stopReason"], failed.get("errorMessage")) == ("error", "429 rate limited")
    assert failed["content"] == [{"type": "text", "text": "partial"}]

    exhausted = await model(model.model, CONTEXT).result()
    assert (exhausted["stopReason"], exhausted.get("errorMessage")) == ("error", NO_RESPONSE_LEFT)

    controller = AbortController()
    model.push(reply(text("a", "b", "c")))
    stream = model(model.model, CONTEXT, SimpleStreamOptions(signal=controller.signal))
    async for event in stream:
        if event["type"] == "text_delta":
            controller.abort()
    aborted = await stream.result()
    assert (aborted["stopReason"], aborted.get("errorMessage")) == ("aborted", "Request was aborted")
    assert aborted["content"] == [{"type": "text", "text": "a"}]


def test_scenario_format() -> None:
    response = ScriptedResponse.from_json(
        {
            "content": [
                {"type": "text", "chunks": ["a", "b"]},
                {"type": "toolCall", "id": "c", "name": "n", "arguments": {}},
            ]
        }
    )
    assert response == reply(text("a", "b"), tool_call("n", {}, id="c"))
