"""A lone surrogate in a wire value on its way out (``tether.wire.dumps``).

A file name that is not UTF-8, read through ``os.fsdecode`` by a tool of one's own (an
extension's, an MCP server's), holds one; UTF-8 has no form for it, and ``dumps`` raised, so
``tether -p --mode json`` stopped writing at the first event carrying it. It is written U+FFFD,
as the store writes it."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

import tether
from tether.cli.headless import run_json, run_print
from tether.session.factory import SessionChoice, create_agent_session
from tether.session.options import AgentOptions
from tether.wire import dumpb, dumps


def test_dumps_writes_a_lone_surrogate_as_the_replacement_character() -> None:
    value = {"name\udcff": ["a\udcffb", {"x": "\ud800"}], "n": 1.5}
    assert json.loads(dumps(value)) == {"name\ufffd": ["a\ufffdb", {"x": "\ufffd"}], "n": 1.5}
    assert dumpb(value) == dumps(value).encode()


def test_a_value_json_cannot_hold_is_still_refused() -> None:
    with pytest.raises(ValueError):
        dumps({"a\udcff": object()})


async def test_json_mode_writes_every_event_when_a_tool_returns_a_lone_surrogate(tmp_path: Path) -> None:
    @tether.tool
    async def names() -> str:
        """The names in the program's own folder."""
        return "\udcff.txt"

    script = tmp_path / "script.json"
    call: dict[str, Any] = {"content": [{"type": "toolCall", "id": "c1", "name": "names", "arguments": {}}]}
    script.write_text(json.dumps({"responses": [call, {"content": [{"type": "text", "text": "ok"}]}]}))
    core = create_agent_session(
        AgentOptions(model=f"scripted:{script}", tools=[]),
        cwd=tmp_path,
        session=SessionChoice(persist=False),
        extra_tools=[names],
    )
    out, err = io.StringIO(), io.StringIO()
    try:
        await run_json(core, ["list"], out, err)
    finally:
        await core.close()
    assert err.getvalue() == ""
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    result = next(e for e in events if e["type"] == "tool_execution_end")
    assert result["result"]["content"][0]["text"] == "\ufffd.txt"
    assert "agent_end" in [e["type"] for e in events]


@pytest.mark.parametrize("stream", [False, True])
async def test_print_mode_prints_a_reply_holding_half_an_emoji(tmp_path: Path, stream: bool) -> None:
    """A reply whose stream cut an emoji's UTF-16 pair in two holds its halves as lone
    surrogates: ``tether -p`` wrote them to a UTF-8 stdout and died with a UnicodeEncodeError
    traceback instead of printing the answer; then it printed each half as U+FFFD. The halves
    meet again: the emoji is printed (streamed, its first half waits for the next delta)."""
    assert await _printed(tmp_path, ["smile \ud83d", "\ude00 ok"], stream) == (0, "smile \U0001f600 ok\n", "")


@pytest.mark.parametrize("stream", [False, True])
async def test_print_mode_prints_a_half_left_alone_as_a_replacement_character(
    tmp_path: Path, stream: bool
) -> None:
    """Half an emoji whose other half never came (the reply ends on it, or the next delta starts
    otherwise) is still U+FFFD: the half a streamed delta held back is written at the end."""
    assert await _printed(tmp_path, ["a\ud83d", "b\ud83d"], stream) == (0, "a\ufffdb\ufffd\n", "")


async def _printed(tmp_path: Path, chunks: list[str], stream: bool) -> tuple[int, str, str]:
    """``tether -p``'s exit code, stdout (UTF-8) and stderr for a reply streamed as ``chunks``."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [{"content": [{"type": "text", "chunks": chunks}]}]}))
    core = create_agent_session(
        AgentOptions(model=f"scripted:{script}", tools=[]), cwd=tmp_path, session=SessionChoice(persist=False)
    )
    out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.StringIO()
    try:
        code = await run_print(core, ["hi"], out, err, stream=stream)
    finally:
        await core.close()
    out.seek(0)
    return code, out.read(), err.getvalue()
