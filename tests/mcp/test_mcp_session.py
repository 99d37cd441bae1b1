"""MCP tools through an agent run: real servers (the SDK's own server API), the scripted model.

Each test builds an ``AgentSession`` with ``McpServers`` the way a library user does, lets the
scripted model call the tools, and checks what the model was sent back.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from tests.mcp.conftest import TOY, alive, toy

from tether.agent import Agent
from tether.mcp import McpServerConfig, McpServers
from tether.mcp.servers import ServerStatus
from tether.session import AgentSession
from tether.testing.scripted import ScriptedModel, reply, tool_call
from tether.wire import AgentMessage


def session(model: ScriptedModel, *configs: McpServerConfig, log_dir: Path | None = None) -> AgentSession:
    agent = Agent(model=model.model, stream_fn=model)
    return AgentSession(agent, mcp=McpServers(configs, log_dir=log_dir), owns=("mcp",))


async def prompted(
    model: ScriptedModel, config: McpServerConfig, notices: list[str] | None = None
) -> tuple[list[dict[str, Any]], ServerStatus]:
    """One prompt of a session with ``config``'s server alone: the tool results, the server's
    status at the end of the run, and (into ``notices``) the session's notices."""
    core = session(model, config)
    if notices is not None:
        core.subscribe(lambda event: notices.append(event["message"]) if event["type"] == "notice" else None)
    try:
        done = results(await core.prompt("go"))
        assert core.mcp is not None
        [status] = core.mcp.statuses()
    finally:
        await core.close()
    return done, status


async def failure_of(config: McpServerConfig) -> str:
    """Why ``config``'s server failed in a session's first prompt (it must have)."""
    _, status = await prompted(ScriptedModel([reply("fine")]), config)
    assert status.status == "failed" and status.error is not None
    return status.error


def results(messages: list[AgentMessage]) -> list[dict[str, Any]]:
    return [dict(m) for m in messages if m["role"] == "toolResult"]


def text_of(result: dict[str, Any]) -> str:
    return "".join(b["text"] for b in result["content"] if b["type"] == "text")


async def test_tools_are_listed_and_called_through_a_run(tmp_path: Path) -> None:
    model = ScriptedModel([reply(tool_call("mcp__toy__add", {"a": 2, "b": 40})), reply("done")])
    core = session(model, toy(), log_dir=tmp_path / "logs")
    try:
        added = await core.prompt("add")
    finally:
        await core.close()
    sent = {t["name"] for t in model.requests[0].context.get("tools") or []}
    assert {"mcp__toy__add", "mcp__toy__total", "mcp__toy__pixel", "mcp__toy__crash"} <= sent
    [result] = results(added)
    assert (text_of(result), result["isError"]) == ("42", False)
    # the server's stderr went to its log, not to the terminal
    assert "toy: serving stdio" in (tmp_path / "logs" / "toy.log").read_text()


async def test_text_image_structured_and_error_results() -> None:
    model = ScriptedModel(
        [
            reply(
                tool_call("mcp__toy__total", {"numbers": [1, 2, 3]}),
                tool_call("mcp__toy__pixel"),
                tool_call("mcp__toy__fail", {"reason": "no way"}),
                tool_call("mcp__toy__add", {"a": "two", "b": 1}),
            ),
            reply("done"),
        ]
    )
    core = session(model, toy())
    try:
        total, pixel, fail, invalid = results(await core.prompt("go"))
    finally:
        await core.close()
    assert '"total": 6' in text_of(total)
    assert total["details"]["structuredContent"] == {"total": 6, "count": 3}
    [image] = [b for b in pixel["content"] if b["type"] == "image"]
    assert image["mimeType"] == "image/png" and image["data"].startswith("iVBOR")
    assert fail["isError"] and "refused: no way" in text_of(fail)
    # arguments are validated against the server's schema before anything is sent
    assert invalid["isError"] and "mcp__toy__add" in text_of(invalid) and "integer" in text_of(invalid)


async def test_a_large_result_is_truncated_like_command_output() -> None:
    model = ScriptedModel([reply(tool_call("mcp__toy__big", {"lines": 50000})), reply("done")])
    core = session(model, toy())
    try:
        [big] = results(await core.prompt("go"))
    finally:
        await core.close()
    text = text_of(big)
    assert "output truncated" in text and "line 0\n" in text and "line 49999" in text
    assert len(text.encode()) < 60 * 1024


async def test_a_crashed_server_gives_an_error_result_and_restarts_on_the_next_call() -> None:
    model = ScriptedModel(
        [
            reply(tool_call("mcp__toy__pid")),
            reply(tool_call("mcp__toy__crash")),
            reply(tool_call("mcp__toy__pid")),
            reply("done"),
        ]
    )
    core = session(model, toy())
    try:
        first, crashed, second = results(await core.prompt("go"))
        assert core.mcp is not None
        [status] = core.mcp.statuses()
        assert status.status == "ready"
    finally:
        await core.close()
    assert crashed["isError"] and "stopped during the call" in text_of(crashed)
    assert "started again" in text_of(crashed)
    assert not first["isError"] and not second["isError"]
    assert text_of(first) != text_of(second)  # a new process
    assert not alive(int(text_of(first))) and not alive(int(text_of(second)))


async def test_a_server_that_never_answers_times_out_and_the_session_goes_on() -> None:
    model = ScriptedModel([reply(tool_call("mcp__toy__add", {"a": 1, "b": 1})), reply("done")])
    core = session(model, toy("mute", "mute", startup_timeout=1.0), toy())
    try:
        added = await core.prompt("go")
        assert core.mcp is not None
        mute, ready = core.mcp.statuses()
    finally:
        await core.close()
    assert text_of(results(added)[0]) == "2"
    assert (mute.status, mute.tools) == ("failed", ())
    assert mute.error is not None and "did not start within 1 s" in mute.error
    assert ready.status == "ready"
    assert [s.status for s in core.mcp.statuses()] == ["failed", "stopped"]


async def test_garbage_on_stdout_does_not_break_the_server() -> None:
    model = ScriptedModel([reply(tool_call("mcp__noisy__add", {"a": 1, "b": 2})), reply("done")])
    core = session(model, toy("noisy", "garbage"))
    try:
        [result] = results(await core.prompt("go"))
    finally:
        await core.close()
    assert text_of(result) == "3"


async def test_a_missing_command_is_reported_and_has_no_tools() -> None:
    core = session(ScriptedModel([reply("fine")]), McpServerConfig("gone", command="/nonexistent/mcp-server"))
    try:
        await core.prompt("go")
        assert core.mcp is not None
        [status] = core.mcp.statuses()
    finally:
        await core.close()
    assert status.status == "failed" and status.error is not None
    assert "/nonexistent/mcp-server" in status.error
    assert not any(t.name.startswith("mcp__") for t in core.agent.tools)


async def test_a_missing_working_folder_is_named_as_one_not_as_the_command(tmp_path: Path) -> None:
    """A ``cwd`` that does not exist failed the spawn with the folder as the missing file, so
    the server was "command not found: /…/gone" and the user looked for a program."""
    gone = tmp_path / "gone"
    error = await failure_of(toy(cwd=gone))
    assert error.startswith(f"its working folder {gone}: no such folder"), error


async def test_abort_cancels_an_in_flight_call(tmp_path: Path) -> None:
    marks = tmp_path / "sleep.log"
    model = ScriptedModel([reply(tool_call("mcp__toy__sleep", {"seconds": 60}))])
    core = session(model, toy(env={"TOY_SLEEP_LOG": str(marks)}))
    try:
        run = asyncio.ensure_future(core.prompt("go"))
        while not (marks.exists() and marks.read_text()):
            await asyncio.sleep(0.05)
        core.abort()
        [aborted] = results(await asyncio.wait_for(run, 30))
        assert aborted["isError"] and "aborted" in text_of(aborted)
        # the connection survived the cancelled call
        model.responses.clear()
        model.push(reply(tool_call("mcp__toy__add", {"a": 1, "b": 1})), reply("done"))
        [added] = results(await core.prompt("again"))
        assert text_of(added) == "2"
    finally:
        await core.close()


async def test_no_server_process_outlives_the_session(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    env = {"TOY_PID_DIR": str(pids)}
    model = ScriptedModel([reply(tool_call("mcp__a__pid"), tool_call("mcp__b__pid")), reply("done")])
    core = session(
        model, toy("a", env=env), toy("b", env=env), toy("m", "mute", env=env, startup_timeout=60.0)
    )
    assert core.mcp is not None
    run = asyncio.ensure_future(core.prompt("go"))
    while len(list(pids.iterdir())) < 3 or core.mcp.connections["a"].status == "starting":
        await asyncio.sleep(0.05)
    started = [int(p.name) for p in pids.iterdir()]
    assert all(alive(pid) for pid in started)
    # the mute server is still starting: closing does not wait for its 60 s timeout
    await asyncio.wait_for(core.close(), 20)
    await asyncio.gather(run, return_exceptions=True)
    assert [pid for pid in started if alive(pid)] == []
    assert {s.status for s in core.mcp.statuses()} <= {"stopped", "failed"}


async def test_streamable_http_server(http_toy: str) -> None:
    model = ScriptedModel([reply(tool_call("mcp__web__add", {"a": 5, "b": 6})), reply("done")])
    core = session(model, McpServerConfig("web", url=http_toy, headers={"X-Test": "1"}))
    try:
        [result] = results(await core.prompt("go"))
    finally:
        await core.close()
    assert text_of(result) == "11"


async def test_a_bare_agent_takes_the_tools_of_mcp_servers() -> None:
    model = ScriptedModel([reply(tool_call("mcp__toy__add", {"a": 1, "b": 2})), reply("done")])
    async with McpServers([toy()]) as servers:
        agent = Agent(model=model.model, stream_fn=model, tools=servers.tools())
        await agent.prompt("go")
    assert text_of(results(agent.messages)[0]) == "3"


async def test_a_log_past_its_limit_starts_afresh_at_the_next_start(tmp_path: Path) -> None:
    """Every start of every session appends to the server's log: one that had grown past the
    limit (a chatty server over many sessions) is moved aside to ``.log.1`` and a new one begun,
    so the logs stay within about twice the limit instead of filling the disk."""
    from tether.mcp.connection import MAX_LOG_BYTES

    logs = tmp_path / "logs"
    logs.mkdir()
    big = logs / "toy.log"
    with big.open("wb") as file:  # sparse: no disk used
        file.truncate(MAX_LOG_BYTES + 1)
    model = ScriptedModel([reply(tool_call("mcp__toy__add", {"a": 1, "b": 1})), reply("done")])
    core = session(model, toy(), log_dir=logs)
    try:
        await core.prompt("add")
    finally:
        await core.close()
    assert (logs / "toy.log.1").stat().st_size == MAX_LOG_BYTES + 1
    fresh = (logs / "toy.log").read_text()
    assert fresh.startswith("--- tether: starting toy at ") and "toy: serving stdio" in fresh


async def test_a_server_flooding_its_stderr_keeps_a_bounded_log_and_works(tmp_path: Path) -> None:
    """The log was the server's stderr itself, so a server writing without end (here 3x the
    limit before it serves) filled the disk within one session; now the log keeps the limit and
    says the rest was dropped, and the server, whose pipe is drained, serves as usual."""
    from tether.mcp.connection import MAX_LOG_BYTES

    flood = f"head -c {3 * MAX_LOG_BYTES} /dev/zero | tr '\\0' x >&2; exec {sys.executable} {TOY}"
    model = ScriptedModel([reply(tool_call("mcp__noisy__add", {"a": 2, "b": 3})), reply("done")])
    core = session(model, McpServerConfig("noisy", command="sh", args=("-c", flood)), log_dir=tmp_path)
    try:
        [result] = results(await core.prompt("add"))
    finally:
        await core.close()
    assert (text_of(result), result["isError"]) == ("5", False)
    log = (tmp_path / "noisy.log").read_bytes()
    assert len(log) < MAX_LOG_BYTES + 200
    assert log.rstrip().endswith(b"the rest of this start's output dropped ---")


async def test_an_abort_while_servers_start_leaves_no_error_behind() -> None:
    """The wait for starting servers cancelled by an abort (Esc, or the signal tether turns
    SIGINT and SIGTERM into) left its gathered waits failed with nobody to read them: asyncio
    printed "_GatheringFuture exception was never retrieved" and a traceback on the way out."""
    import gc

    from tether.ai.abort import AbortController

    caught: list[str] = []
    asyncio.get_running_loop().set_exception_handler(lambda _loop, context: caught.append(context["message"]))
    servers = McpServers([toy("mute", "mute")])
    controller = AbortController()
    try:
        waiting = asyncio.ensure_future(servers.listed(controller.signal))
        await asyncio.sleep(0.1)
        controller.abort()
        assert not await waiting
    finally:
        await servers.close()
    gc.collect()
    assert caught == []
