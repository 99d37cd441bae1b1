"""A working directory whose name is not UTF-8 (POSIX names are bytes: ``os.mkdir(b"x\\xff")``).

Python hands such a name over with lone surrogates, which the session store cannot encode (the
first stored session there raised ``UnicodeEncodeError``) and which a request's builder strips
(the model was told of a directory that does not exist). The store and the system prompt take
it as text with the odd bytes written ``\\xff``, the same each time, so the directory's sessions
are found again."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

import tether
from tether.cli.headless import run_json
from tether.session.factory import AgentOptions, SessionChoice, create_agent_session


async def test_a_stored_session_in_a_directory_whose_name_is_not_utf8(
    tmp_path: Path, tether_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    odd = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"x\xff"))
    os.mkdir(odd)
    monkeypatch.chdir(odd)
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps({"responses": [{"content": [{"type": "text", "text": t}]} for t in ("one", "two")]})
    )
    options = AgentOptions(model=f"scripted:{script}", tools=[])
    first = create_agent_session(options)  # stored: the default
    try:
        await first.prompt("hello")
        seen = first.agent.stream_fn.requests[0].context["systemPrompt"]  # type: ignore[union-attr]
        assert f"Working directory: {tmp_path}/x\\xff" in seen.splitlines()
        stored = first.session_id
    finally:
        await first.close()
    again = create_agent_session(options, session=SessionChoice(continue_latest=True))
    try:
        assert again.session_id == stored
        assert [tether.message_text(m) for m in again.messages] == ["hello", "one"]
        out, err = io.StringIO(), io.StringIO()
        await run_json(again, ["and again"], out, err)  # ``tether --mode json``: its header names the cwd
        assert json.loads(out.getvalue().splitlines()[0])["cwd"] == f"{tmp_path}/x\\xff"
    finally:
        await again.close()
