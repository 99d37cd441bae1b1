"""Issue 14, class 5: a model-chosen pattern that would backtrack for hours neither freezes the
server nor outlives an abort. A real server runs a scripted model's ``grep``/``find`` call while
the client asks for the state and then aborts."""

from __future__ import annotations

import asyncio

import pytest
from rpc_support import RpcEnv, next_of, text_reply, tool_reply

pytestmark = pytest.mark.subprocess

COSTLY = {
    "grep": {"pattern": "(a+)+$", "path": "long.txt"},
    "find": {"pattern": "**/" * 12 + "*z*z*z*z*z*z*z*z*z*z*.x"},
}


@pytest.mark.parametrize("tool", sorted(COSTLY))
async def test_costly_pattern_keeps_the_server_responsive_and_abort_answers(rpc: RpcEnv, tool: str) -> None:
    (rpc.project / "long.txt").write_text("a" * 50_000 + "!\n")
    deep = rpc.project.joinpath(*["d"] * 12)
    deep.mkdir(parents=True)
    (deep / ("za" * 40 + ".y")).write_text("x")
    rpc.script([tool_reply(tool, COSTLY[tool]), text_reply("done")])
    async with rpc.spawn("--no-session") as client:
        events = client.events()
        run = asyncio.ensure_future(client.prompt("search"))
        await next_of(events, "tool_execution_start")
        await asyncio.sleep(0.5)  # the search is under way
        state = await asyncio.wait_for(client.get_state(), 5)
        assert state["isStreaming"] is True
        await client.abort()
        end = await next_of(events, "tool_execution_end", timeout=5)
        await asyncio.wait_for(run, 10)
        assert end["isError"] is True and "aborted" in end["result"]["content"][0]["text"]
