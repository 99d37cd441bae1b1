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
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pi_packages import PI_16, installed, pi_context
from tether.rpc import RpcClient
from tether.session import SessionManager
from tether.session.pi_files import export_pi_session, import_pi_session

pytestmark = [pytest.mark.node, pytest.mark.subprocess]


class _FauxOpenAI(BaseHTTPRequestHandler):
    """``/v1/chat/completions`` streaming "Hello from faux"; a prompt containing "fail" gets a 400."""

    requests: list[dict[str, Any]]

    def log_message(self, *_: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.requests.append(body)
        if "fail" in json.dumps(body["messages"][-1]):
            payload = json.dumps(
                {"error": {"message": "faux refuses", "type": "invalid_request_error"}}
            ).encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for piece in ("Hello ", "from ", "faux"):
            self._chunk({"delta": {"content": piece}})
        self._chunk(
            {"delta": {}, "finish_reason": "stop"}, usage={"prompt_tokens": 5, "completion_tokens": 3}
        )
        self.wfile.write(b"data: [DONE]\n\n")

    def _chunk(self, choice: dict[str, Any], **extra: Any) -> None:
        chunk = {
            "id": "c1",
            "object": "chat.completion.chunk",
            "model": "faux-1",
            "choices": [{"index": 0, **choice}],
        }
        self.wfile.write(b"data: " + json.dumps({**chunk, **extra}).encode() + b"\n\n")
        self.wfile.flush()


@pytest.fixture
def faux_openai() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    requests: list[dict[str, Any]] = []
    handler = type("Handler", (_FauxOpenAI,), {"requests": requests})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", requests
    finally:
        server.shutdown()
        server.server_close()


async def test_python_client_drives_pi16(
    faux_openai: tuple[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    pi = installed(PI_16)
    base_url, requests = faux_openai
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
