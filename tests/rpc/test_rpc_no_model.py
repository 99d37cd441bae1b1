"""``tether --mode rpc`` with no model configured (an empty ``TETHER_HOME``, no provider key, no
embedded model) starts, as pi 1.6's RPC mode does: ``get_state`` and the other commands answer,
a prompt is refused with one line saying how to choose a model, and once ``set_model`` (or
``/model``) has chosen one, prompts run. Each test runs a real server process
(``CheckedClient``: every frame is checked against the committed schema)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from pi16_parity import Agent, Frame
from rpc_support import RpcEnv, text_reply

from pi_packages import PI_16, installed
from tether.rpc import RpcError

pytestmark = pytest.mark.subprocess

ECHO = Path(__file__).resolve().parents[2] / "examples" / "extensions" / "echo_provider.py"


@pytest.fixture
def empty(rpc: RpcEnv) -> RpcEnv:
    rpc.without_embedded_model()
    assert not any(rpc.home.iterdir())  # nothing configured: no settings, models.json or keys
    return rpc


async def test_it_starts_without_a_model_and_refuses_only_prompts(empty: RpcEnv) -> None:
    async with empty.spawn("--yes") as client:
        assert client.ready is not None and client.ready["sessionId"]
        state = await client.get_state()
        assert state["model"] is None and state["isStreaming"] is False and state["messageCount"] == 0
        assert await client.get_available_models() == []
        assert await client.cycle_model() is None
        assert isinstance(await client.get_commands(), list)
        with pytest.raises(RpcError) as refused:
            await client.prompt("hello")
        message = refused.value.message
        assert message.startswith("no model selected: choose one (RPC set_model") and "\n" not in message
        with pytest.raises(RpcError, match="Model not found: nobody/nothing"):
            await client.set_model("nobody", "nothing")
        await client.set_thinking_level("high")  # kept, clamped once a model is chosen
        assert (await client.get_state())["thinkingLevel"] == "high"
        assert (await client.request("get_available_thinking_levels"))["levels"] == ["off"]
        ran = await client.bash("echo still here")
        assert ran["output"] == "still here\n" and ran["exitCode"] == 0
        stats = await client.get_session_stats()
        assert stats["totalMessages"] == 1  # the bash run: the refused prompt left nothing
        assert [m["role"] for m in await client.get_messages()] == ["bashExecution"]
    assert await client.close() == 0
    # what pi writes to stderr at start ("No models available..."): the three ways to get one
    assert "no model to talk to" in client.stderr and "ANTHROPIC_API_KEY" in client.stderr


async def test_a_model_chosen_with_set_model_answers_prompts_and_stays_the_sessions(empty: RpcEnv) -> None:
    async with empty.spawn("--yes", "-e", str(ECHO)) as client:
        assert (await client.get_state())["model"] is None
        assert [(m["provider"], m["id"]) for m in await client.get_available_models()] == [("echo", "echo-1")]
        chosen = await client.set_model("echo", "echo-1")
        assert (chosen["provider"], chosen["id"]) == ("echo", "echo-1")
        result = await client.prompt("are you there")
        assert result["status"] == "completed"
        assert await client.get_last_assistant_text() == "echo: are you there"
        state = await client.get_state()
        assert state["model"] == chosen
    assert await client.close() == 0
    # resumed with nothing configured still: the session's own model again
    async with empty.spawn("--yes", "-e", str(ECHO), "--session", state["sessionId"]) as again:
        model = (await again.get_state())["model"]
        assert model is not None and (model["provider"], model["id"]) == ("echo", "echo-1")
    assert await again.close() == 0


async def test_the_model_command_chooses_one(empty: RpcEnv) -> None:
    script = empty.home.parent / "answers.json"
    script.write_text(json.dumps({"responses": [text_reply("scripted hello")]}))
    async with empty.spawn("--yes") as client:
        handled = await client.request("prompt", message=f"/model scripted:{script}")
        assert handled["disposition"] == "handled" and "model set to scripted/answers" in handled["text"]
        assert (await client.prompt("hi"))["status"] == "completed"
        assert await client.get_last_assistant_text() == "scripted hello"
    assert await client.close() == 0


def test_a_model_asked_for_by_name_that_cannot_be_had_still_ends_the_start(empty: RpcEnv) -> None:
    """pi too: ``--model`` naming nothing is the user's mistake, said before any frame."""
    argv = empty.argv("--model", "no-such-model-anywhere")
    done = subprocess.run(
        argv, cwd=empty.project, env=empty.env(), input="", capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert (
        done.stderr.startswith("tether: unknown model 'no-such-model-anywhere'")
        and done.stderr.count("\n") == 1
    )


@pytest.mark.node
async def test_pi16_starts_without_a_model_too_and_refuses_only_prompts(
    empty: RpcEnv, tmp_path: Path
) -> None:
    """The same commands to real pi 1.6.0 and to tether, each with nothing configured: both start,
    answer state, models, commands and ``bash``, and refuse the prompt (pi says no key for its
    placeholder model ``unknown/unknown``, tether "no model selected"; ``get_state`` has pi's
    placeholder where tether says ``null``, as docs/rpc.md says)."""
    pi = installed(PI_16)
    agent_dir, home, work = tmp_path / "pi-agent", tmp_path / "pi-home", tmp_path / "pi-work"
    for folder in (agent_dir, home, work):
        folder.mkdir()
    pi_env = {
        "PATH": f"{Path(pi.node).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(home),
        "PI_CODING_AGENT_DIR": str(agent_dir),
        "PI_OFFLINE": "1",
    }
    pi_side = Agent(
        "pi", [pi.node, str(pi.package / "dist" / "bundle" / "cli.js"), "--mode", "rpc"], pi_env, work
    )
    tether_side = Agent("tether", empty.argv("--yes"), empty.env(), empty.project)
    answers: dict[str, dict[str, Frame]] = {}
    for side in (pi_side, tether_side):
        driver = await side.start()
        try:
            answers[side.name] = {
                kind: await driver.command(kind, **params)
                for kind, params in (
                    ("get_state", {}),
                    ("get_available_models", {}),
                    ("get_commands", {}),
                    ("prompt", {"message": "hello"}),
                    ("bash", {"command": "echo still here"}),
                    ("get_state", {}),
                )
            }
        finally:
            await driver.close()
        assert driver.process.returncode == 0, side.name
    for side, got in answers.items():
        assert got["get_state"]["success"] and got["get_available_models"]["data"] == {"models": []}, side
        assert got["get_commands"]["success"], side
        assert got["prompt"]["success"] is False and got["prompt"]["error"], side
        assert got["bash"]["data"]["output"] == "still here\n", side
    assert answers["pi"]["get_state"]["data"]["model"]["provider"] == "unknown"
    assert answers["tether"]["get_state"]["data"]["model"] is None
    assert answers["pi"]["prompt"]["error"].startswith("No API key found for the selected model")
    assert answers["tether"]["prompt"]["error"].startswith("no model selected")
