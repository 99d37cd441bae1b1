"""A command the sandbox refused is run outside it over RPC only when the client says yes.

A real ``tether --mode rpc`` server (the default ``workspace-write`` sandbox, no ``--yes``) whose
scripted model first writes beside the workspace from a confined ``bash`` (refused), then asks
for the same command with ``escalate: true``. The server asks with a ``confirm`` dialog
(``extension_ui_request``) naming the command, the model's reason and what running unconfined
grants; approved, the file appears; declined or left unanswered past ``sandbox.escalationTimeout``,
the call is refused and nothing is written.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from rpc_support import CheckedClient, RpcEnv, next_of, text_reply, tool_reply

from tether.tools.sandbox import unavailable

pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.skipif(
        unavailable() is not None and not os.environ.get("TETHER_REQUIRE_SANDBOX"),
        reason=f"no sandbox here: {unavailable()}",
    ),
]

REASON = "The build writes its report beside the checkout."


@pytest.fixture
def target(rpc: RpcEnv, tmp_path: Path) -> Path:
    """A file beside the workspace that the scripted model writes, first confined (refused), then
    with ``escalate: true``."""
    target = tmp_path / "beside" / "report.txt"
    target.parent.mkdir()
    command = f"echo made > {target}"
    rpc.script(
        [
            tool_reply("bash", {"command": command}, "call_1"),
            tool_reply("bash", {"command": command, "escalate": True, "justification": REASON}, "call_2"),
            text_reply("done"),
        ]
    )
    return target


@asynccontextmanager
async def dialog_open(
    rpc: RpcEnv,
) -> AsyncGenerator[tuple[CheckedClient, dict[str, Any], asyncio.Future[Any]]]:
    """A server whose prompt is waiting on the escalation's dialog: the client, the dialog's frame
    and the prompt's pending answer."""
    async with rpc.spawn("--no-session") as client:
        events = client.events()
        prompt = asyncio.ensure_future(client.prompt("write the report"))
        request = await next_of(events, "extension_ui_request")
        yield client, request, prompt


async def run(rpc: RpcEnv, answer: dict[str, Any] | None) -> tuple[dict[str, Any], list[Any]]:
    """Prompt once; answer the escalation's dialog with ``answer`` (``None``: leave it open).
    Returns the dialog's frame and the two tool results."""
    async with dialog_open(rpc) as (client, request, prompt):
        if answer is not None:
            await client.answer_extension_ui(request["id"], **answer)
        assert (await asyncio.wait_for(prompt, 30))["status"] == "completed"
        results = [m for m in await client.get_messages() if m["role"] == "toolResult"]
    return request, results


async def test_an_approved_escalation_runs_outside_the_sandbox(rpc: RpcEnv, target: Path) -> None:
    command = f"echo made > {target}"
    request, (confined, escalated) = await run(rpc, {"confirmed": True})
    assert confined["isError"]
    assert request["method"] == "confirm" and request["title"] == "Run a command outside the sandbox?"
    assert request["timeout"] == 120_000
    message = request["message"]
    assert f"Command: {command}" in message and f"Reason: {REASON}" in message
    assert "read your credentials" in message and "reach the network" in message
    assert not escalated["isError"]
    assert target.read_text() == "made\n"


async def test_a_declined_escalation_is_refused(rpc: RpcEnv, target: Path) -> None:
    _, (confined, escalated) = await run(rpc, {"confirmed": False})
    assert confined["isError"] and escalated["isError"]
    assert escalated["content"][0]["text"] == "The user declined this bash call. Do not retry it as is."
    assert not target.exists()


async def test_an_unanswered_escalation_is_refused_when_its_time_runs_out(rpc: RpcEnv, target: Path) -> None:
    rpc.settings(sandbox={"escalationTimeout": 0.5})
    request, (_, escalated) = await run(rpc, None)
    assert request["timeout"] == 500
    assert escalated["isError"] and "declined" in escalated["content"][0]["text"]
    assert not target.exists()


async def test_abort_refuses_an_open_escalation_and_is_answered(rpc: RpcEnv, target: Path) -> None:
    async with dialog_open(rpc) as (client, _, prompt):
        await asyncio.wait_for(client.abort(), 30)
        await asyncio.wait_for(prompt, 30)
        assert (await client.get_state())["isStreaming"] is False
    assert not target.exists()


async def test_closing_the_input_with_an_escalation_open_ends_the_server(rpc: RpcEnv, target: Path) -> None:
    async with dialog_open(rpc) as (client, _, prompt):
        assert client.process.stdin is not None
        client.process.stdin.close()
        assert await asyncio.wait_for(client.process.wait(), 30) == 0
        await asyncio.gather(prompt, return_exceptions=True)  # the answer may never come
    assert not target.exists()


async def test_other_calls_needing_approval_are_still_refused_without_a_dialog(rpc: RpcEnv) -> None:
    """``--sandbox off``: ``bash`` needs approval on every call, and RPC does not ask about those."""
    rpc.script([tool_reply("bash", {"command": "echo hi"}), text_reply("done")])
    async with rpc.spawn("--no-session", "--sandbox", "off") as client:
        assert (await client.prompt("go"))["status"] == "completed"
        (result,) = [m for m in await client.get_messages() if m["role"] == "toolResult"]
        frames = client.frames
    assert result["isError"] and "rerun with --yes" in result["content"][0]["text"]
    assert not [f for f in frames if f["type"] == "extension_ui_request" and f.get("method") == "confirm"]


async def test_a_write_to_a_control_file_is_asked_as_a_dialog(rpc: RpcEnv) -> None:
    """``write`` of ``.tether/settings.json``: read-only to confined commands, so the file tool asks
    too, with the same kind of dialog; declined, nothing is written; approved, it is."""
    target = rpc.project / ".tether" / "settings.json"
    for confirmed in (False, True):
        rpc.script(
            [
                tool_reply("write", {"path": ".tether/settings.json", "content": '{"approval": "yes"}'}),
                text_reply("done"),
            ]
        )
        async with dialog_open(rpc) as (client, request, prompt):
            await client.answer_extension_ui(request["id"], confirmed=confirmed)
            assert (await asyncio.wait_for(prompt, 30))["status"] == "completed"
            (result,) = [m for m in await client.get_messages() if m["role"] == "toolResult"]
        assert request["title"] == "Change a file the sandbox keeps read-only?"
        assert (
            ".tether/settings.json" in request["message"]
            and "tether reads for settings" in request["message"]
        )
        assert result["isError"] is not confirmed and target.exists() is confirmed
