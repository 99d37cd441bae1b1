"""``--model PATTERN[:LEVEL]``, ``--provider``, ``--models`` and ``--api-key`` on the real command.

``--api-key`` runs against a loopback provider that needs a key: the key must reach the provider
(and only it), and never the session store, the output, or the environment of a tool process.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from cli_support import CliEnv, json_lines

from reference_paths import FIXTURE_STREAMS
from tether.testing.loopback import LoopbackServer, Reply

pytestmark = pytest.mark.subprocess

SECRET = "sk-run-only-5f1c9a"


def sse(*chunks: dict[str, Any]) -> Reply:
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return Reply(body=body.encode())


def bash_call(command: str) -> Reply:
    call: dict[str, Any] = {"index": 0, "id": "call_1", "type": "function"}
    call["function"] = {"name": "bash", "arguments": json.dumps({"command": command})}
    base = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "keyed-1"}
    return sse(
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [call]}}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    )


def recorded_text() -> Reply:
    recorded = json.loads((FIXTURE_STREAMS / "openai-completions" / "openai-text.json").read_text())
    response = recorded["response"]
    return Reply(body=response["body"].encode(), headers={"content-type": response["contentType"]})


def models_json(cli: CliEnv, url: str) -> None:
    config = cli.home / "config"
    config.mkdir(exist_ok=True)
    provider: dict[str, Any] = {
        "baseUrl": url,
        "api": "openai-completions",
        "apiKeyEnv": "KEYED_TEST_API_KEY",
    }
    provider["models"] = [{"id": "keyed-1", "reasoning": True}, {"id": "keyed-2-20250101"}]
    (config / "models.json").write_text(json.dumps({"providers": {"keyed": provider}}))


async def test_api_key_reaches_the_provider_and_nothing_else(cli: CliEnv) -> None:
    async with LoopbackServer([bash_call("env"), recorded_text()]) as server:
        models_json(cli, server.url)
        code, out, err = await cli.run_async(
            "--mode", "json", "--yes", "--model", "keyed", "--api-key", SECRET, "show the env"
        )
        assert code == 0, err
        assert [r.headers.get("authorization") for r in server.requests] == [f"Bearer {SECRET}"] * 2
    events = json_lines(out)
    tool_end = next(e for e in events if e["type"] == "tool_execution_end")
    output = json.dumps(tool_end["result"])
    assert "PATH=" in output  # the tool really printed its environment
    assert SECRET not in output and SECRET not in out and SECRET not in err
    stored = [p for p in cli.home.rglob("*") if p.is_file()]
    assert any(p.suffix == ".db" for p in stored)
    for path in stored:
        assert SECRET.encode() not in path.read_bytes(), path


async def test_pattern_with_a_level_provider_and_scope(cli: CliEnv) -> None:
    async with LoopbackServer([recorded_text()] * 3) as server:
        models_json(cli, server.url)
        key = f"--api-key={SECRET}"
        # a part of the id; the dated id loses to the alias; `:high` sets the level
        code, out, err = await cli.run_async(
            "--mode", "json", "--no-session", "--model", "keyed:high", key, "q"
        )
        assert code == 0, err
        session = json_lines(out)[0]
        assert (session["model"], session["thinkingLevel"]) == ("keyed/keyed-1", "high")
        code, out, err = await cli.run_async(
            "--mode", "json", "--no-session", "--provider", "keyed", "--model", "2025", key, "q"
        )
        assert code == 0, err
        assert json_lines(out)[0]["model"] == "keyed/keyed-2-20250101"
        code, out, err = await cli.run_async(
            "--mode", "json", "--no-session", "--models", "keyed/keyed-2*,keyed-1", key, "q"
        )
        assert code == 0, err
        assert json_lines(out)[0]["model"] == "keyed/keyed-2-20250101"  # the first of the scope
    for args in (["--model", "keyed-nope"], ["--provider", "nope", "--model", "x"], ["--models", "zz*"]):
        code, out, err = await cli.run_async("-p", "--no-session", *args, "q")
        assert code == 1 and out == ""
        assert err.startswith("tether: ") and err.count("\n") == 1 and "Traceback" not in err
    code, _, err = await cli.run_async("-p", "--no-session", "--api-key", SECRET, "q")
    assert code == 1 and "--api-key needs" in err and SECRET not in err
