"""Print and JSON modes against a real HTTP provider: recorded provider streams served on loopback.

A user-defined provider in ``models.json`` points at the loopback server, exactly as a user
would point tether at Ollama or a company proxy; the CLI runs in a subprocess and talks real
HTTP to it. Expected answers come from the reference's results next to each recording.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import pytest
from cli_support import CliEnv, json_lines

from reference_paths import FIXTURE_STREAMS as FIXTURES
from tether.testing.loopback import LoopbackServer, Reply

pytestmark = pytest.mark.subprocess


def fixture(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    recorded = json.loads((FIXTURES / f"{name}.json").read_text())
    expected = json.loads((FIXTURES / f"{name}.expected.json").read_text())
    return recorded, expected


def reply_of(recorded: dict[str, Any]) -> Reply:
    response = recorded["response"]
    return Reply(
        body=response["body"].encode(),
        status=response["status"],
        headers={"content-type": response["contentType"]},
    )


def write_models_json(cli: CliEnv, url: str, api: str, model_id: str) -> str:
    config = cli.home / "config"
    config.mkdir(exist_ok=True)
    models = {
        "providers": {
            "replay": {"baseUrl": url, "api": api, "apiKeyEnv": None, "models": [{"id": model_id}]},
        }
    }
    (config / "models.json").write_text(json.dumps(models))
    return f"replay/{model_id}"


def answer_text(message: dict[str, Any]) -> str:
    return "".join(block["text"] for block in message["content"] if block["type"] == "text")


@pytest.mark.parametrize(
    "name",
    [
        "openai-completions/openai-text",
        "openai-completions/deepseek-reasoning-content",
        "anthropic-messages/text",
    ],
)
async def test_print_mode_over_http(cli: CliEnv, name: str) -> None:
    recorded, expected = fixture(name)
    async with LoopbackServer([reply_of(recorded)]) as server:
        model = write_models_json(cli, server.url, recorded["api"], expected["model"]["id"])
        code, out, err = await cli.run_async("-p", "question", "--no-session", "--model", model)
        assert len(server.requests) == 1
    assert code == 0, err
    assert out == answer_text(expected["message"]) + "\n"
    body = json.loads(server.requests[0].body)
    assert "question" in json.dumps(body)  # our prompt reached the provider


async def test_provider_error_exits_1_with_its_text(cli: CliEnv) -> None:
    recorded, expected = fixture("openai-completions/openrouter-error-chunk")
    async with LoopbackServer([reply_of(recorded)]) as server:
        model = write_models_json(cli, server.url, recorded["api"], expected["model"]["id"])
        code, out, err = await cli.run_async("-p", "hi", "--no-session", "--model", model)
    assert code == 1
    assert out == ""
    assert expected["message"]["errorMessage"] in err


async def test_json_mode_tool_round_trip_over_http(cli: CliEnv) -> None:
    """A recorded tool call (of a tool we do not have), then a recorded answer: two requests."""
    call, call_expected = fixture("openai-completions/openai-tool-call")
    text, text_expected = fixture("openai-completions/openai-text")
    async with LoopbackServer([reply_of(call), reply_of(text)]) as server:
        model = write_models_json(cli, server.url, call["api"], call_expected["model"]["id"])
        code, out, err = await cli.run_async("--mode", "json", "where?", "--no-session", "--model", model)
    assert code == 0, err
    events = json_lines(out)
    tool_end = next(e for e in events if e["type"] == "tool_execution_end")
    assert tool_end["toolName"] == "get_country" and tool_end["isError"] is True
    assistants = [
        e["message"] for e in events if e["type"] == "message_end" and e["message"]["role"] == "assistant"
    ]
    assert [m["stopReason"] for m in assistants] == ["toolUse", "stop"]
    assert answer_text(assistants[-1]) == answer_text(text_expected["message"])
    second = json.loads(server.requests[1].body)
    tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert tool_messages and tool_messages[0]["tool_call_id"] == tool_end["toolCallId"]


async def test_system_prompt_carries_project_instructions_and_options(cli: CliEnv) -> None:
    """What the provider receives: built-in prompt + AGENTS.md, or --system-prompt instead."""
    recorded, expected = fixture("openai-completions/openai-text")
    (cli.project / "AGENTS.md").write_text("Always answer in haiku.")
    sub = cli.project / "pkg"
    sub.mkdir()
    async with LoopbackServer([reply_of(recorded)]) as server:
        model = write_models_json(cli, server.url, recorded["api"], expected["model"]["id"])
        code, _, err = await cli.run_async("-p", "q", "--no-session", "--model", model, "--cwd", str(sub))
        assert code == 0, err
        code, _, err = await cli.run_async(
            "-p",
            "q",
            "--no-session",
            "--model",
            model,
            "--system-prompt",
            "You are terse.",
            "--tools",
            "",
        )
        assert code == 0, err
    default, replaced = (json.loads(r.body) for r in server.requests)
    system = next(m for m in default["messages"] if m["role"] in ("system", "developer"))["content"]
    assert "Always answer in haiku." in system and f"Working directory: {sub.resolve()}" in system
    assert {t["function"]["name"] for t in default["tools"]} == {
        "read",
        "write",
        "edit",
        "bash",
        "grep",
        "find",
        "ls",
    }
    system = next(m for m in replaced["messages"] if m["role"] in ("system", "developer"))["content"]
    assert system.startswith("You are terse.") and "Always answer in haiku." in system
    assert not replaced.get("tools")


async def test_models_lists_keyed_providers_and_answering_local_servers(cli: CliEnv) -> None:
    listing = Reply(
        body=json.dumps({"data": [{"id": "served-model"}]}).encode(),
        headers={"content-type": "application/json"},
    )
    async with LoopbackServer([listing]) as server:
        write_models_json(cli, server.url, "openai-completions", "configured-model")
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tether.cli",
            "models",
            cwd=cli.project,
            env=cli.env(OPENAI_API_KEY="sk-test"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 60)
    text = out.decode()
    assert process.returncode == 0, err.decode()
    assert "replay/served-model" in text and "local server" in text
    assert "openai/gpt-4o " in text
    assert "anthropic/" not in text  # no key: not usable, not listed


async def test_continue_after_its_provider_left_models_json_names_it(cli: CliEnv) -> None:
    """A session's provider that is no longer configured is not resumed at the stored address
    (a session file can come from anywhere: docs/sessions.md): one line names it and the way on."""
    recorded, expected = fixture("openai-completions/openai-text")
    answer = answer_text(expected["message"])
    async with LoopbackServer([reply_of(recorded)]) as server:
        model = write_models_json(cli, server.url, recorded["api"], expected["model"]["id"])
        code, out, err = await cli.run_async("-p", "first", "--model", model)
        assert (code, out) == (0, answer + "\n"), err
        (cli.home / "config" / "models.json").unlink()
        code, out, err = await cli.run_async("-c", "-p", "second")
    assert (code, out) == (1, "")
    (line,) = err.strip().splitlines()
    assert line.startswith(
        f"tether: the session's model: unknown provider 'replay' (model '{expected['model']['id']}')"
    )
    assert line.endswith("; choose one with --model")
    assert len(server.requests) == 1  # nothing sent to the stored address


def stalled_after_first_token(reply: Reply) -> Reply:
    """The same reply, going silent once its first text delta ("The") is out (issue 14.8)."""
    cut = reply.body.index(b"\n\n", reply.body.index(b'"content":"The"')) + 2
    return Reply(reply.body, reply.status, reply.headers, stall_after=cut)


async def test_a_stalled_reply_is_retried_after_the_settings_idle_timeout(cli: CliEnv) -> None:
    recorded, expected = fixture("openai-completions/openai-text")
    (cli.home / "config").mkdir(exist_ok=True)
    settings = {"streamIdleTimeoutMs": 300, "retry": {"baseDelayMs": 10}}
    (cli.home / "config" / "settings.json").write_text(json.dumps(settings))
    reply = reply_of(recorded)
    async with LoopbackServer([stalled_after_first_token(reply), reply]) as server:
        model = write_models_json(cli, server.url, recorded["api"], expected["model"]["id"])
        code, out, err = await cli.run_async("-p", "question", "--no-session", "--model", model)
        assert len(server.requests) == 2
    assert code == 0, err
    assert out == answer_text(expected["message"]) + "\n"


async def test_a_providers_own_idle_timeout_wins(cli: CliEnv) -> None:
    """models.json's ``streamIdleTimeoutMs`` ends the stall although the setting is 5 minutes."""
    recorded, expected = fixture("openai-completions/openai-text")
    (cli.home / "config").mkdir(exist_ok=True)
    (cli.home / "config" / "settings.json").write_text(json.dumps({"retry": {"enabled": False}}))
    async with LoopbackServer([stalled_after_first_token(reply_of(recorded))]) as server:
        model = write_models_json(cli, server.url, recorded["api"], expected["model"]["id"])
        models_file = cli.home / "config" / "models.json"
        models = json.loads(models_file.read_text())
        models["providers"]["replay"]["streamIdleTimeoutMs"] = 300
        models_file.write_text(json.dumps(models))
        code, _, err = await cli.run_async("-p", "question", "--no-session", "--model", model)
    assert code == 1
    assert "No data from replay for 0.3 s (stream idle timeout)" in err
