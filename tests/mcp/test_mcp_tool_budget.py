"""The MCP tool budget: a server listing thousands of tools sends a bounded number with each
request (OpenAI takes at most 128 tools), says once which were left out and why, and lets its
``mcp.json`` entry choose (``enabledTools``, ``disabledTools``, ``maxTools``). A real server
(``many_tools_server.py``, the SDK's own server API) lists 2,000 tools."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from tests.mcp.test_mcp_session import results, session, text_of

from tether.mcp import McpConfigError, McpServerConfig, McpServers
from tether.mcp.config import server_config
from tether.mcp.connection import ToolInfo
from tether.mcp.tool_budget import MCP_TOOL_BUDGET
from tether.testing.scripted import ScriptedModel, reply, tool_call

MANY = Path(__file__).with_name("many_tools_server.py")


def many(name: str, count: int, **entry: Any) -> McpServerConfig:
    """The many-tools server as an ``mcp.json`` entry would give it (``entry``: more keys)."""
    return server_config(
        name, {"command": sys.executable, "args": [str(MANY), str(count)], **entry}, source="user"
    )


def sent_tools(model: ScriptedModel, request: int = 0) -> list[str]:
    return [t["name"] for t in model.requests[request].context.get("tools") or []]


async def test_a_server_of_2000_tools_sends_the_budget_and_says_which_are_left_out() -> None:
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
    assert server_tools == [f"mcp__big__tool_{i:04d}" for i in range(MCP_TOOL_BUDGET)]
    assert len(sent_tools(model)) < 128
    assert text_of(results(added)[0]) == "tool 7: 8"
    [note] = [n for n in notices if "left out" in n]  # said once, not at every prompt
    assert "MCP server 'big': 1900 of its 2000 tools left out" in note
    assert "tool_0100, tool_0101, tool_0102" in note and "enabledTools" in note
    [status] = statuses
    assert len(status.tools) == MCP_TOOL_BUDGET and len(status.left_out) == 1900
    assert status.left_out[0].startswith("tool_0100: over the budget")


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
    assert names[10:] == [f"mcp__second__tool_{i:04d}" for i in range(MCP_TOOL_BUDGET - 10)]
    first, second = (n for n in notes if "left out" in n)
    assert "'first': 289 of its 300 tools left out" in first and "maxTools 10" in first
    assert "tool_0000 (disabledTools)" not in first  # chosen away by the user: no news to them
    assert "'second': 210 of its 300 tools left out" in second


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
            server = tool.name.split("__")[1]
            found[server] = found.get(server, 0) + 1
        return found

    def left_out() -> list[str]:
        return [line.split(" tools left out")[0] for line in servers.left_out]

    for name in ("first", "second"):
        assert servers.add(server_config(name, {"command": "unused"}, source="extension"))
    lists("first", 150)
    lists("second", 10)
    assert offered() == {"first": MCP_TOOL_BUDGET}
    assert left_out() == ["MCP server 'first': 50 of its 150", "MCP server 'second': 10 of its 10"]
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
