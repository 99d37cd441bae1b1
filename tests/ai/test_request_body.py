"""A streaming reply keeps its request (for retries) as long as it streams: as encoded bytes, so
the body's objects (a dict or more per message of the conversation) are freed once it is built
instead of staying alive, for the garbage collector to walk, until the reply ends."""

from __future__ import annotations

import json
import math
import weakref
from typing import Any, cast

import pytest
from faultkit import ANTHROPIC, APIS, COMPLETIONS, GEMINI, TEXT, fast, model

from session_helpers import assistant, call, text, user
from tether.ai import complete
from tether.ai.provider import stream_http
from tether.ai.providers.openai_completions import OpenAICompletionsParser
from tether.ai.transport import HttpRequest, encode_request
from tether.ai.types import Context
from tether.testing.loopback import LoopbackServer, Reply


class _Messages(list[dict[str, Any]]):
    """A list a weak reference can watch."""


async def test_the_body_is_let_go_once_built_and_a_retry_sends_the_same_bytes() -> None:
    failing = Reply(b'{"error":{"message":"try again"}}', 503, {"content-type": "application/json"})
    async with LoopbackServer([failing, Reply(TEXT[COMPLETIONS].body)]) as server:
        url = server.url + "/chat/completions"
        bodies = [{"model": "m", "messages": _Messages([{"role": "user", "content": "Hi"}])}]
        watched = weakref.ref(bodies[0]["messages"])
        expected = encode_request(HttpRequest(url, {}, bodies[0])).content
        stream = stream_http(
            model(server.url, COMPLETIONS),
            fast(),
            lambda key: HttpRequest(url, {}, bodies.pop()),
            OpenAICompletionsParser,
        )
        assert watched() is None, "only the encoded bytes are kept"
        final = await stream.result()
    assert final["stopReason"] == "stop"
    assert [r.body for r in server.requests] == [expected, expected]


def test_a_body_is_encoded_as_compact_utf8_json_and_a_lone_surrogate_is_replaced() -> None:
    """A lone surrogate that cannot be sent as UTF-8 (a tool's arguments, an extra field: builders
    strip them from text) is replaced."""
    body = {"model": "m", "messages": [{"role": "user", "content": "héllo 👋"}], "n": 1.5}
    encoded = encode_request(HttpRequest("http://x", {}, body)).content
    assert encoded == '{"model":"m","messages":[{"role":"user","content":"héllo 👋"}],"n":1.5}'.encode()
    broken = encode_request(HttpRequest("http://x", {}, {"extra": "a\ud83db"})).content
    assert broken == b'{"extra":"a?b"}'


@pytest.mark.parametrize("api", APIS)
async def test_a_long_tool_call_id_with_half_a_surrogate_pair_is_sent_on(api: str) -> None:
    """A call id too long for the target's API is shortened with a hash of it, and hashing
    encoded it as UTF-8: an id a server's JSON escapes gave half a surrogate pair could not be,
    and every later request of that conversation failed to be built (to the Chat Completions
    and Responses APIs)."""
    call_id = "call_\udc80" + "x" * 70
    messages = [
        user("hi"),
        assistant(call(call_id, "echo")),
        {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": "echo",
            "content": [text("done")],
            "isError": False,
            "timestamp": 2,
        },
    ]
    context = cast(Context, {"messages": messages})
    async with LoopbackServer([Reply(TEXT[api].body)]) as server:
        final = await complete(model(server.url, api), context, fast(max_retries=0))
    assert final["stopReason"] == "stop", final.get("errorMessage")
    assert len(server.requests) == 1


def _refuse(constant: str) -> object:
    raise ValueError(f"{constant} is no JSON")


@pytest.mark.parametrize("api", APIS)
async def test_a_call_whose_arguments_hold_nan_is_sent_again_as_json(api: str) -> None:
    """Tool-call arguments may hold ``NaN`` (a model writes it; jiter reads it), and the body
    was encoded with Python's ``NaN``/``Infinity``, which no JSON parser takes: every later
    request of the conversation was one the provider refused (Anthropic's and Gemini's bodies,
    which carry the arguments as an object), and Chat Completions' and Responses' string of
    arguments held ``NaN`` too (servers that parse it for a chat template refuse the request).
    Now ``null``, as JSON.stringify (pi) writes them."""
    messages = [
        user("hi"),
        assistant(call("c1", "plot", x=math.nan, y=[math.inf, 1.5])),
        {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "plot",
            "content": [text("ok")],
            "isError": False,
            "timestamp": 2,
        },
    ]
    async with LoopbackServer([Reply(TEXT[api].body)]) as server:
        final = await complete(
            model(server.url, api), cast(Context, {"messages": messages}), fast(max_retries=0)
        )
    assert final["stopReason"] == "stop", final.get("errorMessage")
    body = json.loads(server.requests[0].body, parse_constant=_refuse)
    strings = [json.loads(arguments, parse_constant=_refuse) for arguments in _arguments_strings(body)]
    assert strings == ([] if api in (ANTHROPIC, GEMINI) else [{"x": None, "y": [None, 1.5]}])


def _arguments_strings(value: object) -> list[str]:
    """The strings of tool-call arguments anywhere in a request body (Chat Completions' and
    Responses' ``arguments``)."""
    if isinstance(value, list):
        return [found for item in cast("list[object]", value) for found in _arguments_strings(item)]
    if isinstance(value, dict):
        items = cast("dict[str, object]", value)
        own = [arguments] if isinstance(arguments := items.get("arguments"), str) else []
        return own + [found for item in items.values() for found in _arguments_strings(item)]
    return []
