"""Record what llama-cpp-python's server streams back, for ``tests/ai/local/recorded/``.

Starts ``python -m llama_cpp.server`` on SmolLM2-135M (``tether.testing.llama_server``), sends it
the exact requests our ``openai-completions`` provider builds, and saves each raw response body
(server-sent events, byte for byte) as ``<name>.sse``. The replay tests feed these bodies to the
provider over a loopback server, so the server's quirks stay tested where it is not installed.

Usage (from the repository root, with ``make test``'s environment)::

    .venv/bin/python scripts/record_llama_server.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import httpx2

from tether.ai.providers.local import default_model_path
from tether.ai.providers.openai_completions import build_request
from tether.ai.types import Context, StreamOptions, Tool
from tether.testing.llama_server import INSTALL_HINT, llama_server, server_available, server_model

OUT = Path(__file__).resolve().parent.parent / "tests" / "ai" / "local" / "recorded"
WEATHER: Tool = {
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def ask(text: str, *tools: Tool) -> Context:
    context: Context = {
        "systemPrompt": "You are a helpful assistant.",
        "messages": [{"role": "user", "content": text, "timestamp": 0}],
    }
    if tools:
        context["tools"] = list(tools)
    return context


RECORDINGS: dict[str, tuple[Context, StreamOptions]] = {
    "text": (ask("What is the capital of France?"), StreamOptions(max_tokens=12, temperature=0)),
    "tool_call": (
        ask("What is the weather in Paris?", WEATHER),
        StreamOptions(
            max_tokens=40,
            temperature=0,
            tool_choice={"type": "function", "function": {"name": "get_weather"}},
        ),
    ),
}


def main() -> int:
    gguf = default_model_path()
    if not server_available() or gguf is None:
        print(f"This script {INSTALL_HINT}", file=sys.stderr)
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, llama_server(gguf, Path(tmp) / "server.log") as server:
        model = server_model(server)
        for name, (context, options) in RECORDINGS.items():
            request = build_request(model, context, options, None)
            with httpx2.stream(
                "POST", request.url, json=request.body, headers=request.headers, timeout=120, trust_env=False
            ) as response:
                response.raise_for_status()
                body = response.read()
            (OUT / f"{name}.sse").write_bytes(body)
            print(f"{OUT / f'{name}.sse'}: {len(body)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
