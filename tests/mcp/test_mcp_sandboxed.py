"""``sandbox.mcp``: stdio MCP servers started inside the session's sandbox, like its commands.

The toy server's ``sleep`` tool appends to ``TOY_SLEEP_LOG`` and ``pid`` says its process id: in
the sandbox a log beside the workspace is refused (read-only), one in the workspace is written, and
the server is a low pid of its own PID namespace; without the setting it writes beside the
workspace and has the host's pid. The session gives its stdio servers its sandbox only with the
setting. Folders live in the home folder, not in ``/tmp`` (the sandbox's ``/tmp`` is private).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from tests.mcp.conftest import TOY, toy

from tether.mcp import McpServerConfig, McpServers
from tether.session.factory import SessionChoice, create_agent_session
from tether.session.options import AgentOptions
from tether.session.settings import Settings, SettingsError, load_settings
from tether.tools.sandbox import Sandbox, SandboxPolicy, stricter, unavailable

pytestmark = pytest.mark.skipif(
    unavailable() is not None and not os.environ.get("TETHER_REQUIRE_SANDBOX"),
    reason=f"no sandbox here: {unavailable()}",
)


@pytest.fixture
def place() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="tether-mcp-sandbox-", dir=Path.home()))
    (path / "ws").mkdir()
    (path / "beside").mkdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


async def sleep_and_pid(config: McpServerConfig, logs: Path) -> tuple[bool, bool]:
    """Whether ``sleep`` worked, and whether the pid the server says is its own on this host."""
    async with McpServers([config], log_dir=logs) as servers:
        connection = servers.connections[config.name]
        slept = await connection.call("sleep", {"seconds": 0})
        said = await connection.call("pid", {})
        pid = int(said.content[0].text)  # type: ignore[union-attr]
        try:
            ours = str(TOY) in Path(f"/proc/{pid}/cmdline").read_text()
        except OSError:
            ours = False
        return not slept.is_error, ours


async def session_sandbox(place: Path, policy: SandboxPolicy, config: McpServerConfig) -> Sandbox | None:
    """The sandbox ``create_agent_session`` gives the server of ``config`` under ``policy``."""
    script = place / "script.json"
    script.write_text("[]")
    core = create_agent_session(
        AgentOptions(model=f"scripted:{script}"),
        cwd=place / "ws",
        settings=Settings(sandbox=policy),
        session=SessionChoice(persist=False),
        mcp_servers=[config],
    )
    try:
        assert core.mcp is not None
        return core.mcp.connections[config.name].config.sandbox
    finally:
        await core.close()


async def test_a_server_in_the_sandbox_writes_only_in_the_workspace(place: Path) -> None:
    ws = place / "ws"
    sandbox = await session_sandbox(place, SandboxPolicy(mcp=True), toy())
    assert sandbox is not None and sandbox.writable == (ws,)
    # shown read-only: the interpreter and the toy server (a CI checkout lives in /tmp, which the
    # sandbox replaces by an empty one)
    sandbox = replace(sandbox, readable=(Path(sys.prefix), Path(sys.base_prefix), TOY.parent))
    logs = place / "logs"

    beside = toy(env={"TOY_SLEEP_LOG": str(place / "beside" / "log")}, cwd=ws)
    ok, host_pid = await sleep_and_pid(replace(beside, sandbox=sandbox), logs)
    assert not ok and not (place / "beside" / "log").exists()
    assert not host_pid  # its own PID namespace

    inside = toy(env={"TOY_SLEEP_LOG": str(ws / "log")}, cwd=ws)
    ok, _ = await sleep_and_pid(replace(inside, sandbox=sandbox), logs)
    assert ok and (ws / "log").read_text().startswith("start ")

    assert await session_sandbox(place, SandboxPolicy(), beside) is None  # commands confined, servers not
    ok, host_pid = await sleep_and_pid(beside, logs)
    assert ok and (place / "beside" / "log").exists() and host_pid


async def test_only_stdio_servers_are_confined(place: Path) -> None:
    remote = McpServerConfig("toy", url="http://127.0.0.1:9/mcp")
    assert await session_sandbox(place, SandboxPolicy(mcp=True), remote) is None


def test_the_setting_is_read_and_a_project_can_only_turn_it_on(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    (user / "settings.json").write_text('{"sandbox": {"mcp": true}}')
    assert load_settings(user, tmp_path).sandbox.mcp
    (user / "settings.json").write_text('{"sandbox": {"mcp": "yes"}}')
    with pytest.raises(SettingsError, match=r'"sandbox.mcp": expected true or false'):
        load_settings(user, tmp_path)
    assert stricter(SandboxPolicy(mcp=True), SandboxPolicy(mcp=False)).mcp
    assert stricter(SandboxPolicy(mcp=False), SandboxPolicy(mcp=True)).mcp
