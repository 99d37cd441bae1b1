"""Issue 14, class 2: an RPC prompt's ``@path`` attaches only what ``read`` may read."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from rpc_support import RpcEnv, text_reply

pytestmark = pytest.mark.subprocess

SECRET = "secret-value-7c1d"


def test_rpc_prompt_mentions_obey_the_workspace(tmp_path: Path) -> None:
    env = RpcEnv(tmp_path / "home", tmp_path / "project")
    env.home.mkdir()
    env.project.mkdir()
    (tmp_path / "outside.txt").write_text(SECRET)
    env.script([text_reply("ok")])

    async def main() -> list[dict[str, object]]:
        async with env.spawn("--no-session") as client:
            await client.prompt(f"read @{tmp_path / 'outside.txt'}")
            return list(await client.get_messages())

    messages = asyncio.run(main())
    assert SECRET not in json.dumps(messages)
    assert all(m["role"] != "fileMention" for m in messages)
