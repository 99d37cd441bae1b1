"""What a model writes that JSON has no form for reaches an RPC client as JSON all the same: a
real provider stream (OpenAI Chat Completions, served on loopback) whose tool call's arguments
hold ``NaN`` and the infinities, which the stream's parser reads."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rpc_support import RpcEnv

from tether.testing.loopback import LoopbackServer, Reply

pytestmark = pytest.mark.subprocess


def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return "data: " + json.dumps({"id": "r", "object": "chat.completion.chunk", "choices": [choice]}) + "\n\n"


def _stream(*chunks: str) -> Reply:
    return Reply(body=("".join(chunks) + "data: [DONE]\n\n").encode())


CALL = _stream(
    _chunk(
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "calc", "arguments": '{"x":NaN,"y":[Infinity,-Infinity]}'},
                }
            ],
        }
    ),
    _chunk({}, "tool_calls"),
)
DONE = _stream(_chunk({"role": "assistant", "content": "done"}), _chunk({}, "stop"))


async def test_nan_and_infinities_in_a_tool_call_are_framed_and_stored_as_null(rpc: RpcEnv) -> None:
    """The frames carried them as ``NaN`` and ``Infinity``, which a client's ``JSON.parse`` refuses
    (``CheckedClient`` parses each frame so), and the session stored them so; pi writes ``null``
    (``JSON.stringify``)."""
    async with LoopbackServer([CALL, DONE]) as server:
        (rpc.home / "config").mkdir()
        models = {
            "providers": {
                "loop": {"baseUrl": server.url, "api": "openai-completions", "models": [{"id": "m"}]}
            }
        }
        (rpc.home / "config" / "models.json").write_text(json.dumps(models))
        async with rpc.spawn("--model", "loop/m") as client:
            assert (await client.prompt("compute"))["status"] == "completed"
            messages = await client.get_messages()
            ends = [f["message"] for f in client.frames if f["type"] == "message_end"]
        async with rpc.spawn("--model", "loop/m", "--continue") as client:
            stored = await client.get_messages()
    nulls = {"x": None, "y": [None, None]}
    assert messages[1]["content"][0]["arguments"] == nulls
    assert ends[1]["content"][0]["arguments"] == nulls
    assert messages[-1]["content"][0]["text"] == "done"
    assert stored == messages
    assert len(server.requests) == 2
