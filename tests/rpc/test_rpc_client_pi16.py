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
        assert result == {"type": "prompt_result", "id": result.get("id"), "status": "completed"}
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

        await _every_other_method(client, legacy, tmp_path)

        await client.set_auto_retry(False)
        failed = await client.prompt("please fail")
        assert failed["status"] == "error" and "faux refuses" in failed.get("error", "")

        if not legacy:
            entries = await client.get_entries()
            assert entries["leafId"] == entries["entries"][-1]["id"]
            assert (await client.get_tree())["leafId"] == entries["leafId"]
        state = await client.get_state()
        assert "sessionFile" in state  # a stored session's
        assert (await client.new_session()) == {"cancelled": False}
        assert await client.get_messages() == []
        assert (await client.switch_session(state["sessionFile"])) == {"cancelled": False}
        assert (await client.get_state())["sessionId"] == state["sessionId"]
        (first, *_) = await client.get_fork_messages()
        assert first["text"] == "hi" and isinstance(first["entryId"], str)
        assert (await client.clone()) == {"cancelled": False}
        assert (await client.get_state())["sessionId"] != state["sessionId"]
        forked = await client.fork(first["entryId"])
        assert forked["cancelled"] is False and forked.get("text") == "hi"
        assert len(requests) == 2
    finally:
        await client.close()

    if not legacy:
        _assert_round_trip(Path(state["sessionFile"]), tmp_path)


async def _every_other_method(client: RpcClient, legacy: bool, tmp_path: Path) -> None:
    """The client's remaining methods that need no model call, each answered as pi answers them
    (``data: null`` for nothing to cycle to, no ``data`` for a setter)."""
    models = await client.get_available_models()
    assert [(m["provider"], m["id"]) for m in models] == [("faux", "faux-1")]
    assert (await client.set_model("faux", "faux-1"))["id"] == "faux-1"
    assert await client.cycle_model() is None  # one model: nothing to cycle to
    await client.set_thinking_level("off")
    assert await client.cycle_thinking_level() is None  # faux-1 does not reason
    if not legacy:
        assert await client.get_available_thinking_levels() == ["off"]
        assert await client.clear_queue() == {"steering": [], "followUp": []}
    await client.set_steering_mode("all")
    await client.set_follow_up_mode("one-at-a-time")
    state = await client.get_state()
    assert (state["steeringMode"], state["followUpMode"]) == ("all", "one-at-a-time")
    await client.set_auto_compaction(False)
    assert (await client.get_state())["autoCompactionEnabled"] is False
    await client.abort_retry()
    await client.abort()  # nothing runs: answered at once
    ran = await client.bash("echo from-bash")
    assert (ran["output"], ran.get("exitCode")) == ("from-bash\n", 0)
    await client.abort_bash()
    await client.set_session_name("from python")
    assert (await client.get_state()).get("sessionName") == "from python"
    stats = await client.get_session_stats()
    assert stats["sessionId"] == state["sessionId"] and stats["userMessages"] == 1
    page = await client.export_html(str(tmp_path / "page.html"))
    assert page == str(tmp_path / "page.html") and Path(page).read_text().startswith("<!DOCTYPE html>")
    assert isinstance(await client.get_commands(), list)


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
