"""Models from models.json drive the real providers: a recorded stream served on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reference_paths import FIXTURE_STREAMS
from tether.ai import complete, find_model
from tether.ai.types import Context
from tether.testing.loopback import LoopbackServer, Reply

FIXTURE = FIXTURE_STREAMS / "openai-completions" / "openai-text.json"

CONTEXT: Context = {
    "messages": [{"role": "user", "content": "What is the capital of Mexico?", "timestamp": 1}]
}


def recorded() -> tuple[bytes, str]:
    fixture = json.loads(FIXTURE.read_text())
    expected = json.loads(FIXTURE.with_name(FIXTURE.name.replace(".json", ".expected.json")).read_text())
    return fixture["response"]["body"].encode(), expected["message"]["content"][0]["text"]


async def test_keyless_user_provider(config_dir: Path) -> None:
    body, text = recorded()
    async with LoopbackServer([Reply(body)]) as server:
        (config_dir / "models.json").write_text(
            json.dumps(
                {
                    "providers": {
                        "box": {
                            "baseUrl": f"{server.url}/v1",
                            "api": "openai-completions",
                            "headers": {"X-Box": "1"},
                            "models": [{"id": "gpt-4o", "cost": {"input": 3, "output": 15}}],
                        }
                    }
                }
            )
        )
        message = await complete(find_model("box/gpt-4o"), CONTEXT)
    assert message["stopReason"] == "stop", message.get("errorMessage")
    assert message["content"][0] == {"type": "text", "text": text}
    usage = message["usage"]
    assert usage["cost"]["input"] == pytest.approx(usage["input"] * 3 / 1e6)
    assert usage["cost"]["output"] == pytest.approx(usage["output"] * 15 / 1e6)
    request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert json.loads(request.body)["model"] == "gpt-4o"
    assert request.headers.get("x-box") == "1"
    assert "authorization" not in request.headers


async def test_shipped_provider_moved_to_a_proxy(config_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    body, text = recorded()
    monkeypatch.setenv("GROQ_API_KEY", "gsk-test")
    async with LoopbackServer([Reply(body)]) as server:
        (config_dir / "models.json").write_text(
            json.dumps({"providers": {"groq": {"baseUrl": f"{server.url}/v1"}}})
        )
        model = find_model("groq/llama-3.3-70b-versatile")
        message = await complete(model, CONTEXT)
    assert message["stopReason"] == "stop", message.get("errorMessage")
    assert message["content"][0] == {"type": "text", "text": text}
    request = server.requests[0]
    assert request.headers.get("authorization") == "Bearer gsk-test"
    assert json.loads(request.body)["model"] == "llama-3.3-70b-versatile"
