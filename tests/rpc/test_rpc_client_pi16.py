"""tether's Python ``RpcClient`` against real pi 1.6.0 (``pi --mode rpc``), the other way round
from the interop tests: pi runs on Node 22 from npm, its model is a faux OpenAI-compatible server
on 127.0.0.1 that pi finds through its own ``models.json``. pi sends neither ``ready`` nor
``prompt_result``: the client connects without waiting and settles prompts on ``agent_settled``.

The session file pi writes on the way is then imported into tether and exported back, and pi's
``buildSessionContext()`` of the export must equal that of pi's own file (system messages
included, which tether keeps aside).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pi16_parity import FauxOpenAI, failure, faux_openai as serve_faux_openai, text

from pi_packages import PI_16, installed, pi_context
from tether.rpc import RpcClient
from tether.session import SessionManager
from tether.session.pi_files import export_pi_session, import_pi_session

pytestmark = [pytest.mark.node, pytest.mark.subprocess]


@pytest.fixture
def faux_openai() -> Iterator[FauxOpenAI]:
    """Streams "Hello from faux", then refuses the next request with a 400."""
    with serve_faux_openai([text("Hello ", "from ", "faux"), failure(400, "faux refuses")]) as faux:
        yield faux


async def test_python_client_drives_pi16(faux_openai: FauxOpenAI, tmp_path: Path) -> None:
    pi = installed(PI_16)
    base_url, requests = faux_openai.base_url, faux_openai.requests
    agent_dir, sessions_dir, home = tmp_path / "agent", tmp_path / "sessions", tmp_path / "home"
    for folder in (agent_dir, sessions_dir, home):
        folder.mkdir()
    models = {
        "providers": {
            "faux": {
                "baseUrl": base_url,
                "api": "openai-completions",
                "apiKey": "faux",
                "models": [{"id": "faux-1"}],
            }
        }
    }
    (agent_dir / "models.json").write_text(json.dumps(models))
    env = {
        "PATH": str(Path(pi.node).parent),
        "HOME": str(home),
        "PI_CODING_AGENT_DIR": str(agent_dir),
        "PI_OFFLINE": "1",
    }
    argv = [pi.node, str(pi.package / "dist" / "bundle" / "cli.js"), "--mode", "rpc"]
    argv += ["--session-dir", str(sessions_dir), "--provider", "faux", "--model", "faux-1"]

    client = await RpcClient.connect(argv, expect_ready=False, cwd=tmp_path, env=env)
    try:
        events = client.events()
        result = await client.prompt("hi")
        assert result == {"type": "prompt_result", "id": result["id"], "status": "completed"}
        seen: list[str] = []
        async for frame in events:
            assert isinstance(frame, dict)
            seen.append(frame["type"])
            if frame["type"] == "agent_settled":
                break
        assert seen[0] == "agent_start" and seen[-2:] == ["agent_end", "agent_settled"]
        assert await client.get_last_assistant_text() == "Hello from faux"
        state = await client.get_state()
        assert (state["model"] or {}).get("id") == "faux-1" and state["isStreaming"] is False
        roles = [m["role"] for m in await client.get_messages()]
        assert roles[-2:] == ["user", "assistant"]

        await client.set_auto_retry(False)
        failed = await client.prompt("please fail")
        assert failed["status"] == "error" and "faux refuses" in failed.get("error", "")

        entries = await client.get_entries()
        assert entries["leafId"] == entries["entries"][-1]["id"]
        assert (await client.get_tree())["leafId"] == entries["leafId"]
        assert len(requests) == 2
    finally:
        await client.close()

    (session_file,) = sessions_dir.glob("*.jsonl")
    _assert_round_trip(session_file, tmp_path)


def _assert_round_trip(session_file: Path, tmp_path: Path) -> None:
    with SessionManager.at(tmp_path / "tether.db") as sessions:
        record = import_pi_session(sessions, session_file)
        exported = export_pi_session(sessions, record.id, tmp_path / "exported.jsonl")
        session = sessions.open(record.id, readonly=True)
        mine = [m["role"] for m in session.messages]
        session.close()
    before, after = pi_context(session_file), pi_context(exported)
    assert after["messages"] == before["messages"]
    assert before["messages"][0]["role"] == "system"
    assert mine == [m["role"] for m in before["messages"] if m["role"] != "system"]
