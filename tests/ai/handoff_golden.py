"""Cross-provider handoff over real recorded answers: what we would send to every other API.

For each recorded stream in ``reference/fixtures/streams`` (40, four APIs), the answer is replayed
through its provider, put in a small transcript (user prompt, the answer, a result for each tool
call, a follow-up), and that transcript is turned into the request body of each target below,
including the same model that wrote it. The bodies are stored under ``golden/`` and reviewed by
hand; ``test_handoff_golden.py`` checks that our code still produces them, plus the handoff rules
on every body.

Regenerate (after a deliberate change, then review the diff)::

    .venv/bin/python tests/ai/handoff_golden.py
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

HERE = Path(__file__).resolve().parent
# Run as a script, only this folder is on sys.path; pytest adds tests/ (``pythonpath``) itself.
sys.path.insert(0, str(HERE.parent))

from streamcheck import fixture_paths, load, run_fixture  # noqa: E402

from reference_paths import FIXTURE_STREAMS  # noqa: E402
from tether.ai.providers import anthropic, gemini, openai_completions, openai_responses  # noqa: E402
from tether.ai.transport import HttpRequest  # noqa: E402
from tether.ai.types import Context, StreamOptions, Tool  # noqa: E402
from tether.wire import AssistantMessage, Message, ModelInfo  # noqa: E402

GOLDEN = HERE / "golden"
APIS = ("openai-completions", "openai-responses", "anthropic-messages", "google-generative-ai")

Builder = Callable[[ModelInfo, Context, StreamOptions, "str | None"], HttpRequest]
BUILDERS: dict[str, Builder] = {
    "openai-completions": openai_completions.build_request,
    "openai-responses": openai_responses.build_request,
    "anthropic-messages": anthropic.build_request,
    "google-generative-ai": gemini.build_request,
}


def target(provider: str, api: str, model_id: str, base_url: str) -> ModelInfo:
    return {
        "id": model_id,
        "name": model_id,
        "api": api,
        "provider": provider,
        "baseUrl": base_url,
        "reasoning": True,
        "input": ["text", "image"],
        "cost": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 200000,
        "maxTokens": 32000,
    }


TARGETS: dict[str, ModelInfo] = {
    "anthropic": target("anthropic", "anthropic-messages", "claude-sonnet-4-5", "https://api.anthropic.com"),
    "openai-responses": target("openai", "openai-responses", "gpt-5", "https://api.openai.com/v1"),
    "openai-completions": target("openai", "openai-completions", "gpt-4.1", "https://api.openai.com/v1"),
    "mistral": target("mistral", "openai-completions", "mistral-large-latest", "https://api.mistral.ai/v1"),
    "gemini": target(
        "google",
        "google-generative-ai",
        "gemini-3-pro-preview",
        "https://generativelanguage.googleapis.com/v1beta",
    ),
}
"""The other side of each handoff. ``same-model`` (the recorded model itself) is added per fixture."""

TOOLS: list[Tool] = [
    {
        "name": "lookup",
        "description": "Look something up.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
            "additionalProperties": False,
        },
    }
]


def source_model(expected_model: dict[str, Any], api: str) -> ModelInfo:
    base = {
        "openai-completions": "https://recorded.invalid/v1",
        "openai-responses": "https://recorded.invalid/v1",
        "anthropic-messages": "https://recorded.invalid",
        "google-generative-ai": "https://recorded.invalid/v1beta",
    }[api]
    return cast(ModelInfo, {**expected_model, "baseUrl": base})


async def recorded_answer(path: Path) -> tuple[AssistantMessage, dict[str, Any]]:
    """(the replayed final message with stable ids, the expected file's model)."""
    fixture, expected = load(path)
    _, final = await run_fixture(fixture, expected["model"])
    message: AssistantMessage = {**final, "timestamp": 2}
    for timing in ("duration", "ttft", "completedAt"):
        message.pop(timing, None)
    wanted = expected["message"]["content"]
    for index, block in enumerate(message["content"]):
        # Gemini calls without an id get a random one; pin it so the golden file is stable.
        if block["type"] == "toolCall" and wanted[index].get("id") == "<generated>":
            block["id"] = f"generated_call_{index}"
    return message, expected["model"]


def transcript(answer: AssistantMessage) -> list[Message]:
    messages: list[Message] = [{"role": "user", "content": "Please answer.", "timestamp": 1}, answer]
    for block in answer["content"]:
        if block["type"] == "toolCall":
            messages.append(
                {
                    "role": "toolResult",
                    "toolCallId": block["id"],
                    "toolName": block["name"],
                    "content": [{"type": "text", "text": f"result of {block['name']}"}],
                    "isError": False,
                    "timestamp": 3,
                }
            )
    messages.append({"role": "user", "content": "Thanks, continue.", "timestamp": 4})
    return messages


def request_for(model: ModelInfo, messages: list[Message]) -> dict[str, Any]:
    context: Context = {"systemPrompt": "You are terse.", "messages": messages, "tools": TOOLS}
    request = BUILDERS[model["api"]](model, context, StreamOptions(), "test-key")
    return {"url": request.url, "body": request.body}


def targets_for(source: ModelInfo) -> dict[str, ModelInfo]:
    return {**TARGETS, "same-model": source}


async def build(path: Path) -> dict[str, Any]:
    answer, expected_model = await recorded_answer(path)
    source = source_model(expected_model, path.parent.name)
    messages = transcript(answer)
    return {
        "fixture": f"{path.parent.name}/{path.stem}",
        "source": {"api": source["api"], "provider": source["provider"], "model": source["id"]},
        "requests": {name: request_for(model, messages) for name, model in targets_for(source).items()},
    }


def golden_path(path: Path) -> Path:
    return GOLDEN / path.parent.name / (path.stem + ".json")


def dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False, sort_keys=False) + "\n"


async def regenerate() -> int:
    count = 0
    for path in fixture_paths(APIS, [FIXTURE_STREAMS]):
        out = golden_path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(dump(await build(path)), encoding="utf-8")
        count += 1
    return count


if __name__ == "__main__":
    print(f"wrote {asyncio.run(regenerate())} golden files under {GOLDEN}")
