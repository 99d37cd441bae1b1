"""``switch_session`` goes on with the switched-to conversation's own model and thinking level, as
pi 1.6's ``switchSession`` does (it makes the session afresh from the stored one); it kept the
model in use before the switch, so the conversation continued on another model than its own.
A model named with ``--model`` wins over the stored one instead, as pi makes the session with its
command line again. The servers here start on the scripted model by default (``TETHER_SCRIPTED``,
no ``--model``), so the stored model is the one to come back."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from rpc_support import RpcEnv, text_reply

pytestmark = pytest.mark.subprocess


def lab_models(rpc: RpcEnv) -> None:
    """Two models of a keyless provider (never called here: switching makes no request)."""
    models = [{"id": name, "reasoning": True, "contextWindow": 8000} for name in ("small", "big")]
    providers = {"lab": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "models": models}}
    (rpc.home / "config").mkdir(exist_ok=True)
    (rpc.home / "config" / "models.json").write_text(json.dumps({"providers": providers}))


async def test_switch_session_restores_the_sessions_model_and_thinking_level(rpc: RpcEnv) -> None:
    lab_models(rpc)
    rpc.script([text_reply("first answer")])
    async with rpc.spawn() as client:
        await client.prompt("first question")
        await client.set_model("lab", "small")  # recorded in the first session at once
        await client.set_thinking_level("high")
        first = (await client.get_state())["sessionFile"]
        await client.new_session()
        await client.set_model("lab", "big")
        await client.set_thinking_level("low")
        assert await client.switch_session(first) == {"cancelled": False}
        state = await client.get_state()
        assert (state["model"]["provider"], state["model"]["id"]) == ("lab", "small")
        assert state["thinkingLevel"] == "high"


async def test_a_model_named_with_model_goes_on_in_every_session(rpc: RpcEnv) -> None:
    """``--model`` is re-applied to the new session and to the stored one switched to, after a
    ``set_model`` in between and over the stored lab/small (it was: the stored model, and the
    ``set_model`` one in the new session)."""
    lab_models(rpc)
    script = rpc.script([text_reply("first answer")])
    async with rpc.spawn("--model", f"scripted:{script}") as client:
        await client.prompt("first question")
        await client.set_model("lab", "small")
        first = (await client.get_state())["sessionFile"]
        await client.new_session()
        in_new = (await client.get_state())["model"]
        await client.set_model("lab", "big")
        assert await client.switch_session(first) == {"cancelled": False}
        switched = (await client.get_state())["model"]
        notes = [f for f in client.frames if f["type"] == "extension_ui_request"]
    assert [(m["provider"], m["id"]) for m in (in_new, switched)] == [("scripted", "script")] * 2
    assert notes == []  # nothing failed to be restored


async def session_on_a_gone_model(rpc: RpcEnv) -> str:
    """A stored session on lab/small, whose provider is then gone (models.json removed); the
    servers go on on the scripted model."""
    lab_models(rpc)
    rpc.script([text_reply("first answer")])
    async with rpc.spawn() as client:
        await client.prompt("first question")
        await client.set_model("lab", "small")
        first = (await client.get_state())["sessionFile"]
    (rpc.home / "config" / "models.json").unlink()
    return first


async def test_a_model_that_cannot_be_restored_leaves_the_current_one_and_says_so(rpc: RpcEnv) -> None:
    """Its provider is gone: the switch goes through on the model in use, and the client is told,
    with no extension loaded: a line on stderr, where pi 1.6's RPC mode writes its "Warning: Could
    not restore model ..." after a switch, and a ``notify`` request, as tether tells what its
    start-up skipped. (The notice reached RPC clients only when extensions were loaded.)"""
    first = await session_on_a_gone_model(rpc)
    async with rpc.spawn() as client:
        assert await client.switch_session(first) == {"cancelled": False}
        state = await client.get_state()
        assert (state["model"]["provider"], state["model"]["id"]) == ("scripted", "script")
        notes = [f for f in client.frames if f["type"] == "extension_ui_request"]
    said = "Could not restore model lab/small"
    assert [(n["method"], n["notifyType"], n["message"].startswith(said)) for n in notes] == [
        ("notify", "warning", True)
    ]
    assert f"note: {notes[0]['message']}\n" in client.stderr  # all of it: the server has ended


async def test_a_notice_with_stderr_closed_still_answers_the_command(rpc: RpcEnv) -> None:
    """The notice's ``note:`` line is written to stderr, which a client may have closed: the switch
    took effect, so its answer is a success (it was ``Broken pipe``, the switch done all the same)."""
    first = await session_on_a_gone_model(rpc)
    read_end, write_end = os.pipe()
    os.close(read_end)  # the client closed its end of stderr
    commands = [{"id": "1", "type": "switch_session", "sessionPath": first}, {"id": "2", "type": "get_state"}]
    try:
        done = subprocess.run(
            rpc.argv(),
            input="".join(json.dumps(c) + "\n" for c in commands).encode(),
            stdout=subprocess.PIPE,
            stderr=write_end,
            cwd=rpc.project,
            env=rpc.env(),
            timeout=60,
        )
    finally:
        os.close(write_end)
    answers = {f["id"]: f for f in map(json.loads, done.stdout.splitlines()) if f["type"] == "response"}
    assert answers["1"]["success"], answers["1"]
    assert answers["2"]["data"]["sessionFile"] == first
