"""Talk to an OpenAI-compatible server you run: Ollama, llama.cpp, vLLM, LM Studio, a proxy.

    python examples/local_server.py http://127.0.0.1:8080/v1 qwen3-8b "Why is the sky blue?"

tether already knows Ollama, llama.cpp, vLLM and LM Studio at their default ports
(`ollama/qwen3:8b` just works); this registers a server anywhere, for this program only.
For every program, add it to models.json instead (docs/models.md).
"""

import asyncio
import sys

import tether
from tether.ai.models import ProviderInfo, register_provider_info


async def main(base_url: str, model_id: str, question: str) -> str | None:
    # No api_key_env: the server takes no key, and it accepts any model id.
    register_provider_info(ProviderInfo("my-server", "openai-completions", base_url, None, local=True))
    core = tether.create_agent_session(
        tether.AgentOptions(model=f"my-server/{model_id}", tools=[]),
        session=tether.SessionChoice(persist=False),
    )
    try:
        async for event in core.prompt(question):
            if event["type"] == "message_update":
                delta = event["assistantMessageEvent"]
                if delta["type"] == "text_delta":
                    print(delta["delta"], end="", flush=True)
            elif event["type"] == "message_end" and event["message"]["role"] == "assistant":
                print(f"\n[{event['message']['stopReason']}]")
        answer = core.last_assistant()
        if answer is not None and answer["stopReason"] in ("error", "aborted"):
            return f"error: {answer.get('errorMessage')}"  # a failed reply: exit 1 saying why
    finally:
        await core.close()


if __name__ == "__main__":
    url, model, *words = sys.argv[1:] or ["http://127.0.0.1:8080/v1", "default"]
    try:
        sys.exit(asyncio.run(main(url, model, " ".join(words) or "Say hello.")))
    except tether.TetherError as exc:  # no usable model, a bad setting: the message says what to do
        sys.exit(f"error: {exc}")
