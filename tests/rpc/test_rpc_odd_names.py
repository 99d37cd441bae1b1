"""A file name that is not UTF-8 (``b"\\xff.txt"``) in the RPC server's frames.

Such a name reaches Python with a lone surrogate, which no JSON frame can encode: the events of
the tool call naming it never reached the client. The tools write its odd byte ``\\xff``
(``tether.wire.file_names``), the same text in events, in ``get_messages`` and in the store."""

from __future__ import annotations

import asyncio
import os

import pytest
from rpc_support import RpcEnv, next_of, text_reply, tool_reply

pytestmark = pytest.mark.subprocess


async def test_rpc_frames_carry_an_odd_file_name_as_escapes(rpc: RpcEnv) -> None:
    with open(os.path.join(os.fsencode(rpc.project), b"\xff.txt"), "wb") as f:
        f.write(b"odd content\n")
    rpc.script([tool_reply("ls", {}), text_reply("done")])
    async with rpc.spawn() as client:
        events = client.events()
        run = asyncio.ensure_future(client.prompt("look"))
        end = await next_of(events, "tool_execution_end")
        await next_of(events, "agent_end")
        await asyncio.wait_for(run, 10)
        assert end["result"]["content"][0]["text"] == "\\xff.txt"
        messages = await client.get_messages()
        assert [m["content"][0]["text"] for m in messages if m["role"] == "toolResult"] == ["\\xff.txt"]
