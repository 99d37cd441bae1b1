"""A real provider (openai-completions over HTTP on 127.0.0.1): retries, usage, cost and the metrics.

The model server answers 503 once, then streams an answer with usage; the ``chat`` span shows the
retry as an event, the server it talked to, the response id, the token counts (cached tokens
included in the input, as the conventions ask) and the cost, and the four metrics are recorded
with the conventions' labels.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.trace import StatusCode
from telemetry_support import Otel

from tether.agent import Agent
from tether.ai.types import SimpleStreamOptions
from tether.testing.loopback import LoopbackServer, Reply, loopback_model
from tether.wire import ModelInfo

USAGE = {
    "prompt_tokens": 100,
    "completion_tokens": 20,
    "prompt_tokens_details": {"cached_tokens": 40, "cache_write_tokens": 10},
    "completion_tokens_details": {"reasoning_tokens": 5},
}
COST = (60 * 1 + 30 * 0.5 + 10 * 1.25 + 20 * 2) / 1_000_000
"""Of the 100 input tokens 30 were read from the cache ($0.5/M) and 10 written to it ($1.25/M; this
server counts them among the cached ones, as OpenRouter does), 60 are fresh ($1/M); 20 output ($2/M)."""


def sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return sse(
        {
            "id": "resp-7",
            "model": "m-2026-01-01",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
    )


ANSWER = (
    chunk({"role": "assistant", "content": "Hel"})
    + chunk({"content": "lo"})
    + chunk({}, "stop")
    + sse({"id": "resp-7", "choices": [], "usage": USAGE})
    + b"data: [DONE]\n\n"
)


def model(url: str) -> ModelInfo:
    return loopback_model(
        url,
        provider="openai",
        contextWindow=1000,
        cost={"input": 1, "output": 2, "cacheRead": 0.5, "cacheWrite": 1.25},
    )


def options() -> SimpleStreamOptions:
    return SimpleStreamOptions(
        api_key="k", retry_base_delay=0.001, temperature=0.2, max_tokens=50, session_id="s-2"
    )


async def test_a_retried_call_with_usage(otel: Otel) -> None:
    busy = Reply(b'{"error":{"message":"busy"}}', status=503, headers={"content-type": "application/json"})
    async with LoopbackServer([busy, Reply(ANSWER)]) as server:
        port = int(server.url.rsplit(":", 1)[1])
        agent = Agent(model=model(server.url), options=options(), instrumentation=otel.instrumentation())
        await agent.prompt("hi")
    assert len(server.requests) == 2

    run, chat = otel.spans()
    attributes = dict(chat.attributes or {})
    first_chunk = attributes.pop("gen_ai.response.time_to_first_chunk")
    assert isinstance(first_chunk, float) and first_chunk > 0
    assert attributes.pop("tether.usage.cost") == pytest.approx(COST)
    assert attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "m",
        "tether.api": "openai-completions",
        "server.address": "127.0.0.1",
        "server.port": port,
        "gen_ai.request.stream": True,
        "tether.turn": 1,
        "gen_ai.conversation.id": "s-2",
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.max_tokens": 50,
        "gen_ai.response.model": "m-2026-01-01",  # the server's answer, not the name asked for
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.response.id": "resp-7",
        "gen_ai.usage.input_tokens": 100,
        "gen_ai.usage.output_tokens": 20,
        "gen_ai.usage.cache_read.input_tokens": 30,
        "gen_ai.usage.cache_creation.input_tokens": 10,
        "gen_ai.usage.reasoning.output_tokens": 5,
        "tether.request.retries": 1,
    }
    assert chat.status.status_code is StatusCode.UNSET
    [retry] = chat.events
    assert retry.name == "tether.retry"
    retry_attributes = dict(retry.attributes or {})
    assert retry_attributes["tether.retry.attempt"] == 1
    assert retry_attributes["tether.retry.delay"] == pytest.approx(0.001)
    assert retry_attributes["error.type"] == "503"
    assert "503" in str(retry_attributes["tether.retry.reason"])

    run_attributes = dict(run.attributes or {})
    assert run_attributes["gen_ai.usage.input_tokens"] == 100
    assert run_attributes["gen_ai.usage.output_tokens"] == 20
    assert run_attributes["tether.usage.cost"] == pytest.approx(COST)

    labels = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "m",
        "tether.api": "openai-completions",
        "server.address": "127.0.0.1",
        "server.port": port,
        "gen_ai.response.model": "m-2026-01-01",
    }
    tokens = {
        str(dict(p.attributes)["gen_ai.token.type"]): p for p in otel.points("gen_ai.client.token.usage")
    }
    assert set(tokens) == {"input", "output"}
    assert (tokens["input"].count, tokens["input"].sum) == (1, 100)
    assert (tokens["output"].count, tokens["output"].sum) == (1, 20)
    assert dict(tokens["input"].attributes) == {**labels, "gen_ai.token.type": "input"}
    assert list(tokens["input"].explicit_bounds[:3]) == [1, 4, 16]  # the conventions' buckets

    [duration] = otel.points("gen_ai.client.operation.duration")
    assert dict(duration.attributes) == labels and duration.count == 1 and duration.sum > 0
    assert list(duration.explicit_bounds[:2]) == [0.01, 0.02]
    [first] = otel.points("gen_ai.client.operation.time_to_first_chunk")
    assert dict(first.attributes) == labels and first.count == 1 and first.sum == pytest.approx(first_chunk)
    [cost] = otel.points("tether.client.cost")
    assert dict(cost.attributes) == labels and cost.value == pytest.approx(COST)


async def test_a_refused_call_is_labelled_with_its_status(otel: Otel) -> None:
    refused = Reply(
        b'{"error":{"message":"bad key"}}', status=401, headers={"content-type": "application/json"}
    )
    async with LoopbackServer([refused]) as server:
        agent = Agent(model=model(server.url), options=options(), instrumentation=otel.instrumentation())
        await agent.prompt("hi")
    assert len(server.requests) == 1  # never retried

    run, chat = otel.spans()
    assert dict(chat.attributes or {})["error.type"] == "401"
    assert "tether.request.retries" not in (chat.attributes or {})
    assert chat.status.status_code is StatusCode.ERROR and "bad key" in str(chat.status.description)
    assert dict(run.attributes or {})["error.type"] == "401"
    [duration] = otel.points("gen_ai.client.operation.duration")
    assert dict(duration.attributes)["error.type"] == "401"
    # no usage reported, no tokens counted; nothing spent
    assert otel.points("gen_ai.client.token.usage") == []
    assert otel.points("tether.client.cost") == []
    assert otel.points("gen_ai.client.operation.time_to_first_chunk") == []
