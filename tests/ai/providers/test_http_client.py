"""The socket on the model-call path: ``StreamOptions.http_client`` carries a request through the
caller's client (here ``tether.testing.MockProvider``'s in-process transport) instead of the
provider's pool, per call and for every call of an agent; retries go through it too.

The model's host is under ``.invalid``: a request that missed the socket and took the pool
would fail to resolve, and the run would end in a connection error instead of the reply."""

from __future__ import annotations

import json

from faultkit import CONTEXT, completions_text, fast, model

from narrowing import block_text
from tether.agent import Agent
from tether.ai import SimpleStreamOptions, complete_simple, stream
from tether.testing import MockProvider, Reply
from tether.wire import AssistantMessage

URL = "https://api.example.invalid/v1"


def message_text(message: AssistantMessage) -> str:
    return "".join(block_text(b) for b in message["content"] if b["type"] == "text")


async def test_one_call_goes_through_the_given_client() -> None:
    provider = MockProvider([Reply(completions_text(["Hel", "lo"]))])
    async with provider.client() as client:
        message = await complete_simple(
            model(URL), CONTEXT, SimpleStreamOptions(api_key="k", http_client=client)
        )
    assert message["stopReason"] == "stop", message.get("errorMessage")
    assert message_text(message) == "Hello"
    [request] = provider.requests
    assert str(request.url) == f"{URL}/chat/completions"
    assert request.headers["authorization"] == "Bearer k"
    assert json.loads(request.content)["messages"][-1] == {"role": "user", "content": "hi"}


async def test_a_retried_request_is_sent_through_the_same_client() -> None:
    provider = MockProvider([Reply(b'{"error": "busy"}', status=503), Reply(completions_text(["ok"]))])
    async with provider.client() as client:
        message = await stream(model(URL), CONTEXT, fast(http_client=client)).result()
    assert message_text(message) == "ok"
    assert len(provider.requests) == 2


async def test_an_agent_sends_every_call_through_its_options_client() -> None:
    provider = MockProvider([Reply(completions_text(["first"])), Reply(completions_text(["second"]))])
    async with provider.client() as client:
        agent = Agent(model=model(URL), options=SimpleStreamOptions(api_key="k", http_client=client))
        await agent.prompt("one")
        await agent.prompt("two")
    assert [message_text(m) for m in agent.messages if m["role"] == "assistant"] == ["first", "second"]
    assert len(provider.requests) == 2
