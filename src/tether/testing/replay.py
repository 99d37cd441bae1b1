"""Replay a recorded provider stream through tether's provider for it.

    python -m tether.testing.replay FIXTURE.json [--model MODEL.json]

serves the fixture's recorded response (format: ``reference/fixtures/README.md``) from a real HTTP
server on 127.0.0.1, streams the provider for the fixture's ``api`` against it, and prints
``{"events": [...], "message": {...}}`` normalized exactly like the reference's
``*.expected.json`` files (``signed`` booleans instead of signatures, no partials or timestamps).
Without ``--model``, the model is derived from the fixture with zero cost. Use it to debug a
provider from a captured stream.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast
from urllib.parse import unquote, urlsplit

from tether.ai.api import stream
from tether.ai.types import Context, StreamOptions
from tether.testing.loopback import LoopbackServer, Reply
from tether.wire import AssistantMessage, AssistantMessageEvent, ModelInfo

PROVIDER_BY_HOST: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"(^|\.)api\.openai\.com$"), "openai"),
    (re.compile(r"(^|\.)openrouter\.ai$"), "openrouter"),
    (re.compile(r"(^|\.)api\.groq\.com$"), "groq"),
    (re.compile(r"(^|\.)api\.z\.ai$"), "zai"),
    (re.compile(r"(^|\.)api\.deepseek\.com$"), "deepseek"),
    (re.compile(r"^bedrock-mantle\..*\.api\.aws$"), "bedrock-mantle"),
    (re.compile(r"(^|\.)api\.anthropic\.com$"), "anthropic"),
    (re.compile(r"^generativelanguage\.googleapis\.com$"), "google"),
    (re.compile(r"(^|\.)aiplatform\.googleapis\.com$"), "google-vertex"),
]
"""Vendor by recorded host, as the reference's oracle names them."""

ENDPOINTS: dict[str, re.Pattern[str]] = {
    "openai-completions": re.compile(r"/chat/completions$"),
    "openai-responses": re.compile(r"/responses$"),
    "anthropic-messages": re.compile(r"/v1/messages$"),
    "google-generative-ai": re.compile(r"/models/[^/]+:streamGenerateContent$"),
}
"""What each provider appends to ``baseUrl``; the rest of the recorded path is the base."""


def derived_model(fixture: dict[str, Any]) -> ModelInfo:
    """A model for ``fixture`` when none is given: recorded id and vendor, zero cost."""
    url = urlsplit(str(fixture["url"]))
    host = url.hostname or ""
    provider = next((name for pattern, name in PROVIDER_BY_HOST if pattern.search(host)), None)
    if provider is None:
        labels = host.split(".")
        provider = labels[-2] if len(labels) >= 2 else host
    if fixture["api"] == "google-generative-ai":
        found = re.search(r"/models/([^/:]+):", url.path)
        model_id = unquote(found.group(1)) if found else "unknown"
    else:
        model_id = str(fixture["request"].get("model", "unknown"))
    return {
        "id": model_id,
        "name": model_id,
        "api": fixture["api"],
        "provider": provider,
        "baseUrl": "",
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 200000,
        "maxTokens": 16384,
    }


def base_path(fixture: dict[str, Any]) -> str:
    path = urlsplit(str(fixture["url"])).path
    endpoint = ENDPOINTS.get(fixture["api"])
    return endpoint.sub("", path) if endpoint else path


def fixture_reply(fixture: dict[str, Any], chunks: Sequence[int] | None = None) -> Reply:
    response = fixture["response"]
    return Reply(
        body=response["body"].encode("utf-8"),
        status=int(response.get("status", 200)),
        headers={"content-type": response.get("contentType", "text/event-stream")},
        chunks=chunks,
    )


REPLAY_CONTEXT: Context = {
    "systemPrompt": "You are a helpful assistant.",
    "messages": [{"role": "user", "content": "Replay the recorded answer.", "timestamp": 0}],
}


async def replay(
    fixture: dict[str, Any], model: ModelInfo | None = None, chunks: Sequence[int] | None = None
) -> dict[str, Any]:
    """Serve ``fixture`` on loopback, stream it, return ``{"events", "message"}`` normalized."""
    base = dict(model) if model is not None else dict(derived_model(fixture))
    async with LoopbackServer([fixture_reply(fixture, chunks)]) as server:
        base["baseUrl"] = server.url + base_path(fixture)
        events_stream = stream(
            cast(ModelInfo, base),
            REPLAY_CONTEXT,
            StreamOptions(api_key="test-key", max_retries=0, timeout=30),
        )
        events = [normalize_event(event) async for event in events_stream]
        message = await events_stream.result()
    return {"events": events, "message": normalize_message(message)}


def normalize_event(event: AssistantMessageEvent) -> dict[str, Any]:
    kind = event["type"]
    if kind == "start":
        return {"type": kind}
    if kind in ("done", "error"):
        return {"type": kind, "reason": cast("dict[str, Any]", event)["reason"]}
    raw = cast("dict[str, Any]", event)
    out: dict[str, Any] = {"type": kind, "contentIndex": raw["contentIndex"]}
    if kind.endswith("_delta"):
        out["delta"] = raw["delta"]
    elif kind == "toolcall_end":
        call = raw["toolCall"]
        out["toolCall"] = {"id": call["id"], "name": call["name"], "arguments": call["arguments"]}
    return out


def normalize_block(block: dict[str, Any]) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block["text"], "signed": bool(block.get("textSignature"))}
    if kind == "thinking":
        out: dict[str, Any] = {
            "type": "thinking",
            "thinking": block["thinking"],
            "signed": bool(block.get("thinkingSignature")),
        }
        if block.get("redacted"):
            out["redacted"] = True
        return out
    if kind == "toolCall":
        return {
            "type": "toolCall",
            "id": block["id"],
            "name": block["name"],
            "arguments": block["arguments"],
            "signed": bool(block.get("thoughtSignature")),
        }
    return {"type": kind, "unexpected": True}


def normalize_message(message: AssistantMessage) -> dict[str, Any]:
    raw = cast("dict[str, Any]", message)
    usage = raw["usage"]
    out: dict[str, Any] = {
        "role": raw["role"],
        "api": raw["api"],
        "provider": raw["provider"],
        "model": raw["model"],
        "content": [normalize_block(block) for block in raw["content"]],
        "usage": {
            "input": usage["input"],
            "output": usage["output"],
            "cacheRead": usage["cacheRead"],
            "cacheWrite": usage["cacheWrite"],
            "totalTokens": usage["totalTokens"],
            "cost": dict(usage["cost"]),
        },
        "stopReason": raw["stopReason"],
    }
    for key in ("errorMessage", "responseId", "responseModel"):
        if key in raw:
            out[key] = raw[key]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tether.testing.replay",
        description="Replay a recorded provider stream through tether.",
    )
    parser.add_argument("fixture", type=Path, help="a recorded stream (reference/fixtures format)")
    parser.add_argument("--model", type=Path, help="a ModelInfo-shaped JSON object (baseUrl is replaced)")
    args = parser.parse_args(argv)
    try:
        fixture = json.loads(args.fixture.read_text(encoding="utf-8"))
        model = cast(ModelInfo, json.loads(args.model.read_text(encoding="utf-8"))) if args.model else None
    except (OSError, ValueError) as exc:
        print(f"replay: cannot read input: {exc}", file=sys.stderr)
        return 2
    if not isinstance(fixture, dict) or not {"api", "url", "response"} <= set(
        cast("dict[str, Any]", fixture)
    ):
        print(f"replay: {args.fixture} is not a fixture (needs api, url, response)", file=sys.stderr)
        return 2
    result = asyncio.run(replay(cast("dict[str, Any]", fixture), model))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
