"""The one retry budget, counted in HTTP requests: an ``AgentSession`` on each of the four APIs,
against a loopback server that keeps failing (429, 503, connection resets), makes exactly
``max_retries + 1`` requests for a reply, announces each retry with ``auto_retry_start``, and
honours or refuses ``Retry-After`` as ``tether.ai.retry`` says."""

from __future__ import annotations

import email.utils
import time
from typing import Any

import pytest

from tether.agent import Agent
from tether.ai.types import SimpleStreamOptions
from tether.session.agent_session import AgentSession
from tether.session.settings import Retry, Settings
from tether.testing.loopback import LoopbackServer, Reply, loopback_model

APIS = ("openai-completions", "anthropic-messages", "openai-responses", "google-generative-ai")
FAST = Retry(max_retries=2, base_delay_ms=1, max_delay_ms=5_000)


def core(url: str, api: str, retry: Retry = FAST) -> AgentSession:
    agent = Agent(model=loopback_model(url, api), options=SimpleStreamOptions(api_key="k", timeout=10))
    return AgentSession(agent, settings=Settings(retry=retry))


async def run(session: AgentSession, **prompt: Any) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    async for event in session.prompt("hi", **prompt):
        if event["type"].startswith("auto_retry"):
            events.append(dict(event))
    await session.close()
    return events


FAILURES = {
    "429": Reply(b'{"error":{"message":"slow down"}}', 429),
    "503": Reply(b'{"error":{"message":"unavailable"}}', 503),
    "reset": Reply(b"data: {}\n\n" * 4, reset_after=0),
}


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("failure", sorted(FAILURES))
async def test_a_steady_failure_costs_max_retries_plus_one_requests(api: str, failure: str) -> None:
    async with LoopbackServer([FAILURES[failure]]) as server:
        session = core(server.url, api)
        events = await run(session)
        last = session.last_assistant()
    assert len(server.requests) == FAST.max_retries + 1
    starts = [e for e in events if e["type"] == "auto_retry_start"]
    assert [e["attempt"] for e in starts] == [1, 2] and {e["maxAttempts"] for e in starts} == {2}
    assert events[-1]["type"] == "auto_retry_end" and events[-1]["success"] is False
    assert last is not None and last["stopReason"] == "error"


@pytest.mark.parametrize("api", APIS)
async def test_retry_disabled_sends_one_request(api: str) -> None:
    async with LoopbackServer([FAILURES["429"]]) as server:
        events = await run(core(server.url, api, Retry(enabled=False, max_retries=5)))
    assert len(server.requests) == 1 and events == []


async def test_a_prompt_retry_policy_replaces_the_sessions() -> None:
    async with LoopbackServer([FAILURES["503"]]) as server:
        events = await run(core(server.url, APIS[0]), retry=Retry(max_retries=0))
    assert len(server.requests) == 1 and events == []
    async with LoopbackServer([FAILURES["503"]]) as server:
        await run(core(server.url, APIS[0]), retry=Retry(max_retries=4, base_delay_ms=1))
    assert len(server.requests) == 5


async def test_a_retry_that_works_is_announced_start_and_end() -> None:
    text = (
        b'data: {"id":"r","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    async with LoopbackServer([FAILURES["429"], Reply(text)]) as server:
        session = core(server.url, APIS[0])
        events = await run(session)
        last = session.last_assistant()
    assert len(server.requests) == 2
    assert [(e["type"], e["attempt"]) for e in events] == [("auto_retry_start", 1), ("auto_retry_end", 1)]
    assert events[-1]["success"] is True
    assert last is not None and last["stopReason"] == "stop"


@pytest.mark.parametrize(
    "header", ["0", email.utils.formatdate(time.time() - 60, usegmt=True)], ids=["zero", "past-date"]
)
async def test_retry_after_zero_or_past_means_at_once(header: str) -> None:
    async with LoopbackServer([Reply(b"busy", 429, {"retry-after": header})]) as server:
        events = await run(core(server.url, APIS[0], Retry(max_retries=2, base_delay_ms=60_000)))
    assert len(server.requests) == 3  # a 60 s backoff would have timed the test out
    assert [e["delayMs"] for e in events if e["type"] == "auto_retry_start"] == [0, 0]


@pytest.mark.parametrize(
    "header", ["3600", email.utils.formatdate(time.time() + 3600, usegmt=True)], ids=["seconds", "date"]
)
async def test_retry_after_beyond_the_cap_fails_clearly_at_once(header: str) -> None:
    async with LoopbackServer([Reply(b"busy", 429, {"retry-after": header})]) as server:
        session = core(server.url, APIS[0])
        events = await run(session)
        last = session.last_assistant()
    assert len(server.requests) == 1 and events == []
    assert last is not None and "the server asked to retry after" in last.get("errorMessage", "")
    assert "max_retry_delay 5 s" in last.get("errorMessage", "")


async def test_a_reply_cut_midway_is_retried_by_the_session_within_the_same_budget() -> None:
    partial = b'data: {"id":"r","choices":[{"index":0,"delta":{"content":"par"}}]}\n\n'
    cut = Reply(partial + b"data: " + b"x" * 100, reset_after=len(partial) + 10)
    async with LoopbackServer([cut]) as server:
        session = core(server.url, APIS[0])
        events = await run(session)
    assert len(server.requests) == FAST.max_retries + 1
    assert [e["attempt"] for e in events if e["type"] == "auto_retry_start"] == [1, 2]
