"""Bad input gets JSON-RPC errors, and the process stays up to answer the next good request.

Raw lines on the agent's stdin, read back from its stdout: what an editor with a bug (or a human
with a terminal) would send.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import subprocess
import sys
from collections.abc import AsyncGenerator
from typing import Any

import pytest
from acp_support import AcpEnv, text_reply, tool_reply

pytestmark = pytest.mark.subprocess


async def start_agent(acp_env: AcpEnv, *answers: str, limit: int = 1 << 16) -> asyncio.subprocess.Process:
    """``tether --mode acp`` in the test's project, its scripted model answering ``answers``
    (no script: none); ``limit``: the longest line read from its stdout."""
    env = acp_env.env()
    if answers:
        env = acp_env.env(TETHER_SCRIPTED=str(acp_env.script("s", [text_reply(a) for a in answers])))
    return await asyncio.create_subprocess_exec(
        *acp_env.command(),
        cwd=acp_env.project,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=limit,
    )


class RawAgent:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        await self.process.stdin.drain()

    async def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), 20)
        assert line, "the agent closed its stdout"
        return json.loads(line)

    async def ask(self, line: str) -> dict[str, Any]:
        await self.send(line)
        return await self.receive()


def request(request_id: int, method: str, params: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})


async def test_bad_json_rpc_gets_errors_and_the_agent_keeps_serving(acp_env: AcpEnv) -> None:
    process = await start_agent(acp_env, "still here")
    agent = RawAgent(process)
    try:
        parse = await agent.ask(
            '{"jsonrpc": "2.0", "id": 1, "method": '
        )  # cut short: the id is still recovered
        assert parse["id"] == 1 and parse["error"]["code"] == -32700

        for bad, expected_id in (
            ("[1, 2]", None),
            ('"initialize"', None),
            ('{"id": 2, "method": "initialize", "params": {}}', 2),  # no "jsonrpc": "2.0"
            ('{"jsonrpc": "2.0", "id": 3, "method": 7}', 3),
            ('{"jsonrpc": "2.0", "id": {"x": 1}, "method": "initialize"}', None),
            ('{"jsonrpc": "2.0", "id": 4}', 4),
        ):
            answer = await agent.ask(bad)
            assert answer["error"]["code"] == -32600, bad
            assert answer["id"] == expected_id, bad

        unknown = await agent.ask(request(5, "session/teleport", {}))
        assert unknown["id"] == 5 and unknown["error"]["code"] == -32601

        invalid = await agent.ask(request(6, "initialize", {"clientCapabilities": {}}))  # no protocolVersion
        assert invalid["id"] == 6 and invalid["error"]["code"] == -32602
        assert "protocolVersion" in invalid["error"]["data"]["details"]
        # Not an integer from 0 to 65535 (ACP's schema): invalid params, not read as version 1.
        for number, version in enumerate(("x", "1", 1.5, True, None, [1], -1, 65536), start=60):
            wrong = await agent.ask(request(number, "initialize", {"protocolVersion": version}))
            assert wrong["id"] == number and wrong["error"]["code"] == -32602, version
            assert "protocolVersion" in wrong["error"]["data"]["details"], version

        # Version negotiation: a client asking for a version we do not speak gets ours (1).
        newer = await agent.ask(request(70, "initialize", {"protocolVersion": 99, "clientCapabilities": {}}))
        assert newer["id"] == 70 and newer["result"]["protocolVersion"] == 1
        older = await agent.ask(request(71, "initialize", {"protocolVersion": 0, "clientCapabilities": {}}))
        assert older["id"] == 71 and older["result"]["protocolVersion"] == 1
        ok = await agent.ask(request(7, "initialize", {"protocolVersion": 1, "clientCapabilities": {}}))
        assert ok["id"] == 7 and ok["result"]["protocolVersion"] == 1

        bad_cwd = await agent.ask(request(8, "session/new", {"cwd": "relative/dir", "mcpServers": []}))
        assert bad_cwd["error"]["code"] == -32602 and "absolute" in bad_cwd["error"]["data"]["details"]

        missing = await agent.ask(
            request(9, "session/load", {"cwd": str(acp_env.project), "sessionId": "nope", "mcpServers": []})
        )
        assert missing["error"]["code"] == -32002

        no_session = await agent.ask(
            request(10, "session/prompt", {"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]})
        )
        assert no_session["error"]["code"] == -32602

        auth = await agent.ask(request(20, "authenticate", {"methodId": "environment"}))
        assert auth == {"jsonrpc": "2.0", "id": 20, "result": {}}
        bad_auth = await agent.ask(request(21, "authenticate", {"methodId": "oauth"}))
        assert bad_auth["error"]["code"] == -32602

        stdio_server: dict[str, Any] = {"name": "files", "command": "mcp-files", "args": [], "env": []}
        created = await agent.ask(
            request(11, "session/new", {"cwd": str(acp_env.project), "mcpServers": [stdio_server]})
        )
        session_id = created["result"]["sessionId"]
        # taken as the session's server: that its command does not exist fails only its start
        assert "_meta" not in created["result"]

        def set_option(request_id: int, config_id: str, value: str) -> str:
            params = {"sessionId": session_id, "configId": config_id, "value": value}
            return request(request_id, "session/set_config_option", params)

        bad_model = await agent.ask(set_option(22, "model", "nope/nothing"))
        assert (
            bad_model["error"]["code"] == -32602 and "nope/nothing" in bad_model["error"]["data"]["details"]
        )
        bad_option = await agent.ask(set_option(23, "colour", "blue"))
        assert bad_option["error"]["code"] == -32602
        mode_update = await agent.ask(set_option(24, "mode", "auto"))
        assert mode_update["params"]["update"] == {
            "sessionUpdate": "current_mode_update",
            "currentModeId": "auto",
        }
        mode_set = await agent.receive()
        assert mode_set["id"] == 24
        assert [o["currentValue"] for o in mode_set["result"]["configOptions"] if o["id"] == "mode"] == [
            "auto"
        ]
        bad_mode = await agent.ask(
            request(12, "session/set_mode", {"sessionId": session_id, "modeId": "yolo"})
        )
        assert bad_mode["error"]["code"] == -32602 and "ask, auto" in bad_mode["error"]["data"]["details"]

        await agent.send(
            request(
                13, "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]}
            )
        )
        messages = [await agent.receive()]
        while "id" not in messages[-1]:
            messages.append(await agent.receive())
        assert messages[-1] == {"jsonrpc": "2.0", "id": 13, "result": {"stopReason": "end_turn"}}
        assert messages[0]["method"] == "session/update"
        assert messages[0]["params"]["update"]["content"]["text"] == "still here"
    finally:
        assert process.stdin is not None
        process.stdin.close()
        await asyncio.wait_for(process.wait(), 20)
    assert process.returncode == 0
    assert process.stderr is not None
    assert b"Traceback" not in await process.stderr.read()


async def test_a_session_asked_for_before_initialize_is_an_error_naming_it(acp_env: AcpEnv) -> None:
    """ACP: the client MUST call ``initialize`` first. ``session/new`` before it made a session
    that never had the editor's files and terminal (capabilities come with ``initialize``
    only), and nothing said why; now every method but ``initialize`` is ``-32600`` naming it, and
    after it all works as before."""
    process = await start_agent(acp_env, "hi")  # a model: session/new needs one
    agent = RawAgent(process)
    project = str(acp_env.project)
    early: tuple[tuple[str, dict[str, Any]], ...] = (
        ("session/new", {"cwd": project, "mcpServers": []}),
        ("session/load", {"cwd": project, "sessionId": "nope", "mcpServers": []}),
        ("session/list", {}),
        ("authenticate", {"methodId": "environment"}),
    )
    try:
        for request_id, (method, params) in enumerate(early, start=1):
            answer = await agent.ask(request(request_id, method, params))
            assert answer["id"] == request_id and answer["error"]["code"] == -32600, answer
            assert answer["error"]["data"]["details"] == (
                f"{method} before initialize: the client must call initialize first"
            )
        ok = await agent.ask(request(10, "initialize", {"protocolVersion": 1, "clientCapabilities": {}}))
        assert ok["result"]["protocolVersion"] == 1
        created = await agent.ask(request(11, "session/new", {"cwd": project, "mcpServers": []}))
        assert created["id"] == 11 and created["result"]["sessionId"], created
    finally:
        assert process.stdin is not None
        process.stdin.close()
        _, stderr = await asyncio.wait_for(process.communicate(), 20)
    assert b"Traceback" not in stderr


@contextlib.asynccontextmanager
async def initialized(acp_env: AcpEnv, *answers: str) -> AsyncGenerator[tuple[RawAgent, list[str]]]:
    """An agent past ``initialize``, and a list that holds its stderr once the block is left
    (its stdin closed, the process ended); a traceback there fails the test."""
    process = await start_agent(acp_env, *answers)
    agent = RawAgent(process)
    stderr: list[str] = []
    try:
        await agent.ask(request(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}}))
        yield agent, stderr
    finally:
        assert process.stdin is not None
        process.stdin.close()
        _, err = await asyncio.wait_for(process.communicate(), 20)
        stderr.append(err.decode())
    assert "Traceback" not in stderr[0]


async def test_a_cwd_too_long_to_look_up_is_invalid_params_cut_in_its_error(acp_env: AcpEnv) -> None:
    """A ``cwd`` the system refuses to look up (``ENAMETOOLONG``: a name over 255 bytes, a path
    over 4,096) was an internal error repeating it whole; it is invalid params, as any ``cwd``
    that is not a directory is, naming it cut and why."""
    async with initialized(acp_env, "hi") as (agent, _):
        for request_id, cwd in enumerate(("/" + "a" * 5000, "/a" * 3000), start=2):
            for method, extra in (("session/new", {}), ("session/load", {"sessionId": "x"})):
                answer = await agent.ask(request(request_id, method, {"cwd": cwd, "mcpServers": [], **extra}))
                assert answer["error"]["code"] == -32602, answer
                assert answer["error"]["data"]["details"] == (
                    f"cwd must be an existing absolute directory: {cwd[:200]!r}… ({len(cwd)} characters) "
                    "(File name too long)"
                )
        created = await agent.ask(request(9, "session/new", {"cwd": str(acp_env.project), "mcpServers": []}))
        assert created["result"]["sessionId"], created


async def test_mcp_entries_the_sdk_cannot_read_are_said_and_the_session_is_made(acp_env: AcpEnv) -> None:
    """The SDK skips an ``mcpServers`` item it cannot read (no ``command``, an unknown ``type``,
    not an object) without a word: the session came without that server and nobody heard why.
    Each is a line of the answer's notice (with the entries tether skips itself) and of the log."""
    servers: list[object] = [
        {"name": "x"},
        {"type": "weird", "name": "w"},
        5,
        {"name": "bad", "command": "x", "args": [], "env": [{"name": "A=B", "value": "1"}]},
    ]
    said = [
        "the editor's MCP server 'x' (#1) is not an entry ACP defines (skipped)",
        "the editor's MCP server 'w' (#2) is not an entry ACP defines (skipped)",
        "the editor's MCP server #3 is not an entry ACP defines (skipped)",
    ]
    async with initialized(acp_env, "hi") as (agent, stderr):
        params: dict[str, object] = {"cwd": str(acp_env.project), "mcpServers": servers}
        created = await agent.ask(request(2, "session/new", params))
        assert created["result"]["sessionId"], created
        assert created["result"]["_meta"]["tether"]["notice"].split("\n") == [
            *said,
            "the editor's MCP server 'bad': 'env' key 'A=B' is not an environment variable name "
            "(empty, or with '=' or a NUL in it) (skipped)",
        ]
        params["sessionId"] = created["result"]["sessionId"]
        loaded = await agent.ask(request(3, "session/load", params))
        assert loaded["result"]["_meta"]["tether"]["notice"].split("\n")[:3] == said
    for line in said:
        assert stderr[0].count(line) == 2  # session/new, session/load


async def test_an_editors_meta_cannot_stand_in_for_a_methods_own_arguments(acp_env: AcpEnv) -> None:
    """The SDK passes each key of a request's ``_meta`` to the method as an argument, over the
    validated ones: ``{"cwd": 5}`` was an internal error, and a ``cwd`` there replaced the one
    checked. tether reads nothing of it: the requests are carried out as if it were not there."""
    project = str(acp_env.project)
    metas: list[dict[str, object]] = [
        {"cwd": 5},
        {"cwd": "/"},
        {"mcp_servers": "x"},
        {"self": 1},
        {"zed.dev/x": 1},
    ]
    async with initialized(acp_env, "hi") as (agent, _):
        for request_id, meta in enumerate(metas, start=2):
            params: dict[str, object] = {"cwd": project, "mcpServers": [], "_meta": meta}
            created = await agent.ask(request(request_id, "session/new", params))
            assert created["result"]["sessionId"], (meta, created)
        listed = await agent.ask(request(9, "session/list", {"_meta": {"cwd": 5}}))
        assert {s["cwd"] for s in listed["result"]["sessions"]} <= {project}, listed


@pytest.mark.parametrize("depth", [100_000, 5_000])
async def test_deeply_nested_json_gets_one_error_and_the_agent_stays_up(acp_env: AcpEnv, depth: int) -> None:
    """Issue 14, class 7: JSON nested too deep for Python's parser is one parse error (with the
    id it carried), not the end of the process and of every editor session in it."""
    process = await start_agent(acp_env, limit=1 << 24)
    agent = RawAgent(process)
    try:
        nested = "[" * depth + "]" * depth
        answer = await agent.ask(
            f'{{"jsonrpc": "2.0", "id": 41, "method": "initialize", "params": {nested}}}'
        )
        assert answer["id"] == 41 and answer["error"]["code"] == -32700
        ok = await agent.ask(request(42, "initialize", {"protocolVersion": 1, "clientCapabilities": {}}))
        assert ok["id"] == 42 and ok["result"]["protocolVersion"] == 1
        assert process.returncode is None
    finally:
        assert process.stdin is not None
        process.stdin.close()
        _, stderr = await asyncio.wait_for(process.communicate(), 20)
    assert b"Traceback" not in stderr


async def test_a_damaged_database_is_an_error_naming_the_file(acp_env: AcpEnv) -> None:
    """Issue 14.9: not "Internal error": the message an editor shows names the file and the remedy,
    and the agent stays up."""
    script = acp_env.script("s", [text_reply("noted")])
    stored = subprocess.run(  # a session with a long prompt: a database of many pages
        [sys.executable, "-m", "tether.cli", "-p"],
        input="x" * 200_000,
        env=acp_env.env(TETHER_SCRIPTED=str(script)),
        cwd=acp_env.project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert stored.returncode == 0, stored.stderr
    db = acp_env.home / "data" / "sessions.db"
    data = bytearray(db.read_bytes())  # garbage over all but its first and last pages
    data[4096:-4096] = random.Random(14).randbytes(len(data) - 8192)
    db.write_bytes(bytes(data))
    process = await start_agent(acp_env)
    agent = RawAgent(process)
    try:
        await agent.ask(request(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}}))
        requests: tuple[tuple[int, str, dict[str, Any]], ...] = (
            (2, "session/new", {"cwd": str(acp_env.project), "mcpServers": []}),
            (3, "session/list", {}),
        )
        for request_id, method, params in requests:
            answer = await agent.ask(request(request_id, method, params))
            error = answer["error"]
            assert answer["id"] == request_id and error["code"] == -32603, answer
            assert error["message"].startswith(f"{db}: the session database is damaged"), error
            assert "move it aside" in error["message"]
        assert process.returncode is None
    finally:
        assert process.stdin is not None
        process.stdin.close()
        _, stderr = await asyncio.wait_for(process.communicate(), 20)
    assert b"Traceback" not in stderr


def _strict(line: bytes) -> dict[str, Any]:
    """A line as a strict JSON reader reads it: UTF-8, and no ``Infinity`` or ``NaN``."""

    def refuse(constant: str) -> object:
        raise AssertionError(f"{constant} is not JSON: {line[:200]!r}")

    return json.loads(line.decode("utf-8"), parse_constant=refuse)


async def test_ids_json_cannot_carry_back_and_cancel_sent_as_a_request(acp_env: AcpEnv) -> None:
    """An id past a float's range was echoed as ``Infinity`` (no JSON); a lone surrogate escape in
    an id got no answer at all (a traceback); 5,000 digits gave Python's advice on
    ``sys.set_int_max_str_digits``. ``session/cancel`` is a notification in ACP; sent as a request
    it was "Method not found" (the cancel not done): it is done and answered ``null``."""
    process = await start_agent(acp_env, "ok")
    assert process.stdin is not None and process.stdout is not None

    async def ask(line: bytes) -> dict[str, Any]:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(line + b"\n")
        await process.stdin.drain()
        return _strict(await asyncio.wait_for(process.stdout.readline(), 20))

    init = b'"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}'
    try:
        for sent_id, details in (
            (b"1e999", "not JSON: a number out of range: 1e999"),
            (b"NaN", "not JSON: NaN is not JSON"),
            (b"9" * 5000, "not JSON: a number of more than 4300 digits"),
        ):
            answer = await ask(b'{"jsonrpc":"2.0","id":' + sent_id + b"," + init)
            assert answer["id"] is None and answer["error"]["code"] == -32700, sent_id[:10]
            assert answer["error"]["data"]["details"] == details
        answer = await ask(b'{"jsonrpc":"2.0","id":"a\\ud800",' + init)
        assert answer["id"] == "a\ufffd" and answer["result"]["protocolVersion"] == 1

        created = await ask(
            request(2, "session/new", {"cwd": str(acp_env.project), "mcpServers": []}).encode()
        )
        session_id = created["result"]["sessionId"]
        cancelled = await ask(request(3, "session/cancel", {"sessionId": session_id}).encode())
        assert cancelled == {"jsonrpc": "2.0", "id": 3, "result": None}
        bad = await ask(request(4, "session/cancel", {"session": session_id}).encode())
        assert bad["id"] == 4 and bad["error"]["code"] == -32602
        assert bad["error"]["data"]["details"] == 'session/cancel: "sessionId" must be a string'
        still = await ask(request(5, "initialize", {"protocolVersion": 1, "clientCapabilities": {}}).encode())
        assert still["id"] == 5 and process.returncode is None
    finally:
        process.stdin.close()
        _, stderr = await asyncio.wait_for(process.communicate(), 20)
    assert b"Traceback" not in stderr


async def test_a_bad_notification_is_one_line_on_stderr(acp_env: AcpEnv) -> None:
    """A notification gets no answer, so what is wrong with it can only be said on stderr: one
    line each, not the SDK's traceback (a ``session/cancel`` with params of the wrong shape, a
    request's method sent as a notification, a method nobody knows)."""
    process = await start_agent(acp_env)
    agent = RawAgent(process)
    assert process.stdin is not None
    notes: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": 5}},
        {"jsonrpc": "2.0", "method": "session/cancel", "params": [1]},
        {"jsonrpc": "2.0", "method": "session/cancel"},
        {"jsonrpc": "2.0", "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}},
        {"jsonrpc": "2.0", "method": "no/such", "params": {}},
    ]
    try:
        for note in notes:
            await agent.send(json.dumps(note))
        answer = await agent.ask(request(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}}))
        assert answer["id"] == 1 and "result" in answer  # nothing answered the notifications
    finally:
        process.stdin.close()
        _, stderr = await asyncio.wait_for(process.communicate(), 20)
    assert b"Traceback" not in stderr
    assert stderr.decode().splitlines() == [
        'tether acp: ignored a session/cancel notification: "sessionId" must be a string',
        'tether acp: ignored a session/cancel notification: "sessionId" must be a string',
        'tether acp: ignored a session/cancel notification: "sessionId" must be a string',
        "tether acp: ignored a notification of session/prompt: the only one tether takes is session/cancel",
        "tether acp: ignored a notification of no/such: the only one tether takes is session/cancel",
    ]


async def test_a_lone_surrogate_is_sent_as_the_replacement_character(acp_env: AcpEnv) -> None:
    """A lone surrogate (a name that is not UTF-8 read by a tool, an answer's ``"\\ud800"``) has no
    UTF-8 form: ACP sent the whole message ASCII-escaped, ``"\\ud800"`` and all, which serde_json
    refuses; RPC and ``--mode json`` send U+FFFD, and so does ACP now."""
    process = await start_agent(acp_env, "odd \ud800 name, é")
    agent = RawAgent(process)
    assert process.stdout is not None
    try:
        await agent.ask(request(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}}))
        created = await agent.ask(request(2, "session/new", {"cwd": str(acp_env.project), "mcpServers": []}))
        prompt = [{"type": "text", "text": "hi"}]
        await agent.send(
            request(3, "session/prompt", {"sessionId": created["result"]["sessionId"], "prompt": prompt})
        )
        lines = [await asyncio.wait_for(process.stdout.readline(), 20)]
        while b'"id":3' not in lines[-1]:
            lines.append(await asyncio.wait_for(process.stdout.readline(), 20))
    finally:
        assert process.stdin is not None
        process.stdin.close()
        _, stderr = await asyncio.wait_for(process.communicate(), 20)
    chunks = [json.loads(line.decode("utf-8", "strict")) for line in lines[:-1]]
    texts = [c["params"]["update"]["content"]["text"] for c in chunks if "content" in c["params"]["update"]]
    assert "".join(texts) == "odd \ufffd name, é"
    assert not any(b"\\ud8" in line for line in lines)
    assert b"Traceback" not in stderr


async def test_a_turn_cancelled_while_its_permission_request_waits_logs_nothing(acp_env: AcpEnv) -> None:
    """A ``session/cancel`` while the editor has not answered a permission request ends the turn
    ``cancelled`` and takes the call as refused, as a cancel should: stderr said "permission
    request failed, taking it as a refusal: Result is not set." (the request, cancelled but not
    yet done, was read as if it had failed)."""
    write = tool_reply("write", {"path": "new.txt", "content": "x"}, "w1")
    script = acp_env.script("s", [write, text_reply("never")])
    process = await asyncio.create_subprocess_exec(
        *acp_env.command(),
        cwd=acp_env.project,
        env=acp_env.env(TETHER_SCRIPTED=str(script)),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    agent = RawAgent(process)
    try:
        await agent.ask(request(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}}))
        created = await agent.ask(request(2, "session/new", {"cwd": str(acp_env.project), "mcpServers": []}))
        session_id = created["result"]["sessionId"]
        await agent.send(request(3, "session/set_mode", {"sessionId": session_id, "modeId": "ask"}))
        prompt = [{"type": "text", "text": "write it"}]
        await agent.send(request(4, "session/prompt", {"sessionId": session_id, "prompt": prompt}))
        message = await agent.receive()
        while message.get("method") != "session/request_permission":
            message = await agent.receive()
        await agent.send(
            json.dumps({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}})
        )
        while message.get("id") != 4:
            message = await agent.receive()
        assert message["result"] == {"stopReason": "cancelled"}
    finally:
        assert process.stdin is not None
        process.stdin.close()
        _, stderr = await asyncio.wait_for(process.communicate(), 20)
    assert not (acp_env.project / "new.txt").exists()
    assert stderr.decode() == ""
