"""Deferred MCP tools and ``search_mcp_tools``: a server listing 5,000 tools sends the budget,
the model finds a deferred tool by a word of its name or description and calls it in the same
run; found tools stay for the session and come back when it is resumed; a request to OpenAI's
Chat Completions (its real request builder, answered by ``MockProvider``) never declares more
than the 128 tools it takes, however many the model finds. The server is real
(``many_tools_server.py``, the SDK's own server API)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.mcp.test_mcp_session import results, session, text_of
from tests.mcp.test_mcp_tool_budget import many, sent_tools

from tether.agent import Agent
from tether.ai import SimpleStreamOptions
from tether.mcp import McpServers
from tether.mcp.connection import ToolInfo
from tether.mcp.tool_budget import DEFAULT_TOOL_LIMIT
from tether.mcp.tool_search import SEARCH_TOOL, search
from tether.session import AgentSession
from tether.testing import MockProvider, Reply
from tether.testing.loopback import loopback_model
from tether.testing.scripted import ScriptedModel, reply, tool_call

COUNT = 5000


async def test_the_model_finds_a_deferred_tool_and_calls_it_in_the_same_run() -> None:
    model = ScriptedModel(
        [
            reply(tool_call(SEARCH_TOOL, {"query": "4321", "limit": 1})),
            reply(tool_call("mcp__big__tool_4321", {"x": 1})),
            reply("done"),
            reply("again"),
        ]
    )
    core = session(model, many("big", COUNT))
    notices: list[str] = []
    core.subscribe(lambda event: notices.append(event["message"]) if event["type"] == "notice" else None)
    try:
        added = await core.prompt("add 1 with the 4321 tool")
        await core.prompt("and again")
        [status] = core.mcp.statuses() if core.mcp is not None else []
    finally:
        await core.close()
    assert all(len(sent_tools(model, i)) <= DEFAULT_TOOL_LIMIT for i in range(4))
    first, after_search, _, next_prompt = (sent_tools(model, i) for i in range(4))
    assert SEARCH_TOOL in first and "mcp__big__tool_4321" not in first
    assert "mcp__big__tool_4321" in after_search and len(after_search) == len(first)  # it took a slot
    assert "mcp__big__tool_4321" in next_prompt  # found for the rest of the session
    searched, called = results(added)
    assert "- mcp__big__tool_4321: Adds 4321 to x." in text_of(searched)
    assert searched["details"] == {"found": [["big", "tool_4321"]]}
    assert (text_of(called), called["isError"]) == ("tool 4321: 4322", False)
    assert "tool_4321" not in status.deferred and len(status.deferred) == COUNT - len(status.tools)
    [note] = [n for n in notices if "deferred" in n]  # once, though the search changed the count
    assert f"MCP server 'big': {COUNT - 124} of its {COUNT} tools deferred" in note


async def test_a_resumed_session_offers_the_tools_found_before() -> None:
    """The found tools are read back from the transcript's search results: no search again."""
    model = ScriptedModel([reply(tool_call(SEARCH_TOOL, {"query": "tool_0999"})), reply("found it")])
    core = session(model, many("big", 1000))
    try:
        await core.prompt("find tool 999")
        transcript = list(core.agent.messages)
    finally:
        await core.close()
    resumed_model = ScriptedModel([reply(tool_call("mcp__big__tool_0999", {"x": 2})), reply("done")])
    agent = Agent(model=resumed_model.model, stream_fn=resumed_model, messages=transcript)
    resumed = AgentSession(agent, mcp=McpServers([many("big", 1000)]), owns=("mcp",))
    try:
        added = await resumed.prompt("now call it")
    finally:
        await resumed.close()
    assert "mcp__big__tool_0999" in sent_tools(resumed_model)
    assert text_of(results(added)[0]) == "tool 999: 1001"


async def test_a_search_is_read_back_once_however_often_the_transcript_is_replaced() -> None:
    """A shell command, a retry or a compaction gives the agent a new transcript list: the
    session's searches are not read into ``found`` again (it grew by the whole transcript's
    finds each time, and the re-read pairs counted as the latest)."""
    prompts = [reply(f"answer {i}") for i in range(5)]
    model = ScriptedModel(
        [reply(tool_call(SEARCH_TOOL, {"query": "tool_250", "limit": 3})), reply("found"), *prompts]
    )
    core = session(model, many("big", 300))
    try:
        await core.prompt("search")
        assert core.mcp is not None
        first = list(core.mcp.found)
        for i in range(5):
            core.agent.messages = list(core.agent.messages)
            await core.prompt(f"prompt {i}")
            assert core.mcp.found == first
    finally:
        await core.close()
    assert len(first) == 3


async def test_a_new_conversation_does_not_offer_what_the_last_one_found() -> None:
    model = ScriptedModel(
        [reply(tool_call(SEARCH_TOOL, {"query": "tool_0250", "limit": 1})), reply("found"), reply("fresh")]
    )
    core = session(model, many("big", 300))
    try:
        await core.prompt("search")
        assert "mcp__big__tool_0250" in sent_tools(model, 1)
        core.new_session()
        await core.prompt("a new conversation")
    finally:
        await core.close()
    assert "mcp__big__tool_0250" not in sent_tools(model, 2)


def sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def completions_call(name: str, arguments: dict[str, Any]) -> bytes:
    """An OpenAI Chat Completions stream whose answer is one tool call."""
    call = {
        "index": 0,
        "id": f"call_{name}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return (
        sse({"id": "r", "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [call]}}]})
        + sse({"id": "r", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
        + b"data: [DONE]\n\n"
    )


def completions_text(text: str) -> bytes:
    return (
        sse({"id": "r", "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]})
        + sse({"id": "r", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        + b"data: [DONE]\n\n"
    )


async def test_an_openai_request_never_declares_more_than_128_tools(tmp_path: Path) -> None:
    """Seven searches of 20 tools find 140, more than the budget holds: the latest found come
    first, and the request stays within OpenAI's 128 (more fails every request with
    ``array_above_max_length``)."""
    searches = [Reply(completions_call(SEARCH_TOOL, {"query": "tool", "limit": 20})) for _ in range(7)]
    provider = MockProvider(
        [
            *searches,
            Reply(completions_call(SEARCH_TOOL, {"query": "4999", "limit": 1})),
            Reply(completions_call("mcp__big__tool_4999", {"x": 1})),
            Reply(completions_text("done")),
        ]
    )
    spec = loopback_model("https://api.example.invalid/v1", "openai-completions", provider="openai")
    async with provider.client() as client:
        agent = Agent(model=spec, options=SimpleStreamOptions(api_key="k", http_client=client))
        core = AgentSession(agent, mcp=McpServers([many("big", COUNT)], log_dir=tmp_path), owns=("mcp",))
        try:
            added = await core.prompt("go")
        finally:
            await core.close()
    declared = [[t["function"]["name"] for t in json.loads(r.content)["tools"]] for r in provider.requests]
    assert len(declared) == 10
    assert max(len(tools) for tools in declared) == 128
    assert "mcp__big__tool_4999" not in declared[7] and "mcp__big__tool_4999" in declared[8]
    last = results(added)[-1]
    assert (text_of(last), last["isError"]) == ("tool 4999: 5000", False)
    assert all(not r["isError"] for r in results(added))


def test_the_search_ranks_by_name_then_description_and_an_exact_name_first() -> None:
    def info(name: str, description: str) -> tuple[str, ToolInfo, str]:
        return ("srv", ToolInfo(name, description, {"type": "object"}), f"mcp__srv__{name}")

    candidates = [
        info("list_issues", "List the issues of a repository."),
        info("create_issue", "Open an issue."),
        info("issue", "Read one issue."),
        info("merge", "Merge a pull request; closes its issue."),
    ]
    assert [c[1].name for c in search("issue", candidates, 10)] == [
        "issue",  # the exact name
        "list_issues",
        "create_issue",
        "merge",  # the description only
    ]
    assert [c[1].name for c in search("create issue", candidates, 1)] == ["create_issue"]
    assert [c[1].name for c in search("mcp__srv__merge", candidates, 1)] == ["merge"]
    assert search("deploy", candidates, 10) == []
