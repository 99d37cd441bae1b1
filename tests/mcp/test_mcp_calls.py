"""Calls that could hang or mislead: the per-call timeout and the progress that resets it, a
server that died while idle, tools that need task support, names that collide, SSE servers."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from tests.mcp.conftest import TOY, alive, toy
from tests.mcp.test_mcp_session import results, session, text_of

from tether.mcp import McpServerConfig, McpServers
from tether.testing.scripted import ScriptedModel, reply, tool_call


async def test_a_call_without_answer_or_progress_times_out_and_the_server_keeps_serving() -> None:
    model = ScriptedModel(
        [
            reply(tool_call("mcp__toy__sleep", {"seconds": 600})),
            reply(tool_call("mcp__toy__add", {"a": 1, "b": 2})),
            reply("done"),
        ]
    )
    core = session(model, toy(tool_timeout=0.5))
    try:
        slept, added = results(await core.prompt("go"))
    finally:
        await core.close()
    assert slept["isError"]
    assert "'sleep' did not answer within 0.5 s" in text_of(slept) and "'timeout'" in text_of(slept)
    assert (added["isError"], text_of(added)) == (False, "3")


async def test_progress_notifications_reset_the_timeout_and_become_tool_updates() -> None:
    """20 steps of 0.15 s (3 s at least) under a 1.5 s timeout: only the progress after each
    step keeps the call alive."""
    model = ScriptedModel([reply(tool_call("mcp__toy__steps", {"count": 20, "pause": 0.15})), reply("done")])
    core = session(model, toy(tool_timeout=1.5))
    updates: list[Any] = []
    core.subscribe(lambda e: updates.append(e) if e["type"] == "tool_execution_update" else None)
    try:
        [result] = results(await core.prompt("go"))
    finally:
        await core.close()
    assert (result["isError"], text_of(result)) == (False, "took 20 steps")
    texts = [u["partialResult"].content[0]["text"] for u in updates]
    assert texts[0] == "progress 1/20: step 1" and texts[-1] == "progress 20/20: step 20"
    assert updates[-1]["partialResult"].details["progress"] == 20


async def test_a_server_that_died_while_idle_is_restarted_before_the_next_call(tmp_path: Path) -> None:
    model = ScriptedModel(
        [reply(tool_call("mcp__toy__pid")), reply("one"), reply(tool_call("mcp__toy__pid")), reply("two")]
    )
    core = session(model, toy(), log_dir=tmp_path)
    try:
        [first] = results(await core.prompt("first"))
        pid = int(text_of(first))
        os.kill(pid, signal.SIGKILL)
        assert core.mcp is not None
        deadline = time.monotonic() + 10
        while core.mcp.statuses()[0].status != "failed" and time.monotonic() < deadline:
            await __import__("asyncio").sleep(0.05)
        [status] = core.mcp.statuses()
        assert status.status == "failed" and status.error is not None and "exited (code -9)" in status.error
        [second] = results(await core.prompt("second"))
    finally:
        await core.close()
    assert not second["isError"], text_of(second)
    assert int(text_of(second)) != pid and not alive(int(text_of(second)))


async def test_task_required_tools_are_not_offered() -> None:
    tasks = McpServerConfig("tasks", command=sys.executable, args=(str(TOY.with_name("tasks_server.py")),))
    model = ScriptedModel([reply(tool_call("mcp__tasks__echo", {"text": "hi"})), reply("done")])
    core = session(model, tasks)
    try:
        [echoed] = results(await core.prompt("go"))
        assert core.mcp is not None
        [status] = core.mcp.statuses()
    finally:
        await core.close()
    sent = {t["name"] for t in model.requests[0].context.get("tools") or []}
    assert "mcp__tasks__echo" in sent and "mcp__tasks__research" not in sent
    assert status.tools == ("mcp__tasks__echo",)
    assert status.left_out == (
        "research: it requires MCP task-augmented execution, which tether does not use",
    )
    assert text_of(echoed) == "echo: hi"


async def test_colliding_tool_names_are_settled_and_reported() -> None:
    model = ScriptedModel([reply("nothing to do")])
    core = session(model, toy("toy", "collide"))
    try:
        await core.prompt("list")
        assert core.mcp is not None
        [status] = core.mcp.statuses()
        notes = core.mcp.notes
    finally:
        await core.close()
    sent = {t["name"] for t in model.requests[0].context.get("tools") or []}
    # both get a hash of their exact names (pi's rule): the same names every time
    dotted, plain = (f"mcp__toy__get_time_{digest(f'mcp__toy__{t}')}" for t in ("get.time", "get_time"))
    assert (
        "mcp__toy__get_time" not in sent and {dotted, plain} <= sent and {dotted, plain} <= set(status.tools)
    )
    assert notes == [
        f"MCP tool 'get.time' of server 'toy' is offered as {dotted} (mcp__toy__get_time would name another tool too)",
        f"MCP tool 'get_time' of server 'toy' is offered as {plain} (mcp__toy__get_time would name another tool too)",
    ]


async def test_the_renamed_tools_call_the_tools_they_stand_for() -> None:
    async with McpServers([toy("toy", "collide")]) as servers:
        by_name = {t.name: t for t in servers.tools()}
        dotted = await by_name[f"mcp__toy__get_time_{digest('mcp__toy__get.time')}"].execute(
            "c1", {}, None, None
        )
        plain = await by_name[f"mcp__toy__get_time_{digest('mcp__toy__get_time')}"].execute(
            "c2", {}, None, None
        )
    assert [dotted.content[0].get("text"), plain.content[0].get("text")] == ["dotted", "plain"]


def digest(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:8]


async def test_an_sse_server(sse_toy: str) -> None:
    model = ScriptedModel([reply(tool_call("mcp__old__add", {"a": 5, "b": 6})), reply("done")])
    core = session(model, McpServerConfig("old", url=sse_toy, sse=True))
    try:
        [result] = results(await core.prompt("go"))
        assert core.mcp is not None
        assert core.mcp.statuses()[0].transport == "sse"
    finally:
        await core.close()
    assert text_of(result) == "11"


async def test_resources_are_listed_and_read_through_the_resource_tools() -> None:
    reads: list[tuple[str, dict[str, str]]] = [
        ("list_mcp_resources", {}),
        ("list_mcp_resource_templates", {"server": "toy"}),
        ("read_mcp_resource", {"server": "toy", "uri": "toy://greeting"}),
        ("read_mcp_resource", {"server": "toy", "uri": "toy://items/42"}),
        ("read_mcp_resource", {"server": "toy", "uri": "toy://pixel.png"}),
        ("read_mcp_resource", {"server": "nope", "uri": "toy://greeting"}),
    ]
    model = ScriptedModel([*(reply(tool_call(name, args)) for name, args in reads), reply("done")])
    core = session(
        model,
        toy(),
        McpServerConfig("tasks", command=sys.executable, args=(str(TOY.with_name("tasks_server.py")),)),
    )
    try:
        listed, templates, greeting, item, pixel, unknown = results(await core.prompt("go"))
    finally:
        await core.close()
    sent = {t["name"] for t in model.requests[0].context.get("tools") or []}
    assert {"list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"} <= sent
    resources = json.loads(text_of(listed))["resources"]  # the tasks server has none: only the toy's
    assert [(r["server"], r["uri"], r["name"]) for r in resources] == [
        ("toy", "toy://greeting", "greeting"),
        ("toy", "toy://pixel.png", "pixel"),
    ]
    assert resources[0]["description"] == "A friendly line" and resources[0]["mimeType"] == "text/plain"
    assert json.loads(text_of(templates)) == {
        "server": "toy",
        "resourceTemplates": [
            {
                "server": "toy",
                "uriTemplate": "toy://items/{item}",
                "name": "item",
                "description": "One item by its id",
                "mimeType": "text/plain",  # the SDK's default
            }
        ],
    }
    assert (text_of(greeting), text_of(item)) == ("hello from the toy", "item 42")
    assert pixel["content"][0]["type"] == "image" and pixel["content"][0]["mimeType"] == "image/png"
    assert unknown[
        "isError"
    ] and "No MCP server 'nope' with resources (servers with resources: toy)" in text_of(unknown)
