"""Listings kept between runs (tether.mcp.tool_cache): a server whose listing is kept for its
configuration is offered at once and started only when first used, with the real toy server."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from tests.mcp.conftest import TOY, alive

from tether.errors import ToolError
from tether.mcp import McpServerConfig, McpServers


def switchable(tmp_path: Path, mode: str = "") -> McpServerConfig:
    """The toy server behind a shell that reads its mode from a file at each start: the same
    configuration (so the same kept listing) can serve, hang (``mute``) or exit at once (``exit``)."""
    switch = tmp_path / "mode"
    switch.write_text(mode)
    pids = tmp_path / "pids"
    pids.mkdir(exist_ok=True)
    script = f'm=$(cat {switch}); [ "$m" = exit ] && exit 3; exec {sys.executable} {TOY} $m'
    return McpServerConfig("toy", command="sh", args=("-c", script), env={"TOY_PID_DIR": str(pids)})


def starts(tmp_path: Path) -> int:
    return len(list((tmp_path / "pids").iterdir()))


async def kept(config: McpServerConfig, tmp_path: Path) -> list[str]:
    """Run the server once, as ``tether mcp list`` does, so its listing is kept; its tool names."""
    async with McpServers([config], log_dir=tmp_path / "logs") as servers:
        [status] = servers.statuses()
        assert status.status == "ready", status.error
        return [t.name for t in servers.tools()]


async def test_a_kept_listing_is_offered_at_once_and_the_server_starts_on_first_call(tmp_path: Path) -> None:
    config = switchable(tmp_path)
    names = await kept(config, tmp_path)
    assert "mcp__toy__add" in names and starts(tmp_path) == 1
    servers = McpServers([config], log_dir=tmp_path / "logs")
    try:
        servers.start()
        assert await servers.listed()
        assert [t.name for t in servers.tools()] == names
        [status] = servers.statuses()
        assert status.status == "stopped" and starts(tmp_path) == 1  # nothing started
        assert {p.split(" ")[0] for p in status.prompts} == {"/mcp__toy__review", "/mcp__toy__show"}
        connection = servers.connections["toy"]
        results = await asyncio.gather(
            connection.call("add", {"a": 2, "b": 3}), connection.call("add", {"a": 4, "b": 5})
        )
        assert [r.content[0].text for r in results] == ["5", "9"]  # type: ignore[union-attr]
        assert starts(tmp_path) == 2  # the two calls shared one start
        assert servers.statuses()[0].status == "ready"
    finally:
        await servers.close()


async def test_a_changed_configuration_is_started_and_waited_for_again(tmp_path: Path) -> None:
    config = switchable(tmp_path)
    await kept(config, tmp_path)
    changed = McpServerConfig(
        config.name, command="sh", args=config.args, env={**config.env, "TOY_MARK": "x"}
    )
    servers = McpServers([changed], log_dir=tmp_path / "logs")
    try:
        assert await servers.listed()
        assert servers.statuses()[0].status == "ready" and starts(tmp_path) == 2
    finally:
        await servers.close()


async def test_a_kept_server_that_fails_says_so_and_is_waited_for_next_time(tmp_path: Path) -> None:
    config = switchable(tmp_path)
    await kept(config, tmp_path)
    (tmp_path / "mode").write_text("exit")
    servers = McpServers([config], log_dir=tmp_path / "logs")
    try:
        assert await servers.listed()
        with pytest.raises(ToolError, match=r"MCP server 'toy' is not available: .*Connection closed"):
            await servers.connections["toy"].call("add", {"a": 1, "b": 1})
        [status] = servers.statuses()
        assert status.status == "failed" and status.error is not None
        assert servers.tools() == []  # withdrawn, as a server that failed its first start has none
    finally:
        await servers.close()
    again = McpServers([config], log_dir=tmp_path / "logs")
    try:
        again.start()  # no listing kept any more: started at once, and waited for
        assert again.connections["toy"].status == "starting"
        await again.listed()
        assert again.statuses()[0].status == "failed" and again.tools() == []
    finally:
        await again.close()


async def test_closing_stops_a_kept_server_still_starting(tmp_path: Path) -> None:
    config = switchable(tmp_path)
    await kept(config, tmp_path)
    (tmp_path / "mode").write_text("mute")  # never answers initialize
    servers = McpServers([config], log_dir=tmp_path / "logs")
    call = asyncio.ensure_future(servers.connections["toy"].call("add", {"a": 1, "b": 1}))
    for _ in range(600):
        if starts(tmp_path) == 2:
            break
        await asyncio.sleep(0.05)
    [pid] = [int(p.name) for p in (tmp_path / "pids").iterdir() if p.read_text() == "mute"]
    await servers.close()
    with pytest.raises(ToolError, match="not available: stopped while starting"):
        await call
    assert not alive(pid)
    # stopped by us, not failed by itself: the listing is still kept
    assert McpServers([config], log_dir=tmp_path / "logs").tools() != []
