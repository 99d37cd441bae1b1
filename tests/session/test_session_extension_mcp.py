"""pi's ``registerMcpServer`` in a real session: extension files (loaded as ``-e`` loads them)
register the SDK-built toy server over stdio. A server registered in ``setup`` starts with the
session and its tools are ``mcp__NAME__TOOL``; one registered later starts at once and joins the
next prompt; ``unregister_mcp_server`` stops its process and takes its tools away; the MCP files'
server of the same name wins (said once); bad names, bad configs and another extension's name
raise; nothing outlives ``close``."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from extension_support import extension_dirs, start_with_extensions
from tests.mcp.conftest import alive

from tether.session.settings import Settings

pytestmark = pytest.mark.subprocess

TOY = Path(__file__).resolve().parents[1] / "mcp" / "toy_server.py"

OWNER = """
import json
import os
import sys

SERVER = {"command": sys.executable, "args": [os.environ["TOY_SERVER"]], "env": {"TOY_PID_DIR": os.environ["PIDS"]}}
REFUSED = []

def setup(api):
    api.register_mcp_server("toy", SERVER)
    api.register_mcp_server("shadow", {**SERVER, "env": {"TOY_MARK": "from-the-extension"}})
    for name, config in [("a/b", SERVER), ("nothing", {}), ("both", {**SERVER, "url": "http://127.0.0.1:9/"})]:
        try:
            api.register_mcp_server(name, config)
        except ValueError as exc:
            REFUSED.append(str(exc))

    @api.command("late")
    def late(args, ctx):
        api.register_mcp_server("late", SERVER)
        return json.dumps(sorted(c.name for c in api.get_mcp_servers()))

    @api.command("drop")
    def drop(args, ctx):
        api.unregister_mcp_server("late")

    @api.command("refused")
    def refused(args, ctx):
        return json.dumps(REFUSED)
"""

OTHER = """
import json

def setup(api):
    try:
        api.register_mcp_server("toy", {"command": "true"})
    except ValueError as exc:
        api.register_mcp_server("other", {"command": "true", "enabled": False})
        MESSAGE.append(str(exc))

    @api.on("mcp_servers_change")
    def changed(event):
        CHANGES.append(event["servers"])

    @api.command("other-refused")
    def refused(args, ctx):
        return json.dumps([MESSAGE[0], CHANGES])

MESSAGE, CHANGES = [], []
"""


def call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"content": [{"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}]}


def text(reply: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "chunks": [reply]}]}


async def test_extension_servers_start_stop_and_yield_to_the_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, home, pids = (
        extension_dirs(tmp_path, monkeypatch)["project"],
        tmp_path / "home",
        tmp_path / "pids",
    )
    pids.mkdir()
    shadow = {"command": sys.executable, "args": [str(TOY)], "env": {"TOY_MARK": "from-the-file"}}
    (home / "config" / "mcp.json").write_text(json.dumps({"mcpServers": {"shadow": shadow}}))
    replies = [
        call("mcp__toy__add", {"a": 2, "b": 3}, "c1"),
        call("mcp__shadow__env", {}, "c2"),
        text("first"),
        call("mcp__late__add", {"a": 1, "b": 1}, "c3"),
        text("second"),
        text("third"),
    ]
    (tmp_path / "script.json").write_text(json.dumps(replies))
    for name, value in {
        "TETHER_SCRIPTED": str(tmp_path / "script.json"),
        "TOY_SERVER": str(TOY),
        "PIDS": str(pids),
    }.items():
        monkeypatch.setenv(name, value)
    owner, other = tmp_path / "owner.py", tmp_path / "other.py"
    owner.write_text(textwrap.dedent(OWNER))
    other.write_text(textwrap.dedent(OTHER))
    core = start_with_extensions(project, owner, other, settings=Settings(approval="yes"), persist=False)
    said: list[str] = []
    core.subscribe(lambda e: said.append(e["message"]) if e["type"] == "notice" else None)
    try:
        first = await core.submit("use the tools")
        before = {int(p.name) for p in pids.iterdir()}
        await core.submit("/late")
        second = await core.submit("and the late one")
        [late_pid] = {int(p.name) for p in pids.iterdir()} - before
        tools_with_late = sorted(t.name for t in core.agent.tools if t.name.startswith("mcp__late__"))
        await core.submit("/drop")
        await core.submit("without it")
        tools_after = [t.name for t in core.agent.tools if t.name.startswith("mcp__late__")]
        for _ in range(200):
            if not alive(late_pid):
                break
            await asyncio.sleep(0.05)
        late_alive_after_drop = alive(late_pid)
        await core.submit("/refused")
        await core.submit("/other-refused")
        notice = core.notice
    finally:
        await core.close()
    results: dict[str, str] = {
        str(m["toolCallId"]): json.dumps(m["content"]) for m in [*first, *second] if m["role"] == "toolResult"
    }
    assert json.loads(results["c1"]) == [{"type": "text", "text": "5"}]
    assert json.loads(results["c2"])[0]["text"].startswith("from-the-file ")  # the file's server
    assert json.loads(results["c3"]) == [{"type": "text", "text": "2"}]
    assert "mcp__late__add" in tools_with_late and tools_after == []
    assert not late_alive_after_drop
    assert notice is not None and "MCP server 'shadow' of an extension: the MCP files' server" in notice
    assert json.loads(next(s for s in said if s.startswith('["late'))) == ["late", "other", "shadow", "toy"]
    refused = json.loads(next(s for s in said if s.startswith('["extension owner')))
    assert refused == [
        "extension owner: MCP server name 'a/b': no '/', '\\' or control characters (it names a log file)",
        "extension owner: MCP server 'nothing': give either a 'command' or a 'url'",
        "extension owner: MCP server 'both': give either a 'command' or a 'url'",
    ]
    other_said = json.loads(next(s for s in said if s.startswith('["MCP server')))
    assert other_said == [
        "MCP server 'toy' is registered by the extension owner",
        [["late", "other", "shadow", "toy"], ["other", "shadow", "toy"]],  # /late, then /drop
    ]
    assert [int(p.name) for p in pids.iterdir() if alive(int(p.name))] == []  # nothing outlived close
