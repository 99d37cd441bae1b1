"""Every program in ``examples/`` runs here, as a user runs it: ``python examples/NAME.py ...``
in a child process, against the scripted model (``EXAMPLE_MODEL=scripted:PATH``) or a real HTTP
server on 127.0.0.1 (``LoopbackServer``), never the network. The assertions are on what the
program prints, so an API change that breaks an example (and the docs quoting it) fails here."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import socket
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from mcp_packages import time_server
from tether.testing.loopback import LoopbackServer, Reply

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


class Runner:
    """An isolated home (sessions, config) and project folder for the examples of one test."""

    def __init__(self, tmp: Path) -> None:
        self.home = tmp / "home"
        self.project = tmp / "project"
        self.home.mkdir()
        self.project.mkdir()
        self.returncode: int | None = None
        self.stderr = ""

    def script(self, name: str, responses: Sequence[Mapping[str, Any]]) -> str:
        """A scripted-model script (conformance response format), as a model spec."""
        path = self.home / f"{name}.json"
        path.write_text(json.dumps(responses))
        return f"scripted:{path}"

    async def run(
        self,
        example: str,
        *args: str,
        model: str | None = None,
        env: Mapping[str, str] | None = None,
        expect_failure: bool = False,
    ) -> str:
        """Run ``examples/<example>`` in the project folder (``env`` added to its environment);
        its stdout (it must exit 0, or not at all with ``expect_failure``; then ``stderr`` says why)."""
        extra = env or {}
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.pop("TETHER_SCRIPTED", None)
        src = str(ROOT / "src")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
        env.update({"TETHER_HOME": str(self.home), "PYTHONUNBUFFERED": "1", **extra})
        if model is not None:
            env["EXAMPLE_MODEL"] = model
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(EXAMPLES / example),
            *args,
            cwd=self.project,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 60)
        self.returncode, self.stderr = process.returncode, err.decode()
        if expect_failure:
            assert process.returncode != 0, f"{example} exited 0:\n{out.decode()}"
        else:
            assert process.returncode == 0, f"{example} exited {process.returncode}:\n{self.stderr}"
        return out.decode()


@pytest.fixture
def runner(tmp_path: Path) -> Runner:
    return Runner(tmp_path)


def text(*chunks: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "chunks": list(chunks)}]}


def calls(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"content": [{"type": "toolCall", "name": n, "arguments": a} for n, a in calls]}


async def test_stream_reply_prints_the_streamed_text(runner: Runner) -> None:
    model = runner.script("hello", [text("Hello ", "from ", "tether.")])
    out = await runner.run("stream_reply.py", "Say", "hello", model=model)
    assert out == "Hello from tether.\n"


@pytest.mark.subprocess  # the first run installs mcp-server-time with pip: not in the fast tier
async def test_mcp_tools_calls_the_time_server_from_pypi(runner: Runner) -> None:
    server = time_server()  # mcp-server-time, installed by the tests into its own folder
    command = ["env", f"PYTHONPATH={server['env']['PYTHONPATH']}", server["command"], *server["args"]]
    arguments = {"source_timezone": "UTC", "time": "09:00", "target_timezone": "America/New_York"}
    model = runner.script(
        "mcp", [calls(("mcp__time__convert_time", arguments)), text("It is 4 or 5 am there.")]
    )
    out = await runner.run("mcp_tools.py", model=model, env={"EXAMPLE_MCP_SERVER": shlex.join(command)})
    *called, status, answer = out.splitlines()
    name, result = "\n".join(called).split(": ", 1)  # the server's JSON spans lines
    assert name == "mcp__time__convert_time"
    converted = json.loads(result)
    assert converted["source"]["timezone"] == "UTC" and converted["target"]["timezone"] == "America/New_York"
    assert converted["target"]["datetime"].split("T")[1][:5] in ("04:00", "05:00")  # EDT or EST
    assert status == "[time: ready, 2 tools, no error]"
    assert answer == "It is 4 or 5 am there."


async def test_mcp_tools_reports_a_server_that_does_not_start(runner: Runner) -> None:
    model = runner.script("mcp", [text("No tools, but an answer.")])
    out = await runner.run(
        "mcp_tools.py", model=model, env={"EXAMPLE_MCP_SERVER": "/nonexistent/time-server"}
    )
    status, answer = out.splitlines()
    assert status.startswith("[time: failed, 0 tools, ") and "/nonexistent/time-server" in status
    assert answer == "No tools, but an answer."


async def test_two_tools_runs_the_async_and_the_plain_tool(runner: Runner) -> None:
    model = runner.script(
        "tools",
        [
            calls(("weather", {"city": "Lisbon"}), ("multiply", {"a": 17, "b": 23})),
            text("Clear in Lisbon; 17 * 23 = 391."),
        ],
    )
    out = await runner.run("two_tools.py", model=model)
    lines = out.splitlines()
    assert "-> weather({'city': 'Lisbon'})" in lines
    assert "-> multiply({'a': 17, 'b': 23})" in lines
    # Results arrive in the order the tools finish; each is the function's real return value.
    assert "<- multiply: [{'type': 'text', 'text': '391'}]" in lines
    assert "<- weather: [{'type': 'text', 'text': 'Lisbon: 21°C, clear sky'}]" in lines
    assert lines[-1] == "Clear in Lisbon; 17 * 23 = 391."


async def test_a_session_resumed_in_a_second_process_keeps_the_conversation(runner: Runner) -> None:
    first = await runner.run(
        "resume_session.py", "My name is Ana.", model=runner.script("one", [text("Hi Ana.")])
    )
    match = re.search(r"^session: (\S+)$", first, re.MULTILINE)
    assert match is not None, first
    session_id = match.group(1)
    assert first.splitlines()[0] == "assistant: Hi Ana."

    second = await runner.run(
        "resume_session.py",
        "--resume",
        session_id,
        "What is my name?",
        model=runner.script("two", [text("Your name is Ana.")]),
    )
    assert second.splitlines() == [
        "[earlier] user: My name is Ana.",
        "[earlier] assistant: Hi Ana.",
        "assistant: Your name is Ana.",
        f"session: {session_id}",
    ]


async def test_a_steering_message_reaches_the_next_model_call(runner: Runner) -> None:
    model = runner.script(
        "steer", [calls(("slow_search", {"query": "tether"})), text("Trois documents parlent de tether.")]
    )
    out = await runner.run("steering.py", model=model)
    assert out.splitlines() == [
        "queued for the next model call: ['Answer in French, please.']",
        "queued for the next model call: []",  # delivered
        "user: Use slow_search to look for 'tether', then summarise.",
        "assistant: ",  # the tool call
        "toolResult: 3 documents match 'tether'",
        "user: Answer in French, please.",  # after the tool result, before the next reply
        "assistant: Trois documents parlent de tether.",
    ]


def sse_chunk(delta: Mapping[str, Any], finish: str | None = None) -> str:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [choice]}
    return f"data: {json.dumps(chunk)}\n\n"


async def test_local_server_streams_from_an_openai_compatible_endpoint(runner: Runner) -> None:
    body = (
        sse_chunk({"role": "assistant", "content": "Rayleigh "})
        + sse_chunk({"content": "scattering."})
        + sse_chunk({}, "stop")
        + "data: [DONE]\n\n"
    )
    async with LoopbackServer([Reply(body.encode())]) as server:
        out = await runner.run("local_server.py", f"{server.url}/v1", "qwen3-8b", "Why", "blue?")
    assert out == "Rayleigh scattering.\n[stop]\n"
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    sent = json.loads(request.body)
    assert sent["model"] == "qwen3-8b"
    assert sent["stream"] is True
    assert sent["messages"][-1] == {"role": "user", "content": "Why blue?"}


def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def test_a_server_that_is_not_running_is_named_and_the_example_fails(runner: Runner) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    out = await runner.run("local_server.py", url, "qwen3-8b", "Hi", expect_failure=True)
    assert out == "\n[error]\n"
    assert runner.returncode == 1
    assert runner.stderr == (
        f"error: Cannot reach {url}/chat/completions: connection refused: is the server running?\n"
    )


async def test_no_usable_model_is_one_error_line_not_a_traceback(runner: Runner) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    await runner.run("stream_reply.py", "Hi", env={"OPENAI_BASE_URL": url}, expect_failure=True)
    assert runner.returncode == 1
    # the session starts without a model, as pi's does; the prompt's error says why it has none
    assert runner.stderr == (
        f"error: no model selected (OPENAI_BASE_URL is {url}, but nothing answers there "
        "([Errno 111] Connection refused)): choose one (RPC set_model, /model PATTERN, "
        "AgentSession.set_model), or give tether an API key or OPENAI_BASE_URL "
        "(`tether models --all` lists the models)\n"
    )


async def test_many_sessions_share_the_connection_limit(runner: Runner) -> None:
    body = sse_chunk({"role": "assistant", "content": "An "}) + sse_chunk({"content": "answer."})
    body += sse_chunk({}, "stop") + "data: [DONE]\n\n"
    reply = Reply(body.encode(), chunks=[len(body) // 2], delay=0.02)  # long enough to overlap
    async with LoopbackServer([reply]) as server:
        out = await runner.run("many_sessions.py", f"{server.url}/v1", "qwen3-8b", "12")
    assert out.splitlines() == ["An answer."] * 12 + ["12 sessions stored, 24 messages"]
    assert len(server.requests) == 12
    assert server.most_open == 4, "the example's limit: four replies streaming at once"
    asked = sorted(json.loads(r.body)["messages"][-1]["content"] for r in server.requests)
    assert asked == sorted(f"Question {i}?" for i in range(12))


async def test_rpc_client_drives_a_tether_child_process(runner: Runner) -> None:
    (runner.project / "a.py").write_text("")
    (runner.project / "notes.txt").write_text("")
    model = runner.script("rpc", [calls(("find", {"pattern": "*.py"})), text("One: ", "a.py.")])
    out = await runner.run("rpc_client.py", "Which Python files?", model=model)
    # The text of the second reply, streamed; the find tool ran in the child (4 messages:
    # prompt, tool call, tool result, answer).
    assert out.splitlines() == ["One: a.py.", "[completed]", "messages: 4"]


async def test_own_agent_runs_its_tool_on_the_scripted_model(runner: Runner) -> None:
    out = await runner.run("own_agent.py")
    assert out.splitlines() == [
        "user How many words are in 'to be or not to be'?",
        "assistant [{'type': 'toolCall', 'id': 'call_1', 'name': 'word_count',"
        " 'arguments': {'text': 'to be or not to be'}}]",
        "toolResult [{'type': 'text', 'text': '6'}]",  # the function really ran
        "assistant [{'type': 'text', 'text': 'It has 6 words.'}]",
    ]


def test_every_example_is_tested() -> None:
    tested = set(re.findall(r'"(\w+\.py)"', Path(__file__).read_text()))
    assert {p.name for p in EXAMPLES.glob("*.py")} <= tested


async def test_hello_sync_prints_a_plain_and_a_typed_answer(runner: Runner) -> None:
    typed = calls(("final_answer", {"name": "Paris", "country": "France"}))
    model = runner.script("hello", [text("Bon", "jour !"), typed])
    out = await runner.run("hello_sync.py", model=model)
    assert out == "Bonjour !\nParis is in France\n"


async def test_careful_agent_asks_before_a_write_outside_and_returns_a_typed_summary(runner: Runner) -> None:
    (runner.project / "notes.txt").write_text("one\ntwo\n")
    summary = {"files": ["notes.txt"], "verdict": "tidy"}
    model = runner.script(
        "careful",
        [
            calls(
                ("write", {"path": "../outside.txt", "content": "x"}), ("slow_count", {"path": "notes.txt"})
            ),
            calls(("final_answer", summary)),
        ],
    )
    out = await runner.run("careful_agent.py", model=model)
    assert out.startswith("approve? ") and "-> no" in out
    assert out.endswith("files: ['notes.txt']; verdict: tidy\n")
    assert not (runner.project.parent / "outside.txt").exists()


async def test_careful_agent_reports_a_failed_model_call_as_an_exception(runner: Runner) -> None:
    failed: dict[str, object] = {"content": [], "error": "invalid_request_error: no such model"}
    out = await runner.run("careful_agent.py", model=runner.script("fails", [failed]))
    assert out == "no summary (failed): the model call failed: invalid_request_error: no such model\n"


def test_the_readme_opens_with_a_program_from_examples() -> None:
    from doc_quotes import code_blocks, quoted_from

    first = code_blocks(ROOT / "README.md", "python")[0]
    assert quoted_from(first, EXAMPLES) == ["hello_sync.py"] and len(first.splitlines()) <= 12
