"""Every request the loop sends is the transcript as it is then, however it was edited in place.

The loop sends the whole transcript with every model call. Between calls its messages change in
place: a ``transform_context`` hook edits what it is handed, a caller edits ``agent.messages``
between prompts, the model switches. Anything the request path kept from an earlier call (say a
cache of converted messages) would send an older conversation without any error, so each request
is compared, byte for byte, with the one the same provider builds from a deep copy of the context
the loop handed it (tests/ai/test_handoff_properties.py states the same of the request builders).
"""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import httpx2
from hypothesis import HealthCheck, given, settings, strategies as st

from tether.agent import Agent, AgentTool, AgentToolResult
from tether.ai import AbortSignal, AssistantMessageEventStream, Context, SimpleStreamOptions, stream_simple
from tether.wire import AgentMessage, ModelInfo


def model(model_id: str) -> ModelInfo:
    return {
        "id": model_id,
        "name": model_id,
        "api": "openai-completions",
        "provider": "test",
        "baseUrl": "http://model.invalid",
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 100_000,
        "maxTokens": 1_000,
    }


MODELS = [model("m"), model("n")]
TOOL_CALL = (
    b'data: {"id":"r","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,'
    b'"id":"call_%d","type":"function","function":{"name":"echo","arguments":"{\\"n\\": 1}"}}]}}]}\n\n'
    b'data: {"id":"r","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n'
)
TEXT = (
    b'data: {"id":"r","choices":[{"index":0,"delta":{"role":"assistant","content":"done"}}]}\n\n'
    b'data: {"id":"r","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)


async def echo(
    call_id: str, params: dict[str, Any], signal: AbortSignal | None, on_update: Any
) -> AgentToolResult[Any]:
    return AgentToolResult(content=[{"type": "text", "text": json.dumps(params)}])


ECHO = AgentTool(name="echo", label="echo", description="Echo", parameters={"type": "object"}, execute=echo)


def edit_in_place(data: st.DataObject, messages: list[AgentMessage]) -> None:
    """One change inside one message, as a hook or a caller may make it."""
    message: Any = data.draw(st.sampled_from(messages))
    if message["role"] == "user":
        message["content"] = [{"type": "text", "text": "edited"}]
    elif message["role"] == "toolResult":
        message["content"][0]["text"] += "!"
    else:
        calls = [b for b in message["content"] if b["type"] == "toolCall"]
        if calls and data.draw(st.booleans()):  # 1 -> 1.0 or True: equal in Python, not in JSON
            calls[0]["arguments"]["n"] = data.draw(st.sampled_from([1.0, True, 2]))
        else:
            message["content"].append({"type": "text", "text": "appended"})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), hooked=st.booleans(), prompts=st.integers(1, 4))
def test_each_request_is_the_transcript_as_it_is_then(
    data: st.DataObject, hooked: bool, prompts: int
) -> None:
    bodies: list[bytes] = []
    calls = iter(range(1_000))

    async def answer(request: httpx2.Request) -> httpx2.Response:
        content = await request.aread()
        bodies.append(content)
        last = json.loads(content)["messages"][-1]["role"]
        sse = TEXT if last == "tool" else TOOL_CALL % next(calls)
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=sse)

    async def both(
        model: ModelInfo, context: Context, options: SimpleStreamOptions | None
    ) -> AssistantMessageEventStream:
        """The request built from a deep copy of the context first, then the loop's own."""
        await stream_simple(model, copy.deepcopy(context), options).result()
        return stream_simple(model, context, options)

    async def transform(messages: list[AgentMessage], signal: AbortSignal | None) -> list[AgentMessage]:
        for _ in range(data.draw(st.integers(0, 2))):
            edit_in_place(data, messages)
        return messages

    async def run() -> None:
        client = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
        agent = Agent(
            model=MODELS[0],
            tools=[ECHO],
            stream_fn=both,
            options=SimpleStreamOptions(api_key="k", http_client=client),
            transform_context=transform if hooked else None,
        )
        for prompt in range(prompts):
            await agent.prompt(f"prompt {prompt}")
            for _ in range(data.draw(st.integers(0, 2))):
                edit_in_place(data, agent.messages)
            agent.model = data.draw(st.sampled_from(MODELS))
        await client.aclose()

    asyncio.run(run())
    assert len(bodies) == 4 * prompts  # two model calls a prompt, each built twice
    for fresh, sent in zip(bodies[::2], bodies[1::2], strict=True):
        assert sent == fresh
