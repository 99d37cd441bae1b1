"""``tether --mode rpc --session ID --follow``: a second process watches a session another one runs."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest
from rpc_support import RpcEnv, text_reply, user_texts

from tether.rpc import RpcError

pytestmark = pytest.mark.subprocess


async def test_a_follower_sees_each_message_the_writer_records_and_cannot_prompt(rpc: RpcEnv) -> None:
    rpc.script([text_reply("first answer"), text_reply("second answer")])
    async with rpc.spawn() as writer:
        await writer.prompt("before the follower")
        session_id = (await writer.get_state())["sessionId"]
        async with rpc.spawn("--session", session_id, "--follow") as follower:
            assert user_texts(await follower.get_messages()) == ["before the follower"]
            seen: list[dict[str, Any]] = []

            async def watch() -> None:
                frame: Mapping[str, Any]
                async for frame in follower.events():
                    if isinstance(frame, dict) and frame.get("type") == "message_end":
                        seen.append(frame["message"])
                        if frame["message"]["role"] == "assistant":
                            return

            watching = asyncio.ensure_future(watch())
            await asyncio.sleep(0.2)  # the follower's watch is set up at start; give it a moment
            await writer.prompt("while followed")
            await asyncio.wait_for(watching, 20)
            assert [m["role"] for m in seen] == ["user", "assistant"]
            assert seen[0]["content"] == "while followed"
            assert seen[1]["content"] == [{"type": "text", "text": "second answer"}]
            messages = await follower.get_messages()
            assert user_texts(messages) == ["before the follower", "while followed"]
            with pytest.raises(RpcError, match="read-only"):
                await follower.prompt("may I?")
            with pytest.raises(RpcError, match="read-only"):
                await follower.steer("or this?")
        state = await writer.get_state()  # the writer kept its lock and its session throughout
        assert state["sessionId"] == session_id and state["messageCount"] == 4


def test_follow_needs_rpc_and_a_session_id(rpc: RpcEnv) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "tether.cli", "-p", "hi", "--follow"],
        cwd=rpc.project,
        env=rpc.env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "--mode rpc --session ID --follow" in done.stderr
    assert "Traceback" not in done.stderr
