"""The MCP tool budget: a server listing thousands of tools sends as many with each request as
the model's API accepts beside the agent's own tools (OpenAI takes at most 128 tools), defers the
rest behind ``search_mcp_tools`` (tests/mcp/test_mcp_tool_search.py), says once which were
deferred and why, and lets its ``mcp.json`` entry choose (``enabledTools``, ``disabledTools``,
``maxTools``) or the ``mcp.maxTools`` setting. A real server (``many_tools_server.py``, the SDK's
own server API) lists 2,000 tools."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from tests.mcp.test_mcp_session import results, session, text_of

from tether.agent import Agent
from tether.ai.providers import anthropic, gemini, openai_completions, openai_responses
from tether.mcp import McpConfigError, McpServerConfig, McpServers, tool_limit
from tether.mcp.config import server_config
from tether.mcp.connection import ToolInfo
from tether.mcp.resources import resource_tools
from tether.mcp.tool_budget import ASSUMED_OWN_TOOLS, DEFAULT_TOOL_LIMIT, RESOURCE_TOOLS
from tether.mcp.tool_search import SEARCH_TOOL
from tether.session import AgentSession
from tether.testing.scripted import SCRIPTED_MODEL, ScriptedModel, reply, tool_call
from tether.tools import create_coding_tools
from tether.tools.workspace import Workspace
from tether.wire import ModelInfo

MANY = Path(__file__).with_name("many_tools_server.py")


def many(name: str, count: int, **entry: Any) -> McpServerConfig:
    """The many-tools server as an ``mcp.json`` entry would give it (``entry``: more keys)."""
    return server_config(
        name, {"command": sys.executable, "args": [str(MANY), str(count)], **entry}, source="user"
    )


def sent_tools(model: ScriptedModel, request: int = 0) -> list[str]:
    return [t["name"] for t in model.requests[request].context.get("tools") or []]


async def test_a_server_of_2000_tools_sends_the_budget_and_says_which_are_deferred() -> None:
    model = ScriptedModel([reply(tool_call("mcp__big__tool_0007", {"x": 1})), reply("done"), reply("again")])
    core = session(model, many("big", 2000))
    notices: list[str] = []
    core.subscribe(lambda event: notices.append(event["message"]) if event["type"] == "notice" else None)
    try:
        added = await core.prompt("go")
        await core.prompt("and again")
        statuses = core.mcp.statuses() if core.mcp is not None else []
    finally:
        await core.close()
    server_tools = [n for n in sent_tools(model) if n.startswith("mcp__big__")]
    assert len(sent_tools(model)) == DEFAULT_TOOL_LIMIT  # the scripted API documents no limit
    assert sent_tools(model)[-1] == SEARCH_TOOL  # one slot of the budget
    # the SDK's server offers resources: their tools come too
    budget = DEFAULT_TOOL_LIMIT - RESOURCE_TOOLS - 1
    assert server_tools == [f"mcp__big__tool_{i:04d}" for i in range(budget)]
    assert text_of(results(added)[0]) == "tool 7: 8"
    [note] = [n for n in notices if "deferred" in n]  # said once, not at every prompt
    assert "MCP server 'big': 1876 of its 2000 tools deferred, over the budget (124 MCP tools" in note
    assert "tool_0124, tool_0125, tool_0126" in note and SEARCH_TOOL in note and "enabledTools" in note
    [status] = statuses
    assert len(status.tools) == budget and len(status.deferred) == 1876 and status.left_out == ()
    assert status.deferred[0] == "tool_0124"


async def test_enabled_tools_choose_which_go_with_a_request() -> None:
    """A tool far past the budget is reachable once the entry names it (a pattern)."""
    model = ScriptedModel([reply(tool_call("mcp__big__tool_1999", {"x": 1})), reply("done")])
    core = session(model, many("big", 2000, enabledTools=["tool_19?9", "tool_0001"]))
    try:
        added = await core.prompt("go")
    finally:
        await core.close()
    assert sorted(n for n in sent_tools(model) if n.startswith("mcp__")) == sorted(
        ["mcp__big__tool_0001", *(f"mcp__big__tool_19{d}9" for d in range(10))]
    )
    assert text_of(results(added)[0]) == "tool 1999: 2000"


async def test_disabled_tools_and_max_tools_share_the_budget_between_servers() -> None:
    async with McpServers(
        [many("first", 300, maxTools=10, disabledTools=["tool_0000"]), many("second", 300)]
    ) as servers:
        await servers.listed()
        names = [t.name for t in servers.tools() if t.name.startswith("mcp__")]
        notes = servers.notes
    assert names[:10] == [f"mcp__first__tool_{i:04d}" for i in range(1, 11)]
    assert names[10:] == [
        f"mcp__second__tool_{i:04d}"
        for i in range(DEFAULT_TOOL_LIMIT - ASSUMED_OWN_TOOLS - RESOURCE_TOOLS - 1 - 10)
    ]  # no fit: room is left for the agent's own tools (and the search tool takes one)
    first, second = (n for n in notes if "deferred" in n)
    assert "'first': 289 of its 300 tools deferred" in first and "maxTools 10" in first
    assert "tool_0000 (disabledTools)" not in first  # chosen away by the user: no news to them
    assert "'second': 214 of its 300 tools deferred" in second


def test_each_api_says_how_many_tools_a_request_takes() -> None:
    """Documented limits (the providers' modules cite them); the default where none is."""
    assert openai_completions.PROVIDER.max_tools == openai_responses.PROVIDER.max_tools == 128
    assert gemini.PROVIDER.max_tools == 512 and anthropic.PROVIDER.max_tools is None
    assert [
        tool_limit(api) for api in ("openai-responses", "google-generative-ai", "anthropic-messages")
    ] == [
        128,
        512,
        DEFAULT_TOOL_LIMIT,
    ]
    assert tool_limit("no-such-api") == DEFAULT_TOOL_LIMIT
    assert len(resource_tools(list)) == RESOURCE_TOOLS


async def test_the_budget_is_what_the_models_api_takes_beside_the_agents_own_tools(tmp_path: Path) -> None:
    """A fixed 100 tools a request went to every API: Gemini, which takes 512, was held to 100,
    and an agent with more than 25 tools of its own (the resource tools came on top) sent OpenAI
    more than its 128. Switching the model to another API gives the next prompt that API's budget."""
    own = create_coding_tools(Workspace(tmp_path), ["read", "bash", "edit", "write", "grep", "find", "ls"])
    model = ScriptedModel([reply("one"), reply("two"), reply("three")])
    to_openai: ModelInfo = {**SCRIPTED_MODEL, "api": "openai-completions"}
    to_google: ModelInfo = {**SCRIPTED_MODEL, "api": "google-generative-ai"}
    to_anthropic: ModelInfo = {**SCRIPTED_MODEL, "api": "anthropic-messages"}
    agent = Agent(model=to_openai, tools=own, stream_fn=model)
    core = AgentSession(agent, mcp=McpServers([many("big", 2000)]), owns=("mcp",))
    try:
        await core.prompt("go")
        agent.model = to_google
        await core.prompt("go on")
        agent.model = to_anthropic
        await core.prompt("and again")
    finally:
        await core.close()
    openai, google, anthropic_ = (sent_tools(model, i) for i in range(3))
    assert len(openai) == 128 and openai[:7] == [t.name for t in own]
    assert len(google) == 512 and google[:7] == [t.name for t in own]
    assert len(anthropic_) == DEFAULT_TOOL_LIMIT and anthropic_[:7] == [t.name for t in own]


async def test_a_bare_agent_given_the_servers_tools_without_fit_stays_within_openais_limit(
    tmp_path: Path,
) -> None:
    """A bare ``Agent`` takes ``servers.tools()`` (docs/library.md, docs/mcp.md); before ``fit``
    the budget left no room for the agent's own tools (128 less the resource tools), so 5 tools of
    its own and a server of 200 sent OpenAI 133 and every request failed. Until ``fit`` it leaves
    room for ``ASSUMED_OWN_TOOLS``; ``fit`` with the model's limit fills the request exactly."""
    own = create_coding_tools(Workspace(tmp_path), ["read", "bash", "edit", "write", "ls"])
    model = ScriptedModel([reply("one"), reply("two")])
    openai: ModelInfo = {**SCRIPTED_MODEL, "api": "openai-completions"}
    async with McpServers([many("big", 200)], log_dir=tmp_path, cache_dir=tmp_path) as servers:
        await Agent(model=openai, tools=[*own, *servers.tools()], stream_fn=model).prompt("go")
        servers.fit(tool_limit(openai["api"]), len(own))  # as the docs show
        await Agent(model=openai, tools=[*own, *servers.tools()], stream_fn=model).prompt("go on")
    unfitted, fitted = sent_tools(model, 0), sent_tools(model, 1)
    assert len(unfitted) == len(own) + DEFAULT_TOOL_LIMIT - ASSUMED_OWN_TOOLS <= 128
    assert unfitted[: len(own)] == [t.name for t in own]
    assert len(fitted) == 128 and fitted[: len(own)] == [t.name for t in own]


async def test_the_mcp_max_tools_setting_wins_over_the_models_limit() -> None:
    model = ScriptedModel([reply("one")])
    agent = Agent(model={**SCRIPTED_MODEL, "api": "google-generative-ai"}, stream_fn=model)
    core = AgentSession(agent, mcp=McpServers([many("big", 300)], max_tools=20), owns=("mcp",))
    try:
        await core.prompt("go")
        [status] = core.mcp.statuses() if core.mcp is not None else []
    finally:
        await core.close()
    assert [n for n in sent_tools(model) if n.startswith("mcp__")] == [
        f"mcp__big__tool_{i:04d}" for i in range(19)
    ]  # the search tool is one of the 20
    assert len(sent_tools(model)) == 20 + RESOURCE_TOOLS
    assert status.deferred[0] == "tool_0019" and len(status.deferred) == 281


async def test_the_budget_is_shared_anew_when_a_server_comes_goes_or_lists_its_tools_anew(
    tmp_path: Path,
) -> None:
    """The shares are kept between prompts (``tools()`` and ``left_out`` run before each one),
    yet every change of the servers or of what one listed shows at the next prompt."""
    servers = McpServers([], log_dir=tmp_path, cache_dir=tmp_path)

    def lists(name: str, count: int) -> None:
        servers.connections[name].tools = [
            ToolInfo(f"tool_{i:04d}", "", {"type": "object"}) for i in range(count)
        ]

    def offered() -> dict[str, int]:
        found: dict[str, int] = {}
        for tool in servers.tools():
            if tool.name == SEARCH_TOOL:
                continue
            server = tool.name.split("__")[1]
            found[server] = found.get(server, 0) + 1
        return found

    def left_out() -> list[str]:
        return [line.split(" tools deferred")[0] for line in servers.left_out]

    for name in ("first", "second"):
        assert servers.add(server_config(name, {"command": "unused"}, source="extension"))
    lists("first", 150)
    lists("second", 10)
    servers.fit(100, 0)
    assert offered() == {"first": 99}  # and the search tool
    assert left_out() == ["MCP server 'first': 51 of its 150", "MCP server 'second': 10 of its 10"]
    servers.fit(140, 0)  # a model of another API: the shares follow the budget
    assert offered() == {"first": 139} and left_out() == [
        "MCP server 'first': 11 of its 150",
        "MCP server 'second': 10 of its 10",
    ]
    servers.fit(100, 0)
    lists("first", 20)  # listed anew (a start), fewer tools
    assert offered() == {"first": 20, "second": 10} and left_out() == []
    servers.add(server_config("first", {"command": "unused", "maxTools": 5}, source="extension"))
    lists("first", 20)  # the extension's server replaced, configuration and all: now last in order
    assert offered() == {"second": 10, "first": 5} and left_out() == ["MCP server 'first': 15 of its 20"]
    assert servers.remove("second")
    assert offered() == {"first": 5}
    await servers.close()


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"maxTools": 0}, "'maxTools' must be a whole number from 1"),
        ({"maxTools": "ten"}, "'maxTools' must be a whole number from 1"),
        ({"enabledTools": "tool_*"}, "'enabledTools' must be a list of strings"),
        ({"disabledTools": [3]}, "'disabledTools' must be a list of strings"),
    ],
)
def test_a_bad_budget_setting_is_one_line_naming_it(entry: dict[str, Any], problem: str) -> None:
    with pytest.raises(McpConfigError, match=problem):
        many("big", 1, **entry)
