"""tether's Python ``RpcClient`` against real pi 1.6.0 and 0.73.1 (``pi --mode rpc``), the other
way round from the interop tests: pi 1.6 runs on Node 22 from npm, 0.73.1 on the machine's Node;
the model is a faux OpenAI-compatible server on 127.0.0.1 that pi finds through its own
``models.json``. pi sends neither ``ready`` nor ``prompt_result``: the client connects without
waiting and settles prompts on ``agent_settled`` (1.6) or, where there is none, ``agent_end``
(0.73.1). Before any reply pi answers ``get_last_assistant_text`` with ``data: {}``.

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

from pi_packages import PI_073, PI_16, PiPackage, installed, pi_context
from tether.rpc import RpcClient
from tether.session import SessionManager
from tether.session.pi_files import export_pi_session, import_pi_session

pytestmark = [pytest.mark.node, pytest.mark.subprocess]


@pytest.fixture
def faux_openai() -> Iterator[FauxOpenAI]:
    """Streams "Hello from faux", then refuses the next request with a 400."""
    with serve_faux_openai([text("Hello ", "from ", "faux"), failure(400, "faux refuses")]) as faux:
        yield faux


@pytest.mark.parametrize("pi_version", [PI_16, PI_073], ids=lambda pi: pi.version)
async def test_python_client_drives_pi(
    pi_version: PiPackage, faux_openai: FauxOpenAI, tmp_path: Path
) -> None:
    pi = installed(pi_version)
    legacy = pi is PI_073  # no agent_settled, no get_entries/get_tree
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
    cli = pi.package / "dist" / ("cli.js" if legacy else "bundle/cli.js")
    argv = [pi.node, str(cli), "--mode", "rpc"]
    argv += ["--session-dir", str(sessions_dir), "--provider", "faux", "--model", "faux-1"]

    client = await RpcClient.connect(argv, expect_ready=False, cwd=tmp_path, env=env)
    try:
        assert await client.get_last_assistant_text() is None  # pi: data {}
        events = client.events()
        result = await client.prompt("hi")
        assert result == {"type": "prompt_result", "id": result["id"], "status": "completed"}
        last = "agent_end" if legacy else "agent_settled"
        seen: list[str] = []
        async for frame in events:
            assert isinstance(frame, dict)
            seen.append(frame["type"])
            if frame["type"] == last:
                break
        assert seen[0] == "agent_start"
        assert seen[-1:] == ["agent_end"] if legacy else seen[-2:] == ["agent_end", "agent_settled"]
        assert await client.get_last_assistant_text() == "Hello from faux"
        state = await client.get_state()
        assert (state["model"] or {}).get("id") == "faux-1" and state["isStreaming"] is False
        roles = [m["role"] for m in await client.get_messages()]
        assert roles[-2:] == ["user", "assistant"]

        await client.set_auto_retry(False)
        failed = await client.prompt("please fail")
        assert failed["status"] == "error" and "faux refuses" in failed.get("error", "")

        if not legacy:
            entries = await client.get_entries()
            assert entries["leafId"] == entries["entries"][-1]["id"]
            assert (await client.get_tree())["leafId"] == entries["leafId"]
        state = await client.get_state()
        assert (await client.new_session()) == {"cancelled": False}
        assert await client.get_messages() == []
        assert (await client.switch_session(state["sessionFile"])) == {"cancelled": False}
        assert (await client.get_state())["sessionId"] == state["sessionId"]
        assert len(requests) == 2
    finally:
        await client.close()

    if not legacy:
        (session_file,) = (f for f in sessions_dir.glob("*.jsonl") if "hi" in f.read_text())
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
