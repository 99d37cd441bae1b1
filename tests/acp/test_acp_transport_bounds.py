"""The ACP transport's bounds, on a real ``tether --mode acp`` process: an oversized line is one
error and its tail never runs; a client that stops reading holds the agent still instead of
growing its memory; what a child process writes to fd 1 never reaches the protocol stream."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from acp_support import AcpEnv, text_reply

from pipe_support import finish, idle, wait_until_stdout_full
from tether.acp.transport import MAX_MESSAGE_BYTES
from tether.session.manager import SessionManager

pytestmark = pytest.mark.subprocess


def request(request_id: int | str, method: str, params: Any) -> bytes:
    return (
        json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode() + b"\n"
    )


INITIALIZE: dict[str, Any] = {"protocolVersion": 1, "clientCapabilities": {}}


async def _start(acp_env: AcpEnv, *args: str, limit: int = 1 << 24) -> asyncio.subprocess.Process:
    """The agent; ``limit``: how much of its output this side buffers (asyncio reads a pipe
    until twice that is buffered, whether or not the test reads it)."""
    script = acp_env.script("s", [text_reply("ok")])
    return await asyncio.create_subprocess_exec(
        *acp_env.command(*args),
        cwd=acp_env.project,
        env=acp_env.env(TETHER_SCRIPTED=str(script)),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=limit,
    )


async def _receive(process: asyncio.subprocess.Process) -> dict[str, Any]:
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), 60)
    assert line, "the agent closed its stdout"
    return json.loads(line)


async def _end(process: asyncio.subprocess.Process) -> bytes:
    assert process.stdin is not None
    process.stdin.close()
    _, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, stderr.decode()
    return stderr


async def test_an_oversized_line_is_one_error_and_its_tail_never_runs(acp_env: AcpEnv) -> None:
    process = await _start(acp_env)
    assert process.stdin is not None
    padding = b" " * (MAX_MESSAGE_BYTES + (3 << 20))  # whitespace: what is left after a cut parses
    process.stdin.write(padding + request(99, "initialize", INITIALIZE))
    process.stdin.write(request(7, "initialize", INITIALIZE))
    await process.stdin.drain()
    first = await _receive(process)
    assert first["id"] is None and first["error"]["code"] == -32600
    assert "skipped to its end" in first["error"]["data"]["details"]
    second = await _receive(process)
    assert second["id"] == 7 and second["result"]["protocolVersion"] == 1  # id 99 never answered
    stderr = await _end(process)
    assert b"Traceback" not in stderr


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


async def test_a_client_that_stops_reading_holds_the_agent_still(acp_env: AcpEnv) -> None:
    """60k requests never read: the agent stops reading them once its answers back up, so the
    client's writes stall and the agent's memory stays put; reading the answers lets it go on."""
    process = await _start(acp_env, limit=1 << 16)  # this side stops reading at 128 KiB
    assert process.stdin is not None
    await process.stdin.drain()
    total = 60_000
    line = request(1, "session/teleport", {"padding": "x" * 200})
    before = _rss_kib(process.pid)

    async def flood() -> None:
        assert process.stdin is not None
        for _ in range(total):
            process.stdin.write(line)
            await process.stdin.drain()

    writing = asyncio.ensure_future(flood())
    done, _ = await asyncio.wait([writing], timeout=15)
    assert not done, "all requests went in although their answers were never read"
    held = _rss_kib(process.pid)
    assert held - before < 64 * 1024, (before, held)  # KiB: the backlog is not in memory
    answers = 0
    while answers < total:
        answer = await _receive(process)
        assert answer["error"]["code"] == -32601
        answers += 1
    await writing
    await _end(process)


async def test_a_client_that_sends_cancels_as_requests_and_stops_reading_holds_the_agent_still(
    acp_env: AcpEnv,
) -> None:
    """``session/cancel`` sent as a request is answered ``null`` by the reader itself; those
    answers were not counted with the held requests, so a client sending such cancels without
    reading had all of them read and every answer buffered (here 120 MB). Now they stop the
    reading once 1 MiB of them waits, as other requests' answers do; reading them lets it go on."""
    process = await _start(acp_env, limit=1 << 16)  # this side stops reading at 128 KiB
    assert process.stdin is not None
    total = 30_000
    cancel = {"sessionId": "nowhere"}
    before = _rss_kib(process.pid)

    async def flood() -> None:
        assert process.stdin is not None
        for i in range(total):
            process.stdin.write(request(f"{i:06d}" + "x" * 4000, "session/cancel", cancel))
            await process.stdin.drain()

    writing = asyncio.ensure_future(flood())
    done, _ = await asyncio.wait([writing], timeout=15)
    held = _rss_kib(process.pid)
    assert not done, "all cancels went in although their answers were never read"
    assert held - before < 64 * 1024, (before, held)  # KiB: the answers are not in memory
    answers = 0
    while answers < total:
        answer = await _receive(process)
        assert answer["id"].startswith(f"{answers:06d}") and answer["result"] is None
        answers += 1
    await writing
    await _end(process)


async def test_a_childs_stdout_goes_to_stderr(acp_env: AcpEnv, tmp_path: Path) -> None:
    """An extension that prints and starts a child writing to fd 1, at load time and in a tool:
    the protocol stream holds JSON-RPC lines only."""
    extensions = acp_env.home / "config" / "extensions"
    extensions.mkdir(parents=True)
    (extensions / "noisy.py").write_text(
        "import os, subprocess\n"
        "print('PRINTED-AT-IMPORT')\n"
        "os.write(1, b'FD1-AT-IMPORT\\n')\n"
        "subprocess.run(['echo', 'CHILD-AT-IMPORT'], check=True)\n"
        "def setup(api):\n"
        "    print('PRINTED-IN-SETUP')\n"
    )
    process = await _start(acp_env)
    assert process.stdin is not None
    process.stdin.write(request(1, "initialize", INITIALIZE))
    process.stdin.write(request(2, "session/new", {"cwd": str(acp_env.project), "mcpServers": []}))
    await process.stdin.drain()
    first = await _receive(process)
    assert first["id"] == 1
    second = await _receive(process)
    while "id" not in second:
        second = await _receive(process)
    assert second["id"] == 2 and "sessionId" in second["result"], second
    stderr = await _end(process)
    for marker in (b"PRINTED-AT-IMPORT", b"FD1-AT-IMPORT", b"CHILD-AT-IMPORT", b"PRINTED-IN-SETUP"):
        assert marker in stderr, marker


HUNG_HOOK = """\
import asyncio

def setup(api):
    @api.on("before_run")
    async def hang(context):
        await asyncio.Event().wait()  # never returns, ignores aborts
"""


async def test_cancel_is_answered_and_stdin_closes_while_a_hook_hangs(acp_env: AcpEnv) -> None:
    extensions = acp_env.home / "config" / "extensions"
    extensions.mkdir(parents=True)
    (extensions / "hang.py").write_text(HUNG_HOOK)
    process = await _start(acp_env)
    assert process.stdin is not None
    process.stdin.write(request(1, "initialize", INITIALIZE))
    process.stdin.write(request(2, "session/new", {"cwd": str(acp_env.project), "mcpServers": []}))
    await process.stdin.drain()
    created = await _receive(process)
    while created.get("id") != 2:
        created = await _receive(process)
    session_id = created["result"]["sessionId"]
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
    process.stdin.write(request(3, "session/prompt", prompt))
    cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}}
    process.stdin.write(json.dumps(cancel).encode() + b"\n")
    await process.stdin.drain()
    answer = await _receive(process)
    while answer.get("id") != 3:
        answer = await _receive(process)
    assert answer["result"] == {"stopReason": "cancelled"}
    stderr = await _end(process)
    assert b"Traceback" not in stderr


@pytest.mark.parametrize(
    "bad_line",
    [
        b"",
        b"not json\n",
        b'{"id": 9, "method": "x"}\n',
        request(9, "initialize", {"protocolVersion": "1.0", "clientCapabilities": {}}),
    ],
    ids=["cancel-alone", "not-json", "not-json-rpc", "bad-version"],
)
def test_a_cancel_ends_the_turn_while_the_client_reads_nothing(acp_env: AcpEnv, bad_line: bytes) -> None:
    """An editor that stops reading our output mid-turn and cancels: the cancel is read and the
    turn ends at once (recorded aborted), its updates and its answer waiting for the editor; when
    it reads again, the prompt is answered ``cancelled``. (Reading stopped while the output
    waited, so the cancel was never read, and the turn stood still in its next update; a bad line
    just before the cancel did the same, its error answer waiting for the client.)"""
    database = acp_env.home / "sessions.db"
    script = acp_env.script("s", [text_reply(*["many words " * 10_000] * 200)])  # 22 MB of updates
    agent = subprocess.Popen(
        acp_env.command(),
        cwd=acp_env.project,
        env=acp_env.env(TETHER_SCRIPTED=str(script), TETHER_DATABASE_URL=str(database)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert agent.stdin is not None and agent.stdout is not None
    try:
        agent.stdin.write(request(1, "initialize", INITIALIZE))
        agent.stdin.write(request(2, "session/new", {"cwd": str(acp_env.project), "mcpServers": []}))
        agent.stdin.flush()
        os.set_blocking(agent.stdout.fileno(), True)
        answers = [json.loads(agent.stdout.readline()) for _ in range(2)]
        session_id = next(a["result"]["sessionId"] for a in answers if a.get("id") == 2)
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "talk"}]}
        agent.stdin.write(request(3, "session/prompt", prompt))
        agent.stdin.flush()
        # the pipe full, the agent's own buffer too (1 MiB): it waits for us, using no CPU
        wait_until_stdout_full(agent, until_idle=True)
        cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}}
        agent.stdin.write(bad_line + json.dumps(cancel).encode() + b"\n")
        agent.stdin.flush()
        deadline = time.monotonic() + 60
        while not _aborted_reply(database, session_id):
            assert time.monotonic() < deadline, (
                "the cancel did not end the turn while the editor read nothing"
            )
            time.sleep(0.2)
        frames = finish(agent, timeout=30)
    finally:
        agent.kill()
        agent.wait()
    answer = next(f for f in frames if f.get("id") == 3)
    assert answer["result"]["stopReason"] == "cancelled"


def _aborted_reply(database: Path, session_id: str) -> bool:
    """Whether the session holds an assistant reply recorded as aborted."""
    with SessionManager.at(database) as sessions:
        messages = sessions.open(session_id, readonly=True).messages
    return any(m["role"] == "assistant" and m.get("stopReason") == "aborted" for m in messages)


def _finished_reply(database: Path, session_id: str) -> bool:
    """Whether the session holds an assistant reply that ended as the model meant it to."""
    with SessionManager.at(database) as sessions:
        messages = sessions.open(session_id, readonly=True).messages
    return any(m["role"] == "assistant" and m.get("stopReason") == "stop" for m in messages)


def test_a_cancel_lets_only_the_cancelled_turn_through(acp_env: AcpEnv) -> None:
    """Two sessions streaming to an editor that stopped reading, one cancelled: that turn ends,
    and the other stands still again instead of streaming into our memory. (The cancel's lift
    lasted until the editor read again, and asyncio pauses a writer once per crossing of its
    limit: every later update was buffered, 80 MB of them here.)"""
    database = acp_env.home / "sessions.db"
    replies = [text_reply(*["many words " * 10_000] * 400) for _ in range(2)]  # 44 MB each
    agent = subprocess.Popen(
        acp_env.command(),
        cwd=acp_env.project,
        env=acp_env.env(TETHER_SCRIPTED=str(acp_env.script("s", replies)), TETHER_DATABASE_URL=str(database)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert agent.stdin is not None and agent.stdout is not None
    try:
        new: dict[str, Any] = {"cwd": str(acp_env.project), "mcpServers": []}
        agent.stdin.write(request(1, "initialize", INITIALIZE) + request(2, "session/new", new))
        agent.stdin.write(request(3, "session/new", new))
        agent.stdin.flush()
        os.set_blocking(agent.stdout.fileno(), True)
        answers = [json.loads(agent.stdout.readline()) for _ in range(3)]
        first, second = (next(a["result"]["sessionId"] for a in answers if a.get("id") == i) for i in (2, 3))
        for request_id, session_id in ((4, first), (5, second)):
            prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "talk"}]}
            agent.stdin.write(request(request_id, "session/prompt", prompt))
        agent.stdin.flush()
        wait_until_stdout_full(agent, until_idle=True)
        before = _rss_kib(agent.pid)
        cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": first}}
        agent.stdin.write(json.dumps(cancel).encode() + b"\n")
        agent.stdin.flush()
        deadline = time.monotonic() + 60
        while not _aborted_reply(database, first) or not idle(agent.pid):
            assert time.monotonic() < deadline, "the cancelled turn did not end"
            time.sleep(0.2)
        # The other turn stands still: it has not finished (with every send let through it ends
        # in seconds, its 44 MB buffered), and memory grew by far less than its reply (the
        # cancelled turn's own frames and its stored reply account for what it did grow).
        assert not _finished_reply(database, second), "the other session streamed on to its end"
        grown = _rss_kib(agent.pid) - before
        assert grown < 40 * 1024, f"{grown} KiB more memory: the other session streamed on"
        frames = finish(agent, timeout=60)
    finally:
        agent.kill()
        agent.wait()
    assert next(f for f in frames if f.get("id") == 4)["result"]["stopReason"] == "cancelled"
